"""Does a cross-encoder score (the bundled nanoranker, as F's rerank stage computes it: chunk x model_text) earn a
place among the ranker's features? Out-of-fold (by project) ROC AUC of the logistic model per group, with and
without it, on the graded pairs `fit-ranker --rows` wrote.

    python bench/ranker_cross_encoder.py --rows graded_rows.json --docs JSONL_DIR/docs_chunks.jsonl \
        --scan beehave=SCANS/beehave [--scan ...]
"""
import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from godot_rag.eval.guide_fit import fit_logistic
from godot_rag.eval.ranker_fit import folds_of, project_of, sigmoid
from godot_rag.models.reranker import NanoRanker
from godot_rag.records import model_text
from godot_rag.retrieve.evidence.ranker_features import features_of

ap = argparse.ArgumentParser()
ap.add_argument("--rows", required=True, help="fit-ranker --rows output (graded candidates with their features)")
ap.add_argument("--docs", required=True, help="the docs_chunks JSONL the database was loaded from")
ap.add_argument("--scan", action="append", default=[], help="PREFIX=SCAN_DIR, as fit-ranker takes it")
ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
args = ap.parse_args()
def lines(path: Path | str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


rows = json.loads(Path(args.rows).read_text())
text = {}
for item in args.scan:
    pre, _, d = item.partition("=")
    text |= {f"{pre}:{r['file']}#{r['chunk']}": r["chunkText"] for r in lines(Path(d) / "chunks.jsonl")}
for f in ("realcode_godot4.dev.jsonl", "realcode_godot3.dev.jsonl"):
    text |= {r["id"]: r["chunk_text"] for r in lines(Path(args.shared) / "eval" / f)}
recs = {p["chunk_id"]: p for p in lines(args.docs)}
rows = [r for r in rows if r["query_id"] in text and r["record_id"] in recs and not r["vetoed"]]
by_q = defaultdict(list)
for r in rows: by_q[r["query_id"]].append(r)
ce = NanoRanker(); t = time.time()
for q, rs in by_q.items():
    s = ce.score(text[q], [model_text("docs_chunks", recs[r["record_id"]]) for r in rs])
    for r, v in zip(rs, s): r["ce"] = float(v)
print("scored", len(rows), "pairs in", round(time.time() - t, 1), "s")

def auc(p, y):
    order = np.argsort(p); ranks = np.empty(len(p)); ranks[order] = np.arange(1, len(p) + 1)
    pos = y == 1; n1, n0 = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)

for g in ("guides", "api_reference"):
    gr = [r for r in rows if r["group"] == g]
    names = list(features_of(g))
    y = np.array([r["grade"] == 2 for r in gr], float)
    fold = folds_of([project_of(r["query_id"]) for r in gr], 5)
    for extra in ([], ["ce"]):
        X = np.array([[r["features"].get(f, 0.0) for f in names] + [r[e] for e in extra] for r in gr])
        p = np.zeros(len(y))
        for k in range(5):
            tr, te = fold != k, fold == k
            w, b = fit_logistic(X[tr], y[tr], 1.0)
            p[te] = sigmoid(X[te] @ w + b)
        print(g, "with ce" if extra else "features", "n", len(y), "AUC", round(auc(p, y), 4))
    print(g, "ce alone AUC", round(auc(np.array([r["ce"] for r in gr]), y), 4))
