"""Retrieval metrics counted by page: a page's chunks count once, at the page's best rank."""
from __future__ import annotations

import math

import numpy as np


def page_of(chunk_id: str) -> str:
    return chunk_id.split("#", 1)[0]


def dedupe_pages(chunk_ids: list[str]) -> list[str]:
    return list(dict.fromkeys(page_of(c) for c in chunk_ids))


def recall_at(pages: list[str], relevant: dict[str, int], k: int) -> float:
    """All relevant pages must be in the top k (a mixed query needs both)."""
    top = set(pages[:k])
    return float(all(p in top for p in relevant))


def mrr(pages: list[str], relevant: dict[str, int]) -> float:
    for i, p in enumerate(pages, 1):
        if p in relevant:
            return 1.0 / i
    return 0.0


def ndcg_at(pages: list[str], relevant: dict[str, int], k: int = 10) -> float:
    """Graded: gain = 2^grade - 1, discount log2(rank + 1)."""
    dcg = sum((2 ** relevant.get(p, 0) - 1) / math.log2(i + 1) for i, p in enumerate(pages[:k], 1))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2 ** g - 1) / math.log2(i + 1) for i, g in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def mapping_counts(accepted: set[tuple], relevant: set[tuple]) -> tuple[int, int, int]:
    tp = len(accepted & relevant)
    return tp, len(accepted) - tp, len(relevant) - tp


def percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None
