"""The one place a record's `Decision` (engine/decision.py) becomes its candidate's verdict and reason
(`decided`), and the validate stage's trace info (`validate_info`)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ..engine.decision import Decision
from ..engine.trace import ValidateInfo
from ..engine.types import Candidate

LITERALS_SHOWN = 8  # evidence literals an accept's reason names
JUDGE_RULE = "judge"  # the Qwen judge's overrule (judge.py)
RANKER_RULE = "ranker"  # the learned ranker's overrule (ranker.py)
CONTRADICTED_RULE = "contradicted"  # ranker.py: an accept that a contradiction marks, rejected before the model


class DocsFigures(NamedTuple):
    """What the trace shows of a docs record's evidence beside its decision: the weights for and against, the strong
    items, the chunk's and the record's cosine."""
    support: float
    against: float
    strong: int
    cosine: float | None


class DocsVerdict(NamedTuple):
    """`docs_evidence`'s answer: the decision of the rule tables (and the guide model), and the figures shown."""
    decision: Decision
    figures: DocsFigures


def model_shared(m: dict) -> list[tuple[str, str]]:
    """(kind, name) of what the guide model's basis says a guide shares with the chunk, in the basis's order: API,
    globals, callbacks, classes, constructs."""
    return ([("api", e["api"]) for e in m.get("shared_api") or []]
            + [("global", e["api"]) for e in m.get("shared_globals") or []]
            + [("callback", e["api"]) for e in m.get("shared_callbacks") or []]
            + [("class", c) for c in m.get("shared_classes") or []]
            + [("construct", e["construct"]) for e in m.get("shared_constructs") or []])


def reason_of(d: Decision) -> str:
    """The candidate's one-line reason: the evidence an accept rests on, or the reasons of a reject. An accept the
    judge kept adds its P(yes) to the reason of the decision it kept."""
    if d.rule == RANKER_RULE and d.accepted:  # an accept F's rules made too, or the ranker's own
        kept = d.overrules is not None and d.overrules.accepted
        return f"{reason_of(d.overrules)}; ranker: {d.detail}" if kept and d.overrules else f"ranker: {d.detail}"
    if d.rule == JUDGE_RULE:  # the judge keeps an accept (its reason and P(yes)), or rejects it on P(yes)
        return f"{reason_of(d.overrules)}; judge: {d.detail}" if d.accepted and d.overrules else f"judge: {d.detail}"
    if d.accepted and d.evidence and all(e.kind == "api_check" for e in d.evidence):
        return "API check: " + "; ".join(f"line {e.chunk_line}: {e.message}" for e in d.evidence if e.kind == "api_check")
    if d.accepted and (d.evidence or not d.model):
        return "direct evidence = " + ", ".join(i.literal for i in d.evidence[:LITERALS_SHOWN])
    if d.accepted:  # a guide accepted on what it shares with no literal of the chunk's to quote (a construct, `@tool`)
        m = d.model or {}
        shared = ", ".join(name for _, name in model_shared(m)[:LITERALS_SHOWN]) or "the texts' likeness"
        if m.get("copied_code"):  # accepted as a copy, whatever P says
            return f"the chunk copies the record's code; shared = {shared}"
        return f"guide model: P(direct) {m.get('p', 0.0):.2f} >= {m.get('threshold', 0.0):.2f}, shared = {shared}"
    return "; ".join(d.reasons)


def decided(c: Candidate, d: Decision) -> Candidate:
    """A copy of the candidate under decision `d`: its decision, and the verdict and reason derived from it."""
    c = c.derive()
    c.decision = d
    c.verdict = "accept" if d.accepted else "reject"
    c.reason = reason_of(d)
    return c


def validate_info(d: Decision, figures: DocsFigures | None = None) -> ValidateInfo:
    """The validate stage's trace of a decision (`figures`: a docs record's, which also lists its rules)."""
    docs: dict[str, Any] = {} if figures is None else {**figures._asdict(), "rules": list(d.rules), "page_class": d.page_class,
                                       "clone_lines": list(d.clone_lines or ()), "model": d.model}
    return ValidateInfo(verdict="accept" if d.accepted else "reject", accepted=d.accepted, confidence=d.confidence,
                        evidence=list(d.evidence), contradictions=list(d.contradictions), reasons=list(d.reasons),
                        occurrences=list(d.occurrences) if d.occurrences is not None else None,
                        copy_source=d.copy_source, copied_from=d.copied_from, repeats=d.repeats, **docs)
