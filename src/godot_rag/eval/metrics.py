"""Retrieval metrics counted by page: a page's chunks count once, at the page's best rank.

recall@k, MRR and nDCG@10 come from ranx (nDCG with gain 2^grade - 1, ranx's `ndcg_burges`).
`all_relevant@k` is our own stricter rule for multi-page queries: 1 only when every relevant
page is in the top k (a chunk touching two topics needs both), else 0.
"""
from __future__ import annotations

import warnings

import numpy as np

RANX_METRICS = {"recall@1": "recall@1", "recall@5": "recall@5", "recall@10": "recall@10", "mrr": "mrr",
                "ndcg@10": "ndcg_burges@10"}
NO_RESULT = "__no_result__"  # ranx needs a run entry for every query; this page is never relevant


def page_of(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[0]


def dedupe_pages(chunk_ids: list[str]) -> list[str]:
    return list(dict.fromkeys(page_of(c) for c in chunk_ids))


def all_relevant_at(pages: list[str], relevant: dict[str, int], k: int) -> float:
    """All relevant pages must be in the top k (a mixed query needs both)."""
    top = set(pages[:k])
    return float(all(p in top for p in relevant))


def score_queries(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Per query: ranx's recall@1/5/10, MRR and nDCG@10, plus all_relevant@1/5/10, for ranked page lists."""
    from ranx import Qrels, Run, evaluate

    qids = [q for q, rel in qrels.items() if rel]
    if not qids:
        return {}
    ranx_run = Run({q: {p: 1.0 / (i + 1) for i, p in enumerate(run.get(q) or [])} or {NO_RESULT: 1e-9} for q in qids})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64 -> int64 cast notice inside ranx
        evaluate(Qrels({q: qrels[q] for q in qids}), ranx_run, list(RANX_METRICS.values()))
    out = {}
    for q in qids:
        row = {ours: float(ranx_run.scores[theirs][q]) for ours, theirs in RANX_METRICS.items()}
        row.update({f"all_relevant@{k}": all_relevant_at(run.get(q) or [], qrels[q], k) for k in (1, 5, 10)})
        out[q] = row
    return out


def mapping_counts(accepted: set[tuple], relevant: set[tuple]) -> tuple[int, int, int]:
    tp = len(accepted & relevant)
    return tp, len(accepted) - tp, len(relevant) - tp


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


RENAME_PREFIX_SKIP = ("migration_guide", "gdscript_syntax")


def mapping_triple(mapping_id: str) -> tuple[str, str, str] | None:
    """`class_renames:AnimatedSprite->AnimatedSprite2D` -> the gold's (table, from, to); None for records
    that do not come from the converter's tables (the gold cannot judge those)."""
    table, _, rest = mapping_id.partition(":")
    if table in RENAME_PREFIX_SKIP or "->" not in rest:
        return None
    src, _, dst = rest.partition("->")
    return table, src, dst
