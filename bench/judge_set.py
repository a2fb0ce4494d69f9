"""Builds the judge set: (chunk, record) pairs with a right/wrong label, for calibrating the Qwen judge.

How it is built (deterministic: fixed order, fixed seed). F runs without the LLM over the dev sets;
what it keeps is what the judge would be asked about:
- api_mapping (one pair per deterministic accept, about the occurrence the judge would be asked
  about; `ambiguous` marks accepts that rest only on ambiguous occurrences):
  - realcode_godot3: positive when the (table, from, to) pair is in the port's gold, negative when not
    (converter tables only: the gold cannot judge the migration page's prose mappings);
  - realcode_godot4: every one is negative (valid Godot 4 code);
  - migration (docs): positive when in the gold, negative when not.
- docs_chunks (deterministic accepts only: the judge never sees the rest):
  - known_item, reference: positive when the page is relevant, negative when demoted or in no gold;
  - realcode_godot4 chunks with API gold: positive when the page is in `relevant_api_pages`,
    negative when the page is a class page outside it (guide pages have no gold here: left out).
  At most `--per-chunk` pairs per chunk and per label, sampled with a fixed seed.

    python bench/judge_set.py [--out bench/judge_set.jsonl] [--docs-chunks 150]
"""
import argparse
import json
import random
import sys
from pathlib import Path

from tqdm import tqdm

from godot_rag.eval.metrics import page_of
from godot_rag.eval.queries import read_queries
from godot_rag.eval.runner import mapping_triple
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.evidence.judge import asked_occurrence, asks_mappings
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

EVAL = Path(__file__).resolve().parents[1] / ".." / "shared" / "eval"
ap = argparse.ArgumentParser()
ap.add_argument("--out", type=Path, default=Path(__file__).with_name("judge_set.jsonl"))
ap.add_argument("--docs-chunks", type=int, default=100, help="chunks sampled per set for docs pairs")
ap.add_argument("--per-chunk", type=int, default=1, help="docs pairs per chunk and label")
ap.add_argument("--seed", type=int, default=13)
args = ap.parse_args()

rng = random.Random(args.seed)
r = Retriever(Database())
cfg = RetrieveConfig()
pairs = []


def base(name, q, c, label, why):
    det = c.info("validate")
    return {"set": name, "query": q.id, "chunk_text": q.chunk_text, "table": c.table, "record": c.id, "label": label,
            "label_from": why, "det_verdict": c.verdict, "det_confidence": det.confidence,
            "evidence": [e.literal for e in det.evidence][:10]}


for name, mappings, docs in (("reference", False, True), ("known_item", False, True), ("migration", True, False),
                             ("realcode_godot3", True, False), ("realcode_godot4", True, True)):
    path = EVAL / (f"{name}.jsonl" if name == "reference" else f"{name}.dev.jsonl")
    queries = read_queries(path)
    doc_sample = set(q.id for q in rng.sample(queries, min(len(queries), args.docs_chunks)))
    for q in tqdm(queries, desc=name, file=sys.stderr):
        res = r.retrieve(q.chunk_text, "F", cfg)
        cands = res.results + res.rejected
        lean = (res.trace.version or {}).get("lean")
        if mappings and asks_mappings("auto", lean):
            gold = set(q.relevant_mappings)
            for c in cands:
                if c.table != "api_mapping" or c.info("validate") is None:
                    continue
                occ = asked_occurrence(c)
                if occ is None:
                    continue
                if q.expect_no_mappings:
                    label, why = 0, "valid Godot 4 code (expect_no_mappings)"
                elif (m := mapping_triple(c.id)) is None:
                    continue
                else:
                    label, why = (1, "port-confirmed pair") if m in gold else (0, "not in the gold pairs")
                pairs.append({**base(name, q, c, label, why), "occurrence": occ.model_dump(), "ambiguous": occ.ambiguous,
                              "line_text": q.chunk_text.splitlines()[occ.line - 1]})
        if docs and q.id in doc_sample:
            gold_pages = set(q.relevant_pages) | set(q.relevant_api_pages)
            if not gold_pages:
                continue
            by_label = {0: [], 1: []}
            for c in cands:
                if c.table != "docs_chunks" or c.verdict != "accept":
                    continue
                page = page_of(c.id)
                if page in gold_pages:
                    by_label[1].append((c, "relevant page" if page in q.relevant_pages else "page of the chunk's API"))
                elif page in q.demoted_pages:
                    by_label[0].append((c, "demoted page"))
                elif q.relevant_pages or page.startswith("classes/"):
                    by_label[0].append((c, "accepted, in no gold"))
            for label, lst in by_label.items():
                for c, why in rng.sample(lst, min(len(lst), args.per_chunk)):
                    pairs.append(base(name, q, c, label, why))

for i, p in enumerate(pairs):
    p["id"] = f"js{i:04d}"
args.out.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs))
summary = {}
for p in pairs:
    k = f"{p['table']} {p['set']}"
    summary.setdefault(k, [0, 0])[p["label"]] += 1
print(json.dumps({"out": str(args.out), "pairs": len(pairs), "negatives_positives": summary}, indent=2))
