"""What the Qwen judge is worth: F with and without `validator_llm` on a fixed sample of the real-code
dev sets and the reference chunk, with the model's stored calibration.

For every accept the judge turned into a reject, it says whether that was right by the gold:
- api_mapping: realcode_godot3, right when the pair is not in the port's gold (converter tables only);
  realcode_godot4, always right (valid Godot 4 code);
- docs_chunks: right when the page is demoted, or a class page outside the chunk's API gold; wrong
  when the page is relevant or in the API gold; otherwise unknown;
- label_prototypes (migration findings): on realcode_godot4 always right.
It also counts the cited evidence that was not literally in both texts, and the seconds per chunk,
over all chunks and over those where the judge was asked something.

    python bench/judge_worth.py [--llm-bundled 1.5b | --llm-url URL] [--every 15] [--thresholds JSON]

With the stored calibration the judge asks only where the calibration says it separates; with
`--thresholds` it decides at those thresholds wherever F would ask an uncalibrated judge (the top
`validate_top` docs accepts and the mappings accepted only on ambiguous occurrences).
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from tqdm import tqdm

from godot_rag.eval.metrics import page_of
from godot_rag.eval.queries import read_queries
from godot_rag.eval.runner import mapping_triple
from godot_rag.models.llm import make_llm
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import ModelFiles, Retriever
from godot_rag.store.db import Database

EVAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "eval"
ap = argparse.ArgumentParser()
ap.add_argument("--llm-bundled", default=None)
ap.add_argument("--llm-url", default=None)
ap.add_argument("--llm-model", default=None)
ap.add_argument("--every", type=int, default=15, help="every N-th chunk of each real-code set")
ap.add_argument("--out", type=Path, default=None, help="per-chunk rows as JSON")
ap.add_argument("--thresholds", type=json.loads, default=None,
                help='force the judge to decide at these P(yes) thresholds, e.g. \'{"docs_chunks": 0.6, "api_mapping": 0.6}\'')
ap.add_argument("--uncalibrated", action="store_true",
                help="ignore the stored calibrations: the judge asks where an uncalibrated one does "
                     "(top docs, ambiguous mappings)")
args = ap.parse_args()

llm = make_llm(bundled=args.llm_bundled or (None if args.llm_url else "1.5b"), url=args.llm_url, model=args.llm_model)
no_cal = None
if args.uncalibrated:
    import tempfile

    no_cal_dir = tempfile.TemporaryDirectory()  # removed at exit
    no_cal = Path(no_cal_dir.name) / "none.json"
    no_cal.write_text('{"calibrations": []}')
r = Retriever(Database(), llm=llm, files=ModelFiles(judge_calibration=no_cal))
plain, judged_cfg = RetrieveConfig(), RetrieveConfig(validator_llm=True, judge_thresholds=args.thresholds)


def truth(q, c) -> bool | None:
    """True when accepting `c` is right by the gold, False when wrong, None when the gold cannot say."""
    if c.table == "api_mapping":
        if q.expect_no_mappings:
            return False
        m = mapping_triple(c.id)
        return None if m is None else m in set(q.relevant_mappings)
    if c.table == "label_prototypes":
        return False if q.expect_no_mappings and c.payload.get("task_type") == "migration" else None
    page = page_of(c.id)
    if page in q.relevant_pages or page in q.relevant_api_pages:
        return True
    if page in q.demoted_pages or (q.relevant_api_pages and page.startswith("classes/")):
        return False
    return None


sample = []
for name in ("reference", "realcode_godot3", "realcode_godot4"):
    qs = read_queries(EVAL / (f"{name}.jsonl" if name == "reference" else f"{name}.dev.jsonl"))
    sample += [(name, q) for q in (qs if name == "reference" else qs[:: args.every])]

rows = []
if hasattr(r.llm, "load"):
    r.llm.load()  # the model loads outside the timings
for name, q in tqdm(sample, desc="F with and without the judge", file=sys.stderr):
    before = r.retrieve(q.chunk_text, "F", plain)
    t = time.perf_counter()
    after = r.retrieve(q.chunk_text, "F", judged_cfg)
    secs = time.perf_counter() - t
    acc_b = {(c.table, c.id): c for c in before.results}
    acc_a = {(c.table, c.id): c for c in after.results}
    asked = [c for c in after.results + after.rejected
             if c.info("judge") is not None and c.info("judge").question != "follows_mapping"]
    row = {"set": name, "query": q.id, "seconds": round(secs, 2), "asked": len(asked),
           "hallucinated": sum(len(c.info("judge").cited_hallucinated) for c in asked),
           "turned_to_reject": [], "false_accepts_before": 0, "false_accepts_after": 0,
           "true_accepts_before": 0, "true_accepts_after": 0}
    for acc, tag in ((acc_b, "before"), (acc_a, "after")):
        for c in acc.values():
            t_ = truth(q, c)
            if t_ is True:
                row[f"true_accepts_{tag}"] += 1
            elif t_ is False:
                row[f"false_accepts_{tag}"] += 1
    for c in asked:  # the judge's own rejects (other accepts may move below k as the order changes)
        j = c.info("judge")
        if j.verdict_before == "accept" and c.verdict == "reject":
            t_ = truth(q, c)
            row["turned_to_reject"].append({"table": c.table, "id": c.id, "right": None if t_ is None else not t_})
    rows.append(row)

summary = {"model": llm.identity(), "chunks": len(rows), "thresholds": args.thresholds or "the stored calibration",
           "calibration": "none (uncalibrated)" if args.uncalibrated else "stored"}
for name in ("reference", "realcode_godot3", "realcode_godot4", "all"):
    rs = [x for x in rows if name in ("all", x["set"])]
    turned = [t for x in rs for t in x["turned_to_reject"]]
    asked = [x["seconds"] for x in rs if x["asked"]]
    summary[name] = {
        "chunks": len(rs), "chunks_asked": len(asked), "judged": sum(x["asked"] for x in rs),
        "false_accepts_before": sum(x["false_accepts_before"] for x in rs),
        "false_accepts_after": sum(x["false_accepts_after"] for x in rs),
        "true_accepts_before": sum(x["true_accepts_before"] for x in rs),
        "true_accepts_after": sum(x["true_accepts_after"] for x in rs),
        "turned_to_reject": len(turned), "turned_right": sum(t["right"] is True for t in turned),
        "turned_wrong": sum(t["right"] is False for t in turned), "turned_unknown": sum(t["right"] is None for t in turned),
        "hallucinated_citations": sum(x["hallucinated"] for x in rs),
        "s_per_chunk_p50": round(statistics.median([x["seconds"] for x in rs]), 2) if rs else None,
        "s_per_asked_chunk_p50": round(statistics.median(asked), 2) if asked else None}
if args.out:
    args.out.write_text(json.dumps(rows, indent=1))
print(json.dumps(summary, indent=2))
