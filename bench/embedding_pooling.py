"""Windowed (mean of overlapping 256-word-piece windows) against truncated (first window only)
encoding of long chunks, measured as embedding-only retrieval on ../shared/eval; and int8 against
fp32 vectors (cosine agreement, speed). Corpus: every chunk of every page some query needs, plus
a seeded random sample of the others, so the measurement fits a few minutes on 2 cores.

    python bench/embedding_pooling.py [--others 3000]
"""
import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from godot_rag.eval.metrics import all_relevant_at, dedupe_pages
from godot_rag.models.embedder import Embedder
from godot_rag.records import search_text

ap = argparse.ArgumentParser()
ap.add_argument("--jsonl", default="work/godot_rag/jsonl/docs_chunks.jsonl")
ap.add_argument("--others", type=int, default=3000)
ap.add_argument("--poolings", default="truncate,window-mean")
ap.add_argument("--precision", default="int8", help="int8 or fp32, for the pooling comparison")
args = ap.parse_args()
queries = []
for f in ("known_item.dev.jsonl", "migration.dev.jsonl"):
    with open(Path("../shared/eval") / f) as lines:
        queries += [dict(json.loads(l), file=f) for l in lines]
needed = {p for q in queries for p in q["relevant_pages"]}
with open(args.jsonl) as lines:
    recs = [json.loads(l) for l in lines]
keep = [r for r in recs if r["metadata"]["page_path"] in needed]
rest = [r for r in recs if r["metadata"]["page_path"] not in needed]
random.Random(7).shuffle(rest)
corpus = keep + rest[: args.others]
ids = [r["chunk_id"] for r in corpus]
texts = [search_text("docs_chunks", r) for r in corpus]
out = {"corpus_chunks": len(corpus), "queries": len(queries), "precision": args.precision}
base = Embedder(pooling="window-mean")
out["chunks_over_one_window"] = sum(base.window_count(t) > 1 for t in texts)
for pooling in args.poolings.split(","):
    emb = Embedder(pooling=pooling, precision=args.precision)
    t = time.perf_counter()
    docs = emb.encode(texts)
    out[f"{pooling}_encode_s"] = round(time.perf_counter() - t, 1)
    qv = emb.encode([q["chunk_text"] for q in queries])
    scores = qv @ docs.T
    res = defaultdict(list)
    for qi, q in enumerate(queries):
        if not q["relevant_pages"]:
            continue
        order = np.argsort(-scores[qi])[:50]
        pages = dedupe_pages([ids[i] for i in order])
        v = q.get("variant") or q["file"].split(".")[0]
        res[v].append((all_relevant_at(pages, q["relevant_pages"], 1), all_relevant_at(pages, q["relevant_pages"], 5)))
    out[pooling] = {v: {"recall@1": round(float(np.mean([a for a, _ in l])), 3),
                        "recall@5": round(float(np.mean([b for _, b in l])), 3), "n": len(l)} for v, l in res.items()}
sample = texts[:300]
vecs = {}
for precision in ("fp32", "int8"):
    emb = Embedder(precision=precision)
    emb.load()
    t = time.perf_counter()
    vecs[precision] = emb.encode(sample)
    out[f"{precision}_300_chunks_s"] = round(time.perf_counter() - t, 1)
out["int8_vs_fp32_mean_cosine"] = round(float(np.mean(np.sum(vecs["fp32"] * vecs["int8"], axis=1))), 4)
print(json.dumps(out, indent=2))
