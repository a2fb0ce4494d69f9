"""The ranker's figures on the graded pairs: precision (share graded 2, share graded 0) and recall (share of the
grade-2 pairs returned; chunks given one) of a selection of records per chunk, per group, and nDCG@5 of an order.

A selection is {chunk: [record ids]}; only graded records count for precision (the ungraded are counted apart).
Recall is over every grade-2 pair of the chunks measured, whether F had the record as a candidate or not.
nDCG@5 is over the graded records of an order (a condensed list: an ungraded record is left out, not counted 0),
against the ideal order of all the chunk's graded records (grade 2 = 2, 1 = 1, 0 = 0).
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

NDCG_AT = 5
API_PAGE_PREFIX = "classes/class_"
CLASS_OVERVIEW = "#000"  # a class page's first record (its description) is in the guides group


def group_of_record(pair: tuple[str, str], known: Mapping[tuple[str, str], str]) -> str:
    """A (chunk, record) pair's group: as F gave it for that chunk where known (a member entry the chunk's
    resolved API did not bring is a guide), else a class page's member entry is `api_reference`."""
    if pair in known:
        return known[pair]
    record_id = pair[1]
    is_entry = record_id.startswith(API_PAGE_PREFIX) and not record_id.endswith(CLASS_OVERVIEW)
    return "api_reference" if is_entry else "guides"


def selection_metrics(selected: Mapping[str, Sequence[str]], grades: Mapping[tuple[str, str], int],
                      chunks: Collection[str], groups: Mapping[tuple[str, str], str], group: str | None = None) -> dict[str, Any]:
    """Precision and recall of `selected` on `chunks`, for one group (None: both)."""
    def wanted(pair: tuple[str, str]) -> bool:
        return group is None or group_of_record(pair, groups) == group
    picked = [(q, r) for q in chunks for r in selected.get(q, []) if wanted((q, r))]
    graded = [grades[p] for p in picked if p in grades]
    direct = [p for p, g in grades.items() if g == 2 and p[0] in chunks and wanted(p)]
    got = {p for p in picked if grades.get(p) == 2}
    with_direct = {q for q, _ in direct}
    n = len(graded)
    return {"accepted": len(picked), "graded": n, "ungraded": len(picked) - n,
            "share2": round(sum(g == 2 for g in graded) / n, 4) if n else None,
            "share0": round(sum(g == 0 for g in graded) / n, 4) if n else None,
            "recall": round(len(got) / len(direct), 4) if direct else None,
            "chunks_given": round(len({q for q, _ in got}) / len(with_direct), 4) if with_direct else None}


def dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:NDCG_AT]))


def ndcg(orders: Mapping[str, Sequence[str]], grades: Mapping[tuple[str, str], int], chunks: Collection[str]) -> dict[str, Any]:
    """Mean nDCG@5 of `orders` over the chunks with a graded record above 0 (an empty order scores 0)."""
    per_chunk: dict[str, list[int]] = {}
    for (q, _), g in grades.items():
        if q in chunks:
            per_chunk.setdefault(q, []).append(g)
    scores = []
    for q, gs in per_chunk.items():
        ideal = dcg(sorted(gs, reverse=True))
        if ideal <= 0:
            continue
        gains = [grades[(q, r)] for r in orders.get(q, []) if (q, r) in grades]
        scores.append(dcg(gains) / ideal)
    return {"ndcg@5": round(sum(scores) / len(scores), 4) if scores else None, "chunks": len(scores)}
