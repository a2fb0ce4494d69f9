"""The learned ranker's named features of one docs candidate, read from what F's earlier stages recorded (its
trace infos and decision), never recomputed: the same values for the `rank` stage (ranker.py) and for
`godot-rag fit-ranker`'s rows (eval/ranker_rows.py), so the model scores what it was fitted on."""
from __future__ import annotations

import math
from functools import cache
from typing import Any

from ..engine.decision import Decision
from ..engine.types import Candidate
from .decision import RANKER_RULE
from .docs_features import FEATURES as GUIDE_FEATURES

GUIDES = "guides"
API_REFERENCE = "api_reference"
GROUPS = (GUIDES, API_REFERENCE)
MAX_STRONG = 3  # strong evidence items counted (more says no more)
RESOLVED_API = "resolved_api"
# Every group's features: the recall ranks and scores, the code the record shares (clone), the validator's rule-table
# evidence (support, against, strong items, resolved API), the api list's uses, and F's own verdict.
RANKER_FEATURES = ("f_accepts", "bm25_rank", "embedding_rank", "fused_rank", "cosine", "clone", "confidence",
                   "support", "against", "strong", "resolved_api", "api_uses", "api_member")
GUIDE_PREFIX = "guide."


@cache
def features_of(group: str) -> tuple[str, ...]:
    """The named features of a group's model: a guide's add the guide model's (`guide.api_code`, ...)."""
    return RANKER_FEATURES + (tuple(GUIDE_PREFIX + f for f in GUIDE_FEATURES) if group == GUIDES else ())


def group_of(c: Candidate) -> str:
    """The candidate's docs group: an API entry is named so from the api stage on; every other record is a guide
    (a record is put in its group only at the cut)."""
    return c.group if c.group == API_REFERENCE else GUIDES


def rank_value(rank: int | None) -> float:
    """A list's rank as a value in (0, 1]: 1 at the top, 1/log2(1 + rank) below; 0 when the list missed it."""
    return 0.0 if rank is None else 1.0 / math.log2(1 + rank)


def rules_decision(c: Candidate) -> Decision | None:
    """F's decision before the ranker's (the ranker's overrule, and any after it, skipped): what `f_accepts` reads."""
    for d in c.decision.chain() if c.decision is not None else ():
        if d.rule == RANKER_RULE:
            return d.overrules
    return c.decision


def vetoed(c: Candidate) -> bool:
    """A contradiction (dimension, class family, version, a foreign section) rejected it: no model accepts it."""
    d = rules_decision(c)
    return bool(d is not None and d.contradictions)


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


def candidate_features(c: Candidate) -> dict[str, float]:
    """The candidate's named features (`features_of` its group), rounded as the trace keeps them."""
    d = rules_decision(c)
    accepted = d.accepted if d is not None else c.verdict == "accept"
    values = {"f_accepts": float(accepted)} | _recall_values(c) | _evidence_values(c)
    if group_of(c) == GUIDES:
        guide = (guide_model_info(c) or {}).get("features") or {}
        values |= {GUIDE_PREFIX + f: float(guide.get(f, 0.0)) for f in GUIDE_FEATURES}
    return {k: round(x, 6) for k, x in values.items()}
