"""F's docs candidates as the ranker's rows (`godot-rag fit-ranker`, `ranker_fit.py`): what F already computed for
each candidate, read from its trace infos, never recomputed.

Per chunk, F runs once with explain on (its accepts, rejects and cut records) and D once (its top 10 docs records,
the baseline). Each docs candidate of F becomes one row: its group, F's verdict and rule, whether a contradiction
rejected it (a veto: the ranker never accepts it), and its named features (RANKER_FEATURES; a guide also has the
guide model's features, `guide.<name>`).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..gdscript.project import RequestContext
from ..retrieve.engine.config import RetrieveConfig
from ..retrieve.engine.types import Candidate
from ..retrieve.evidence.docs_features import FEATURES as GUIDE_FEATURES
from ..retrieve.pipeline import Retriever

DOCS = "docs_chunks"
GUIDES = "guides"
GROUPS = (GUIDES, "api_reference")
D_TOP = 10  # D's docs records the baseline reads per chunk
MAX_API = 100  # API entries F may return per chunk when every candidate is wanted (RetrieveConfig's most)
MAX_STRONG = 3  # strong evidence items counted (more says no more)
RESOLVED_API = "resolved_api"
# Every group's features: the recall ranks and scores, the code the record shares (clone), the validator's rule-table
# evidence (support, against, strong items, resolved API), the api list's uses, and F's own verdict.
RANKER_FEATURES = ("f_accepts", "bm25_rank", "embedding_rank", "fused_rank", "cosine", "clone", "confidence",
                   "support", "against", "strong", "resolved_api", "api_uses", "api_member")
GUIDE_PREFIX = "guide."


def features_of(group: str) -> tuple[str, ...]:
    """The named features of a group's model: a guide's add the guide model's (`guide.api_code`, ...)."""
    return RANKER_FEATURES + (tuple(GUIDE_PREFIX + f for f in GUIDE_FEATURES) if group == "guides" else ())


@dataclass(frozen=True)
class RankerQuery:
    """One graded chunk: its id (`rc4:2d/...#0`, `beehave:addons/...#5`), its text and its project's context."""
    id: str
    text: str
    context: RequestContext | None = None


def rank_value(rank: int | None) -> float:
    """A list's rank as a value in (0, 1]: 1 at the top, 1/log2(1 + rank) below; 0 when the list missed it."""
    return 0.0 if rank is None else 1.0 / math.log2(1 + rank)


def _recall_values(c: Candidate) -> dict[str, float]:
    bm, em, fu, cm, v = (c.info(s) if c.has_info(s) else None for s in ("bm25", "embedding", "fuse", "codematch", "validate"))
    cosine = em.cosine if em is not None else (getattr(v, "cosine", None) if v is not None else None)
    return {"bm25_rank": rank_value(bm.rank if bm is not None else None),
            "embedding_rank": rank_value(em.rank if em is not None else None),
            "fused_rank": rank_value(fu.rank if fu is not None else None),
            "cosine": float(cosine or 0.0), "clone": float(cm.ratio) if cm is not None else 0.0}


def _evidence_values(c: Candidate) -> dict[str, float]:
    v = c.info("validate") if c.has_info("validate") else None
    api = c.info("api") if c.has_info("api") else None
    uses = list(api.uses) if api is not None else []
    evidence = list(v.evidence) if v is not None else []
    return {"confidence": float(v.confidence) if v is not None else 0.0,
            "support": math.log1p(max(0.0, (v.support or 0.0) if v is not None else 0.0)),
            "against": math.log1p(max(0.0, (v.against or 0.0) if v is not None else 0.0)),
            "strong": float(min(MAX_STRONG, (v.strong or 0) if v is not None else 0)),
            "resolved_api": float(sum(getattr(e, "kind", None) == RESOLVED_API for e in evidence) > 0),
            "api_uses": math.log1p(len(uses)), "api_member": float(any(u.entry == "member" for u in uses))}


def guide_model_info(c: Candidate) -> dict[str, Any] | None:
    """The guide model's trace (`model`) of a guide candidate, from the last decision that holds one."""
    if c.decision is None:
        return None
    return next((d.model for d in c.decision.chain() if d.model), None)


def candidate_row(query_id: str, c: Candidate) -> dict[str, Any]:
    """One docs candidate of F as a row: group, F's verdict and rule, veto, features."""
    accepted = c.decision.accepted if c.decision is not None else c.verdict == "accept"
    values = {"f_accepts": float(accepted)} | _recall_values(c) | _evidence_values(c)
    group = c.group or GUIDES  # a rejected record is in no group yet: only an API entry is named so before the cut
    model = guide_model_info(c) if group == GUIDES else None
    if group == GUIDES:
        guide = (model or {}).get("features") or {}
        values |= {GUIDE_PREFIX + f: float(guide.get(f, 0.0)) for f in GUIDE_FEATURES}
    vetoed = bool(c.decision is not None and c.decision.contradictions)
    return {"query_id": query_id, "record_id": c.id, "group": group, "f_accepted": accepted,
            "f_rule": c.decision.rule if c.decision is not None else None, "vetoed": vetoed,
            "features": {k: round(x, 6) for k, x in values.items()}}


def every_candidate() -> RetrieveConfig:
    """F with every shortlisted docs candidate back: k as large as the reranker's shortlist, every API entry
    (F returns at most k rejects per table, and k accepts per group)."""
    return RetrieveConfig(k=RetrieveConfig().rerank_top, k_api=MAX_API)


def chunk_rows(retriever: Retriever, q: RankerQuery, cfg: RetrieveConfig) -> dict[str, Any]:
    """F's docs candidates of one chunk as rows (`cfg`: `every_candidate`), F's accepted order with the default
    settings, and D's top docs records."""
    res = retriever.retrieve(q.text, "F", cfg, explain=True, context=q.context)
    seen: set[str] = set()
    rows = []
    for c in [*res.results, *res.cut, *res.rejected]:
        if c.table == DOCS and c.id not in seen:
            seen.add(c.id)
            rows.append(candidate_row(q.id, c))
    f = retriever.retrieve(q.text, "F", RetrieveConfig(), explain=False, context=q.context)
    d = retriever.retrieve(q.text, "D", RetrieveConfig(k=D_TOP, tables=[DOCS]), explain=False, context=q.context)
    return {"rows": rows, "f_order": [c.id for c in f.results if c.table == DOCS],
            "d_order": [c.id for c in d.results if c.table == DOCS][:D_TOP]}


def collect(retriever: Retriever, queries: Sequence[RankerQuery], quiet: bool = False) -> dict[str, Any]:
    """`chunk_rows` of every query: {"rows": [...], "f_order": {query: ids}, "d_order": {query: ids}}."""
    cfg = every_candidate()
    out: dict[str, Any] = {"rows": [], "f_order": {}, "d_order": {}}
    for q in tqdm(queries, desc="run F and D", disable=quiet, unit="chunk"):
        got = chunk_rows(retriever, q, cfg)
        out["rows"].extend(got["rows"])
        out["f_order"][q.id] = got["f_order"]
        out["d_order"][q.id] = got["d_order"]
    return out


def cached_collect(retriever: Retriever, queries: Iterable[RankerQuery], cache: Path | None,
                   quiet: bool = False) -> dict[str, Any]:
    """`collect`, read from `cache` where it exists, else written there (a refit without rerunning F)."""
    if cache is not None and cache.exists():
        data: dict[str, Any] = json.loads(cache.read_text())
        return data
    data = collect(retriever, list(queries), quiet)
    if cache is not None:
        cache.write_text(json.dumps(data))
    return data
