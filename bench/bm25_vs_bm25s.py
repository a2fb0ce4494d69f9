"""Strategy B next to bm25s, in one run: the same docs_chunks records, the same code-aware tokens,
the same known_item chunks. B is timed as a user gets it (segments and local weights included,
explain off, docs_chunks only); bm25s is `method="lucene"`, top 10, on the whole chunk's tokens.
Also prints recall@1/@10 of both, so that a faster B cannot hide a worse one.

    pip install 'godot-rag[bench]'      # bm25s
    python bench/bm25_vs_bm25s.py [--n 200] [--queries ../shared/eval/known_item.dev.jsonl] [--data-dir DIR]
"""
import argparse
import json
import statistics
import time

import bm25s
import numpy as np

from godot_rag.gdscript.tokenize import tokenize, tokenizer_of
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=200)
ap.add_argument("--queries", default="../shared/eval/known_item.dev.jsonl")
ap.add_argument("--data-dir", default=None, help="the database (default: the embedded one)")
ap.add_argument("--repeat", type=int, default=3, help="passes over the chunks; the p50 is over all of them")
args = ap.parse_args()

with open(args.queries) as lines:
    queries = [json.loads(line) for line in lines][: args.n]
retriever = Retriever(Database(data_dir=args.data_dir))
cfg = RetrieveConfig(tables=["docs_chunks"], k=10)
tok = tokenizer_of(cfg)
index = retriever.bm25.index("docs_chunks", tok, cfg)  # B's index; bm25s gets the same tokens below
ids = index.ids
texts = dict(retriever.search_texts("docs_chunks"))
corpus_tokens = [tokenize(texts[i], tok) for i in ids]


def build_bm25s():
    vocab = {}
    token_ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus_tokens]
    eng = bm25s.BM25(method="lucene", k1=cfg.k1, b=cfg.b)
    eng.index(bm25s.tokenization.Tokenized(ids=token_ids, vocab=vocab), show_progress=False)
    return eng, vocab


engine, vocab = build_bm25s()


def relevant(q) -> set[str]:
    return set(q.get("relevant_pages") or {})


def page_of(chunk_id: str) -> str:
    return chunk_id.split("#")[0]


def bm25s_query(chunk: str):
    toks = [t for t in dict.fromkeys(tokenize(chunk, tok)) if t in vocab]
    q = bm25s.tokenization.Tokenized(ids=[[vocab[t] for t in toks]], vocab=vocab)
    docs, scores = engine.retrieve(q, k=10, show_progress=False, n_threads=1)
    return [ids[i] for i, s in zip(docs[0], scores[0]) if s > 0]


for q in queries[:5]:  # warm both
    retriever.retrieve(q["chunk_text"], "B", cfg)
    bm25s_query(q["chunk_text"])

ours_ms, theirs_ms = [], []
hits = {"B": [0, 0], "bm25s": [0, 0]}
for rep in range(args.repeat):
    for q in queries:
        t = time.perf_counter()
        res = retriever.retrieve(q["chunk_text"], "B", cfg)
        ours_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        found = bm25s_query(q["chunk_text"])
        theirs_ms.append((time.perf_counter() - t) * 1000)
        if rep == 0:
            rel = relevant(q)
            for name, got in (("B", [c.id for c in res.results]), ("bm25s", found)):
                pages = [page_of(i) for i in got]
                hits[name][0] += bool(pages[:1] and pages[0] in rel)
                hits[name][1] += bool(rel & set(pages[:10]))

n = len(queries)
p50_ours, p50_theirs = statistics.median(ours_ms), statistics.median(theirs_ms)
print(json.dumps({
    "chunks": n, "records": len(ids), "passes": args.repeat,
    "B_p50_ms": round(p50_ours, 2), "B_p95_ms": round(float(np.percentile(ours_ms, 95)), 2),
    "bm25s_p50_ms": round(p50_theirs, 2), "bm25s_p95_ms": round(float(np.percentile(theirs_ms, 95)), 2),
    "B_over_bm25s": round(p50_ours / p50_theirs, 2),
    "recall@1": {k: round(v[0] / n, 4) for k, v in hits.items()},
    "recall@10": {k: round(v[1] / n, 4) for k, v in hits.items()},
}, indent=2))
