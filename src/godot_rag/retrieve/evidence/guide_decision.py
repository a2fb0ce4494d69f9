"""The verdict on one guide candidate (`decide_guide`): the fitted model's, unless the chunk copies the record's
code (accepted by fact), or what the guide shares with the chunk is nothing or only generic API (rejected by rule)."""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from ...gdscript.facts import GDScriptFacts
from ...gdscript.record_api import record_api
from ...gdscript.resolution import Resolution
from ...records import record_code
from ...store import queries
from ..engine.decision import Decision
from ..engine.types import Candidate
from .chunk_side import ChunkSide, chunk_side, uses_api
from .docs_features import SHARED_FEATURES, GuideRecord, contradictions, guide_features, most_specific
from .docs_stats import DocsApiStats
from .guide_copy import CopyNames, copied_shares
from .guide_model import GuideModel

GUIDE_SHARE_RULES = ("nothing_shared", "generic_only")  # decide_guide's rules over what a guide shares, as the trace names them
GUIDE_MODEL, COPIED_CODE = "guide_model", "copied_code"  # the rules of a guide the model accepts, or accepts as a copy
CONTRIBUTIONS_CITED = 3  # feature contributions a rejection cites


def candidate_cosine(c: Candidate, filled: Mapping[str, float]) -> float | None:
    """The candidate's cosine: its embedding list's, or the one read for it (`missing_cosines`)."""
    emb = c.info("embedding")
    return emb.cosine if emb is not None else filled.get(c.id)


def missing_cosines(conn: Callable[[], psycopg.Connection], vectors: np.ndarray | None,
                    candidates: Iterable[Candidate]) -> dict[str, float]:
    """The cosine of the chunk's vector with each docs candidate that the embedding list did not bring (one
    only BM25 found): the guide model reads a record's cosine, not a 0 for a record the HNSW list missed."""
    if vectors is None or not len(vectors):
        return {}
    ids = sorted({c.id for c in candidates if c.table == "docs_chunks" and not c.has_info("embedding")})
    return queries.cosines(conn(), "docs_chunks", vectors[0], ids)


def share_rule(stats: DocsApiStats, values: dict[str, float], basis: dict[str, Any], side: ChunkSide, resolution: Resolution,
               min_specificity: float) -> dict[str, Any] | None:
    """The GUIDE_SHARE_RULES verdict on what a guide shares with the chunk, whatever P says, as {rule: detail}, or
    None when neither holds: `nothing_shared` (no SHARED_FEATURES, for a chunk that uses API) or `generic_only`
    (its most specific shared thing weighs less than `min_specificity`). `fit-guides` vetoes the same pairs."""
    if not any(values[f] for f in SHARED_FEATURES) and uses_api(side, resolution):
        return {"nothing_shared": True}
    if min_specificity and (most := most_specific(stats, basis)) is not None and most[1] < min_specificity:
        return {"generic_only": {"most_specific": most[0], "specificity": most[1]}}
    return None


@dataclass(frozen=True)
class GuideInput:
    """One guide candidate for one chunk, with what `decide_guide` reads of both.
    `clone`: the candidate's clone ratio; `copy_share`: the share of the chunk's code lines a record's code must hold
    to be the code the chunk copies (0: off); `renameable`: the chunk's names a copy may rename; `cosine`: the
    candidate's (`candidate_cosine`); `side`: the chunk's `chunk_side`, when the caller keeps it; `renames`: the
    converter's renames (Godot 3 name -> Godot 4 names); `godot3`: the chunk's version markers say Godot 3;
    `min_specificity`: the least specificity of what a guide shares (0: off)."""
    resolution: Resolution
    facts: GDScriptFacts
    candidate: Candidate
    clone: float
    copy_share: float
    renameable: frozenset[str]
    cosine: float | None = None
    side: ChunkSide | None = None
    renames: Mapping[str, frozenset[str]] | None = None
    godot3: bool = False
    min_specificity: float = 0.0


