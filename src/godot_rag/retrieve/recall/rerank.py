"""Reranker stage: re-score the first `rerank_top` docs candidates with a model that reads chunk and
record together (before any cut).

The model's raw scores come in from `models/`; this stage only normalises them,
blends them with the fused score and records before/after ranks.
    final = (1 - w) * minmax(fused) + w * minmax(reranker)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...records import model_text
from ..engine.config import ConfigError
from ..engine.stage import Stage
from ..engine.state import Pool, Pooled, QueryState, table_list
from ..engine.trace import SCORE_DIGITS, RerankInfo
from ..engine.types import Candidate
from .resources import RecallResources

if TYPE_CHECKING:
    from ...models.reranker import Reranker


def _minmax(a: np.ndarray) -> np.ndarray:
    span = a.max() - a.min() if len(a) else 0
    return (a - a.min()) / span if span > 0 else np.ones_like(a)


def apply_rerank(candidates: list[Candidate], model_scores: list[float], backend: str, weight: float) -> list[Candidate]:
    if not candidates:
        return []
    fused = _minmax(np.asarray([c.score for c in candidates], dtype=float))
    model = _minmax(np.asarray(model_scores, dtype=float))
    final = (1 - weight) * fused + weight * model
    scored = []
    for c, raw, before_score, f in zip(candidates, model_scores, fused, final):
        before = c.rank
        c = c.derive()
        c.score = float(f)
        scored.append((c, float(raw), float(before_score), before))
    scored.sort(key=lambda x: (-x[0].score, x[0].id))
    out = []
    for i, (c, raw, before_score, before) in enumerate(scored):
        c.rank = i + 1
        c.add_stage("rerank", RerankInfo(backend=backend, model_score=round(raw, SCORE_DIGITS),
                                         score_before=round(before_score, SCORE_DIGITS),
                                         weight=weight, score=round(c.score, SCORE_DIGITS), rank_before=before, rank=i + 1,
                                         rank_change=(before or c.rank) - c.rank))
        out.append(c)
    return out


def open_reranker(name: str, llm: object | None, cross_encoder_path: str | None) -> Reranker:
    """The reranker backend by name (loaded on first use); a backend without what it needs is a ConfigError."""
    from ...models import reranker as rr

    if name == "nanoranker":
        return rr.NanoRanker()
    if name == "cross-encoder":
        if not cross_encoder_path:
            raise ConfigError("reranker 'cross-encoder' needs --cross-encoder PATH (a local CrossEncoder directory)")
        return rr.LocalCrossEncoder(cross_encoder_path)
    if name == "qwen":
        if llm is None:
            raise ConfigError("reranker 'qwen' needs an LLM: --llm-gguf, --llm-url or the bundled Qwen")
        return rr.QwenPointwise(llm)
    raise ConfigError(f"unknown reranker {name!r}")


def run_rerank(q: QueryState[RecallResources], pool: Pool) -> Pooled:
    cfg = q.cfg
    docs = table_list(pool, "docs_chunks")
    if not docs or cfg.reranker == "none":
        q.note(skipped="reranker is none" if cfg.reranker == "none" else "no docs candidates")
        return Pooled(pool)
    head, rest = docs[: cfg.rerank_top], docs[cfg.rerank_top:]
    model = q.ensure_loaded("reranker", q.resources.reranker(cfg.reranker), backend=cfg.reranker)
    scores = model.score(q.chunk, [model_text(c.table, c.payload) for c in head])
    reranked = apply_rerank(head, scores, cfg.reranker, cfg.rerank_weight)
    out = dict(pool)
    out["docs_chunks"] = [reranked + rest]
    q.record_ids("docs_chunks", "rerank", out["docs_chunks"][0])
    q.note(backend=cfg.reranker, reranked=len(head), moved=sum(1 for c in reranked if c.info("rerank").rank_change))
    return Pooled(out)


RERANK = Stage("rerank", run_rerank, "optional model re-score of the first rerank_top docs (nanoranker, qwen, cross-encoder)")
