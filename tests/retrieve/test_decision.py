"""One decision per record: a frozen `Decision` made by the rule tables, each overrule a new Decision under its own
rule that keeps the one it overruled, and the candidate's verdict and reason derived from the last one in one place.
The rule that decided travels in the result JSON (HTTP, MCP, the page) and in the why-not."""
from __future__ import annotations

import pydantic
import pytest

from conftest import REFERENCE_CHUNK
from godot_rag.formats import record_rows
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.engine.decision import Decision
from godot_rag.retrieve.engine.types import Candidate, RetrieveResult
from godot_rag.retrieve.evidence.decision import decided, reason_of
from godot_rag.retrieve.evidence.guide_decision import guide_overrule
from godot_rag.retrieve.explain.why import why


def _rejected_by_rules() -> Decision:
    return Decision(accepted=False, rule="weak_only", confidence=0.3, reasons=("only weak evidence", "contradiction: X"),
                    rules=("weak_only", "api_contradiction"))


def test_a_decision_is_frozen():
    d = Decision(accepted=True, rule="resolved_api", confidence=0.9)
    with pytest.raises(pydantic.ValidationError):
        d.accepted = False  # type: ignore[misc]
    assert hash(Decision(accepted=True, rule="call", confidence=0.5)) == hash(Decision(accepted=True, rule="call",
                                                                                       confidence=0.5))


def test_an_overrule_is_a_new_decision_under_its_rule_that_keeps_the_one_it_overruled():
    first = Decision(accepted=True, rule="resolved_api", confidence=0.9)
    second = first.overruled("copied_page", accepted=False, reason="the chunk copies P", copied_from="P")
    assert first.accepted and first.overrules is None and first.reasons == ()  # the first is left as it was
    assert (second.accepted, second.rule, second.overrules, second.copied_from) == (False, "copied_page", first, "P")
    assert second.reasons == ("the chunk copies P",) and second.rules == ("copied_page",)
    assert second.rule_chain == ["resolved_api", "copied_page"] and list(second.chain()) == [second, first]
    # A decision made again from the rule tables replaces the old one under the overrule's name (a finding that
    # follows its mapping after the judge).
    again = Decision(accepted=False, rule="no_accepted_mapping", confidence=0.0, rules=("no_accepted_mapping",))
    followed = first.replaced_by(again, "follows_mapping")
    assert followed.rule == "follows_mapping" and followed.overrules is first and followed.rules == again.rules


def test_the_guide_model_overrules_the_rule_tables_keeping_only_the_facts():
    rules = _rejected_by_rules()
    accepted = guide_overrule(rules, {"p": 0.3, "threshold": 0.5, "copied_code": True}, [], set())
    assert accepted.accepted and accepted.rule == "copied_code" and accepted.overrules is rules
    assert accepted.reasons == accepted.rules == ()
    fact = guide_overrule(rules, {"p": 0.9, "threshold": 0.5}, [], {"api_contradiction"})
    assert not fact.accepted and fact.rule == "api_contradiction" and fact.reasons == ("contradiction: X",)
    model = guide_overrule(rules, {"p": 0.1, "threshold": 0.5}, ["model: P(direct) 0.10 < 0.50"], {"api_contradiction"})
    assert model.rules == ("api_contradiction", "guide_model") and model.rule == "api_contradiction"
    shared = guide_overrule(rules, {"p": 0.9, "threshold": 0.5, "nothing_shared": True}, ["nothing shared"], set())
    assert shared.rule == "nothing_shared" and shared.model == {"p": 0.9, "threshold": 0.5, "nothing_shared": True}


def test_the_verdict_and_reason_are_derived_from_the_last_decision():
    c = Candidate(table="docs_chunks", id="x#000", payload={})
    rejected = decided(c, _rejected_by_rules())
    assert (rejected.verdict, rejected.reason) == ("reject", "only weak evidence; contradiction: X")
    assert c.decision is None and c.verdict is None  # a copy: the candidate handed in is left alone
    kept = Decision(accepted=True, rule="guide_model", confidence=0.7, model={"p": 0.71, "threshold": 0.5,
                                                                              "shared_classes": ["Timer"]})
    assert reason_of(kept) == "guide model: P(direct) 0.71 >= 0.50, shared = Timer"
    judged = kept.overruled("judge", True, confidence=0.6, detail="P(yes) 0.9 >= threshold 0.5 (request)")
    assert reason_of(judged) == f"{reason_of(kept)}; judge: P(yes) 0.9 >= threshold 0.5 (request)"
    no = kept.overruled("judge", False, reason="judge: P(yes) 0.2 < threshold 0.5", detail="P(yes) 0.2 < threshold 0.5")
    assert decided(c, no).reason == "judge: P(yes) 0.2 < threshold 0.5" and no.overrules is kept


def test_the_rule_that_decided_is_in_the_result_json_the_records_and_the_why_not(retriever):
    res = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10), explain=True)
    every = res.results + res.rejected + res.cut
    assert every and all(c.decision is not None and c.reason == reason_of(c.decision) for c in every)
    assert all(c.verdict == ("accept" if c.decision.accepted else "reject") for c in every)
    as_json = res.model_dump(mode="json")
    assert all(c["decision"]["rule"] for c in as_json["results"] + as_json["rejected"])
    back = RetrieveResult.model_validate(as_json)  # a cached or remote result: the same decisions, typed
    assert [c.decision for c in back.results] == [c.decision for c in res.results]
    assert [row["rule"] for row in record_rows(res, None)] == [c.decision.rule for c in res.results]
    # A rejected record was rejected by a named rule; the why-not names it after the reason.
    lost = next(c for c in res.rejected if c.table == "docs_chunks")
    (w,) = [r for r in why(res, lost.id) if r.table == lost.table]
    assert w.rule == lost.decision.rule and f"(rule {lost.decision.rule})" in w.verdict
    assert w.rule_chain[-1] == w.rule
    # A rule-table decision overruled later keeps it: a copied page's overrule names what it overruled.
    chains = [c.decision.rule_chain for c in every if c.decision.overrules is not None]
    assert all(len(chain) >= 2 for chain in chains)