def decide_guide(model: GuideModel, stats: DocsApiStats, g: GuideInput) -> tuple[dict[str, Any], list[str]]:
    """The model's verdict on one guide candidate: its trace (each feature's value and contribution, the
    shared API it rests on) and the reasons to reject it (contradictions first; empty when accepted).
    A record whose code holds `copy_share` of the chunk's code lines (up to renaming) is the code the chunk
    copies: evidence by fact, whatever the model says (the model is fitted on real code, which copies little).
    `renames`: Godot 3 code copies a page that writes the Godot 4 names of its API (`$AnimatedSprite.play()` for
    `$AnimatedSprite2D.play()`). A copy that keeps nothing of the chunk's content (`copy_anchor`) is traced as
    `copy_unanchored` and left to the model.
    A guide that is no copy and shares nothing (SHARED_FEATURES all 0) with a chunk that uses API is rejected
    whatever P says (`nothing_shared`). Where the chunk uses none (`#region`, a `match`, a .po file's text), or
    is Godot 3 code (`godot3`: its version markers; the page that ports it writes its API under Godot 4 names),
    the likeness of the texts is all there is to go on, and the model decides. A guide that is no copy and whose
    most specific shared thing (`most_specific`) weighs less than `min_specificity` shares only generic API
    (`_ready`, `get_node`, `@export`): rejected whatever P says (`generic_only`; the issue's hub damping, measured
    on the judged sets: below 0.5, a third of such guides were graded 2; above, 0.71)."""
    c = g.candidate
    bm25 = c.info("bm25")
    side = g.side if g.side is not None else chunk_side(stats, g.resolution, g.facts)
    values, basis = guide_features(stats, g.resolution, g.facts, GuideRecord(c.payload, clone=g.clone,
                                   bm25_rank=bm25.rank if bm25 is not None else None, cosine=g.cosine,
                                   hub_rate=model.page_accept_rate.get(c.page or "", 0.0)), side=side)
    out = model.decide(values) | basis
    if g.copy_share:
        out |= _copy_verdict(stats, g)
    # The rules over what it shares judge an accept the model made: not a copy, not Godot 3 code.
    if out["accepted"] and not out.get("copied_code") and not g.godot3 and (
            rule := share_rule(stats, values, basis, side, g.resolution, g.min_specificity)) is not None:
        out["accepted"] = False
        out.update(rule)
    return out, _guide_reasons(model, out, basis, g.min_specificity)


def _copy_verdict(stats: DocsApiStats, g: GuideInput) -> dict[str, bool]:
    """`accepted` and `copied_code` when the record's code is what the chunk copies, `copy_unanchored` when it would
    be but for a copy that keeps nothing of the chunk's own (`copied_shares`); {} otherwise."""
    # Each line of the record copied once: the clone ratio lets one record line stand for many chunk lines.
    code = record_code(g.candidate.payload)
    api_names = stats.code_api_names(code, frozenset(record_api(g.candidate.payload)["code_declares"]))
    share, loose = copied_shares(g.facts.text, code, CopyNames(g.renameable, api_names=api_names, renames=g.renames,
                                 hub_names=stats.hub_names))
    if share >= g.copy_share:
        return {"accepted": True, "copied_code": True}
    if loose >= g.copy_share:
        return {"copy_unanchored": True}
    return {}


def _guide_reasons(model: GuideModel, out: dict[str, Any], basis: dict[str, Any], min_specificity: float) -> list[str]:
    """The reasons to reject a guide, given its verdict: contradictions first, then the share rule or the model's P."""
    reasons = contradictions(basis, copied=bool(out.get("copied_code")))
    if out.get("nothing_shared"):
        reasons.append("nothing shared: the record shares no API, class or callback with the chunk (its text's likeness alone)")
    if g := out.get("generic_only"):
        reasons.append(f"generic only: what the record shares with the chunk is all generic (the most specific, "
                       f"{g['most_specific']}, weighs {g['specificity']:.2f} < {min_specificity:.2f})")
    if not out["accepted"] and not any(out.get(rule) for rule in GUIDE_SHARE_RULES):
        top = sorted(((v, f) for f, v in out["contributions"].items() if v), reverse=True)[:CONTRIBUTIONS_CITED]
        reasons.append(f"model: P(direct) {out['p']:.2f} < {model.threshold:.2f}"
                       + (f" ({', '.join(f'{f} {v:+.2f}' for v, f in top)})" if top else " (no shared API)"))
    return reasons


def guide_rule(model: dict) -> str:
    """The rule that rejected a guide the model decides: a rule over what it shares, or the model's P."""
    return next((name for name in GUIDE_SHARE_RULES if model.get(name)), GUIDE_MODEL)


def guide_overrule(rules_decision: Decision, model: dict[str, Any], ruled: list[str], facts: Collection[str]) -> Decision:
    """The guide model's decision (`decide_guide`: its trace `model` and the reasons it rejects for) over the rule
    tables' `rules_decision`: of the rules that rejected only the facts (`facts`: FACT_RULES) stay. It is decided by
    the first rule that rejects it, else `copied_code` (the chunk copies its code) or `guide_model` (P)."""
    kept = [(name, why) for name, why in zip(rules_decision.rules, rules_decision.reasons) if name in facts]
    rules = tuple(name for name, _ in kept) + ((guide_rule(model),) if ruled else ())
    reasons = tuple(why for _, why in kept) + tuple(ruled)
    rule = rules[0] if rules else COPIED_CODE if model.get("copied_code") else GUIDE_MODEL
    return rules_decision.overruled(rule, accepted=not reasons, reasons=reasons, rules=rules, model=model)
