"""Qwen pointwise reranker (P(yes)) against nanoranker and no reranker, on a sample of queries.
The Qwen reranker costs seconds per candidate on 2 cores, so this runs a small seeded sample.

    python bench/qwen_rerank.py [--n 20] [--top 8] [--bundled 1.5b]
"""
import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path

from godot_rag.eval.metrics import all_relevant_at, dedupe_pages
from godot_rag.models.llm import make_llm
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=20)
ap.add_argument("--top", type=int, default=8)
ap.add_argument("--bundled", default="1.5b")
args = ap.parse_args()
qs = []
for name in ("known_item.dev.jsonl", "migration.dev.jsonl"):
    with open(Path("../shared/eval") / name) as lines:
        qs += [json.loads(l) for l in lines]
qs = [q for q in qs if q["relevant_pages"]]
random.Random(11).shuffle(qs)
qs = qs[: args.n]
r = Retriever(Database(), llm=make_llm(bundled=args.bundled))
out = {}
for reranker in ("none", "nanoranker", "qwen"):
    cfg = RetrieveConfig(reranker=reranker, rerank_top=args.top)
    hits, ms = defaultdict(list), []
    for q in qs:
        t = time.perf_counter()
        res = r.retrieve(q["chunk_text"], "F", cfg, explain=False)
        ms.append((time.perf_counter() - t) * 1000)
        pages = dedupe_pages([c.id for c in res.by_table("docs_chunks")])
        hits["recall@1"].append(all_relevant_at(pages, q["relevant_pages"], 1))
        hits["recall@5"].append(all_relevant_at(pages, q["relevant_pages"], 5))
    ms.sort()
    out[reranker] = {k: round(sum(v) / len(v), 3) for k, v in hits.items()}
    out[reranker]["latency_ms_p50"] = round(ms[len(ms) // 2], 1)
print(json.dumps({"queries": len(qs), "rerank_top": args.top, "llm": args.bundled, **out}, indent=2))
