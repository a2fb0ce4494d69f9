"""One record's decision: accepted or not, the named rule that decided, and what the decision rests on.

A `Decision` is frozen. The evidence functions make one from their rule tables (`validate.mapping_evidence`,
`validate.prototype_evidence`, `docs_evidence.docs_evidence`); an overrule (a copied page, the same evidence again,
another member's entry, the guide model, the judge, a finding following its mapping) makes a new one under its own
rule that keeps the decision it overruled (`overrules`), so the chain can be read back. The candidate's `verdict`
and `reason` are derived from the last decision in one place (`evidence/decision.py`). It lives in the engine, below
the stages, because the result model (`Candidate.decision`) carries it.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict

from .trace import Contradiction, EvidenceItem, Occurrence


class Decision(BaseModel):
    """accept / reject, the named rule that decided (an accept's rule, or the first that rejected) and its basis."""
    model_config = ConfigDict(frozen=True, extra="forbid")
    accepted: bool
    rule: str  # the rule that decided: a rule table's name (rules.md) or an overrule's
    confidence: float
    evidence: tuple[EvidenceItem, ...] = ()
    contradictions: tuple[Contradiction, ...] = ()
    reasons: tuple[str, ...] = ()  # why it is rejected, one per rule that fired (empty for an accept)
    rules: tuple[str, ...] = ()  # every rule that rejected it, in order
    occurrences: tuple[Occurrence, ...] | None = None  # api_mapping: each use of the old name, decided
    page_class: str | None = None  # docs_chunks: the class whose reference page holds the record
    clone_lines: tuple[int, ...] | None = None  # docs_chunks: the chunk's lines (1-based) the record's code matches
    model: dict[str, Any] | None = None  # guides: the fitted model's features, contributions, P(direct), threshold
    copy_source: bool | None = None  # docs_chunks: the record's page is one the chunk copies (a mark, no overrule)
    copied_from: str | None = None  # rule copied_page: the page the chunk copies, which shows all this record shows
    repeats: str | None = None  # rule same_evidence: the page (or record) retrieved before it that shows all it shows
    detail: str | None = None  # rule judge: the judge's P(yes) against its threshold
    overrules: Decision | None = None  # the decision this one overruled

    def overruled(self, rule: str, accepted: bool, reason: str | None = None, **changes: Any) -> Decision:
        """A new decision under `rule` that keeps this one (`overrules`). A `reason` is added to the reasons and
        `rule` to the rules; `changes` set other fields (the overrule's own facts)."""
        update: dict[str, Any] = {"accepted": accepted, "rule": rule, "overrules": self}
        if reason is not None:
            update |= {"reasons": (*self.reasons, reason), "rules": (*self.rules, rule)}
        return self.model_copy(update=update | changes)

    def replaced_by(self, new: Decision, rule: str) -> Decision:
        """`new`, made again from the rule tables, as the decision of `rule` over this one (`overrules`)."""
        return new.model_copy(update={"rule": rule, "overrules": self})

    def marked(self, **changes: Any) -> Decision:
        """The same decision with a mark that decides nothing by itself (`copy_source`)."""
        return self.model_copy(update=changes)

    def chain(self) -> Iterator[Decision]:
        """This decision, then each one it overruled, back to the rule tables' own."""
        d: Decision | None = self
        while d is not None:
            yield d
            d = d.overrules

    @property
    def rule_chain(self) -> list[str]:
        """The deciding rules from the first decision to this one (`low_confidence -> copied_page`)."""
        return [d.rule for d in self.chain()][::-1]
