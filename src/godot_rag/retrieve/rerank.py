"""Reranker stage: re-score fused candidates with a model that reads chunk and record together.

The model's raw scores come in from `models/`; this stage only normalises them,
blends them with the fused score and records before/after ranks.
    final = (1 - w) * minmax(fused) + w * minmax(reranker)
"""
from __future__ import annotations

import numpy as np

from .types import Candidate, sort_and_rank


def rerank_text(c: Candidate, limit: int = 1500) -> str:
    p = c.payload
    if c.table == "docs_chunks":
        return (" / ".join(p.get("section_path") or []) + "\n" + p.get("content", ""))[:limit]
    if c.table == "api_mapping":
        return f"{p['source_api']} -> {p['target_api']}: {p['notes']}"[:limit]
    return f"{p['label']}: {p['expected_finding']} {p['recommended_action']}"[:limit]


def _minmax(a: np.ndarray) -> np.ndarray:
    span = a.max() - a.min() if len(a) else 0
    return (a - a.min()) / span if span > 0 else np.ones_like(a)


def apply_rerank(candidates: list[Candidate], model_scores: list[float], backend: str, weight: float,
                 stage: str = "rerank") -> list[Candidate]:
    if not candidates:
        return []
    fused = _minmax(np.asarray([c.score for c in candidates], dtype=float))
    model = _minmax(np.asarray(model_scores, dtype=float))
    final = (1 - weight) * fused + weight * model
    out = []
    for c, raw, f in zip(candidates, model_scores, final):
        c = c.derive()
        before = c.rank
        c.score = float(f)
        c.trace[stage] = {"backend": backend, "model_score": round(float(raw), 6), "score_before": round(float(fused[len(out)]), 6),
                          "weight": weight, "score": round(float(f), 6), "rank_before": before}
        out.append(c)
    for c in sort_and_rank(out, stage):
        c.trace[stage]["rank_change"] = (c.trace[stage]["rank_before"] or c.rank) - c.rank
    return out
