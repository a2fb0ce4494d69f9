"""F's `check` stage on the real fixture database: the API check's findings accept the label_prototypes derived from
the class reference, with their trace; only the check decides them; the cut keeps them all; the prompt, the
explain table and the why-not read them."""
from __future__ import annotations

from godot_rag.evidence_prompt import render_prompt
from godot_rag.render import render_table
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.engine.types import Candidate
from godot_rag.retrieve.evidence.validate import DERIVED_REASON, prototype_evidence
from godot_rag.retrieve.explain.why import why

WRONG = ('extends Node\n\nfunc _process(delta):\n\tif Input.is_action_presed("jump"):\n\t\tpass\n'
         '\tif Input.is_action_pressed("fire", true, 3):\n\t\tpass\n\tGGT.change_scene("res://x.tscn")\n')
CLEAN = 'extends Node\n\nfunc _process(delta):\n\tif Input.is_action_pressed("jump"):\n\t\tpass\n'
CFG = RetrieveConfig(k=5, reranker="none")


def accepted_findings(res):
    return {c.id: c for c in res.results if c.table == "label_prototypes" and c.info("check") is not None}


def test_each_finding_accepts_its_derived_record_with_its_trace(retriever):
    res = retriever.retrieve(WRONG, "F", CFG)
    assert "check" in res.trace.stage_list
    found = accepted_findings(res)
    assert set(found) == {"api:missing_engine_member", "api:wrong_argument_count"}
    missing = found["api:missing_engine_member"].info("check").findings[0]
    assert (missing.kind, missing.line, missing.api, missing.receiver) == (
        "missing_engine_member", 4, "Input.is_action_presed", "class")
    assert "Input.is_action_pressed" in missing.suggestions and missing.entry["url"].endswith("class_input.html")
    count = found["api:wrong_argument_count"].info("check").findings[0]
    assert count.arguments == 3 and "is_action_pressed(" in count.signature and count.line == 6
    c = found["api:missing_engine_member"]
    assert c.verdict == "accept" and c.group == "api_check" and c.info("score").confidence_from == "check"
    log = next(s.info for s in res.trace.stages if s.stage == "check")
    assert log["findings"] == 2 and log["checked"] >= 1
    assert any(u.startswith("GGT") for u in log["undecided_uses"])  # an unresolved receiver is said, not guessed


def test_only_the_check_decides_a_derived_record(retriever):
    payload = retriever.records("label_prototypes")["api:missing_engine_member"]
    assert payload["validator_rules"]["must_match"]  # a pattern any member access matches
    res = retriever.retrieve(CLEAN, "F", CFG)
    assert accepted_findings(res) == {}
    assert not [c for c in res.results if c.id.startswith("api:")]
    info = prototype_evidence(None, Candidate(table="label_prototypes", id=payload["prototype_id"], payload=payload), {})  # type: ignore[arg-type]
    assert not info.accepted and info.reasons == (DERIVED_REASON,) and info.rule == "reference_finding"


def test_the_cut_keeps_every_finding(retriever):
    res = retriever.retrieve(WRONG, "F", RetrieveConfig(k=1, reranker="none"))
    assert len(accepted_findings(res)) == 2
    ranks = [c.info("cut").rank for c in res.results if c.table == "label_prototypes"]
    assert ranks[:2] == [1, 2]


def test_prompt_explain_and_why_read_the_findings(retriever):
    res = retriever.retrieve(WRONG, "F", CFG)
    text = render_prompt(res, 2000)
    assert text.startswith("Reviewer findings:\n- [error, line 4] Input has no member 'is_action_presed'")
    assert "Action: Use `Input.is_action_pressed`" in text and "class_input.html" in text
    assert "check: missing_engine_member@4" in render_table(res, explain=True)
    (record,) = why(res, "api:wrong_argument_count")
    assert record.outcome == "returned" and any(s.stage == "check" and s.status == "reached" for s in record.steps)
    clean = render_prompt(retriever.retrieve(CLEAN, "F", CFG), 2000)
    assert ("Checked against the class reference:\n- No problem found: no Godot 3 API; 1 engine API use(s) resolved in "
            "Godot 4.7; none removed") in clean
    # the verdict is the prompt's last section, nearest the question, and says nothing of undecided uses
    verdict = clean.split("Checked against the class reference:")[1]
    assert not any(title in verdict for title in ("Godot 4 class reference:", "Godot 4 guides:")) and "not decided" not in verdict
