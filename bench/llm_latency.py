"""Latency of the LLM stages with the bundled Qwen (in process) on the reference chunk and a sample of
eval chunks: E (profile + search) and F with the Qwen judge on the top 5; plus the process RSS with
the model loaded (the figure `godot-rag serve --llm-bundled` reaches).

    python bench/llm_latency.py [--bundled 1.5b] [--n 5]
"""
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from godot_rag.examples import REFERENCE_CHUNK
from godot_rag.models.llm import make_llm
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import ModelFiles, Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("--bundled", default="1.5b")
ap.add_argument("--n", type=int, default=5)
args = ap.parse_args()
with open(Path("../shared/eval/migration.dev.jsonl")) as lines:
    chunks = [REFERENCE_CHUNK, *[json.loads(l)["chunk_text"] for l in lines][: args.n - 1]]
# Uncalibrated and forced to decide: the judge sees the top 5 docs accepts (the stored calibrations of the
# bundled models send it nothing; bench/judge_worth.py measures both ways).
no_cal_dir = tempfile.TemporaryDirectory()  # removed at exit
no_cal = Path(no_cal_dir.name) / "none.json"
no_cal.write_text('{"calibrations": []}')
r = Retriever(Database(), llm=make_llm(bundled=args.bundled), files=ModelFiles(judge_calibration=no_cal))
r.warm()
out = {"llm": args.bundled, "chunks": len(chunks)}
for name, strategy, cfg in (("E", "E", RetrieveConfig(k=5)),
                            ("F_judge_top5", "F", RetrieveConfig(k=5, validator_llm=True, validate_top=5,
                                                                  judge_thresholds={"docs_chunks": 0.6}))):
    ms, extra = [], []
    for c in chunks:
        t = time.perf_counter()
        res = r.retrieve(c, strategy, cfg)
        ms.append((time.perf_counter() - t) * 1000)
        if strategy == "E":
            extra.append(len(res.trace["profile_checks"]["checks"]["important_literals"]["hallucinated"]))
        else:
            extra.append(sum(1 for x in res.results + res.rejected if "judge" in x.trace and x.verdict == "reject"))
    out[name] = {"latency_ms_p50": round(statistics.median(ms)), "latency_ms_max": round(max(ms)),
                 ("hallucinated_literals" if strategy == "E" else "rejected_by_judge"): extra}
out["rss_mb_with_model"] = round(psutil.Process().memory_info().rss / 2**20)
print(json.dumps(out, indent=2))
