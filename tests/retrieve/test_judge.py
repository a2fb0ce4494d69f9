"""The judge's calibration without a model: ROC AUC, the threshold rule, the confidence band, the
calibration store and the judge set's errors. The model itself is tested in test_llm.py."""
import json

import pytest

from godot_rag.eval.judge_calibration import (
    JudgeSetError,
    choose_threshold,
    confidence_band,
    decide,
    read_judge_set,
    roc_auc,
)
from godot_rag.records import model_text
from godot_rag.retrieve.engine.config import ConfigError, RetrieveConfig
from godot_rag.retrieve.engine.decision import Decision
from godot_rag.retrieve.engine.trace import ValidateInfo
from godot_rag.retrieve.engine.types import Candidate
from godot_rag.retrieve.evidence.decision import decided, validate_info
from godot_rag.retrieve.evidence.judge import asked_occurrence, table_calibration
from godot_rag.retrieve.evidence.judge_questions import focused_text, numbered, occurrence_question, prompt_id
from godot_rag.store import calibration


def test_roc_auc_is_mann_whitney_with_ties_half():
    assert roc_auc([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1]) == 1.0
    assert roc_auc([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]) == 0.0
    assert roc_auc([1, 0], [0.5, 0.5]) == 0.5
    assert roc_auc([1, 1], [0.5, 0.6]) is None  # no negatives: nothing to separate


def test_threshold_loses_at_most_max_loss_of_the_positives():
    labels = [1] * 50 + [0] * 50
    scores = [0.5 + i / 100 for i in range(50)] + [i / 100 for i in range(50)]
    t = choose_threshold(labels, scores, 0.02)
    assert t["threshold"] == 0.51 and t["positives_lost"] == 1 and t["negatives_removed"] == 50
    assert choose_threshold(labels, scores, 1.0)["threshold"] == 0.99  # all may be lost: no crash
    assert decide(labels, scores, 0.02, 0.7, 0.2)["mode"] == "decide"


def test_a_judge_that_separates_nothing_may_only_annotate():
    labels = [1, 0] * 30
    scores = [0.5] * 60
    d = decide(labels, scores, 0.02, 0.7, 0.2)
    assert d["auc"] == 0.5 and d["mode"] == "annotate" and "separates nothing" in d["why"]


def test_confidence_band_spans_the_bins_where_the_judge_separates():
    pairs, scores = [], []
    for i in range(40):  # low confidence: the judge separates; high confidence: it does not
        y = i % 2
        pairs.append({"det_confidence": 0.3, "label": y}); scores.append(0.9 if y else 0.1)
        pairs.append({"det_confidence": 0.95, "label": y}); scores.append(0.5)
    band, bins = confidence_band(pairs, scores, 0.7)
    assert band == [0.3, 0.3]
    assert [b["auc"] for b in bins] == [1.0, 0.5]  # equal confidences stay in one bin


def test_calibration_store_keys_on_the_weights_hash_then_the_name(tmp_path):
    path = tmp_path / "cal.json"
    calibration.save({"model": "bundled-qwen-0.5b", "sha256": "abc", "tables": {"api_mapping": {"mode": "decide"}}}, path)
    calibration.save({"model": "openai:qwen", "sha256": None, "tables": {}}, path)
    calibration.save({"model": "renamed.gguf", "sha256": "abc", "tables": {"docs_chunks": {}}}, path)  # replaces
    entries = calibration.read(path)
    assert len(entries) == 2
    found, where, _ = calibration.find({"model": "any-name.gguf", "sha256": "abc"}, path)
    assert found["model"] == "renamed.gguf" and where == str(path)
    assert calibration.find({"model": "openai:qwen", "sha256": None}, path)[0]["model"] == "openai:qwen"
    assert calibration.find({"model": "openai:other", "sha256": None}, path)[0] is None
    bad = tmp_path / "bad.json"
    bad.write_text('{"calibrations": [{"model": 3}]}')
    with pytest.raises(calibration.CalibrationError, match=r"bad.json: calibrations\[0\]"):
        calibration.read(bad)
    for table, msg in (({"docs_chunks": 3}, "must be an object"), ({"docs_chunks": {"threshold": "0.5"}}, "threshold"),
                       ({"api_mapping": {"band": [0.1]}}, "band"), ({"api_mapping": {"mode": "reject"}}, "mode")):
        bad.write_text(json.dumps({"calibrations": [{"model": "m", "tables": table}]}))
        with pytest.raises(calibration.CalibrationError, match=msg):
            calibration.read(bad)


def test_the_judge_reads_the_record_lines_that_hold_the_shared_literals():
    rec = {"section_path": ["Player", "Moving"], "content": "Intro prose.\nvar v = Vector2.ZERO\nunrelated\nmore\n"
           'if Input.is_action_pressed("ui_right"):\n' + "filler line\n" * 60}
    shared = ["Input.is_action_pressed", "Vector2.ZERO"]
    assert focused_text("docs_chunks", rec, shared, 300).splitlines() == [
        "Player / Moving", "var v = Vector2.ZERO", "...", 'if Input.is_action_pressed("ui_right"):']
    assert focused_text("docs_chunks", rec, shared, 40) == "Player / Moving\nvar v = Vector2.ZERO"  # within the limit
    # No shared name (keywords and short names say nothing): the head, as other tables get their model text.
    assert focused_text("docs_chunks", rec, ["var x", "if"], 300) == model_text("docs_chunks", rec, 300)
    mapping = {"source_api": "Viewport", "target_api": "SubViewport", "change_type": "class_rename", "notes": "n"}
    assert focused_text("api_mapping", mapping, ["Viewport"], 300) == model_text("api_mapping", mapping, 300)


def test_a_calibration_holds_only_for_the_prompt_it_was_measured_with(tmp_path):
    path, who = tmp_path / "cal.json", {"model": "m.gguf", "sha256": "abc"}
    calibration.save({**who, "prompt": "0ld0ld0ld0ld", "tables": {}}, path)
    found, where, skipped = calibration.find(who, path, prompt_id())
    assert found is None and where is None and "0ld0ld0ld0ld" in skipped[0]
    calibration.save({**who, "prompt": prompt_id(), "tables": {}}, path)  # replaces the stale one
    assert calibration.find(who, path, prompt_id())[0]["prompt"] == prompt_id()
    assert len(calibration.read(path)) == 1
    # What ships was measured with today's questions: a prompt change must come with a new calibration.
    assert {e.get("prompt") for e in calibration.read(calibration.SHIPPED)} == {prompt_id()}


def test_what_the_judge_may_do_follows_the_calibration_and_the_request():
    assert table_calibration(None, "docs_chunks", None)["mode"] == "annotate"
    docs_only = {"tables": {"docs_chunks": {"mode": "decide", "threshold": 0.5, "band": [0, 1]}}}
    assert table_calibration(docs_only, "api_mapping", None)["calibrated"] is False  # a table it has no figures for
    cal = {"tables": {"docs_chunks": {"mode": "annotate", "threshold": None, "why": "AUC 0.55 < 0.7"}}}
    assert table_calibration(cal, "docs_chunks", None)["why"].startswith("AUC 0.55")
    assert table_calibration(cal, "docs_chunks", 0.4) == {**cal["tables"]["docs_chunks"], "calibrated": True,
                                                          "mode": "decide", "threshold": 0.4, "threshold_from": "request"}
    ok = {"tables": {"api_mapping": {"mode": "decide", "threshold": 0.31, "band": [0.0, 0.6]}}}
    assert table_calibration(ok, "api_mapping", None)["threshold_from"] == "calibration"


def test_judge_thresholds_setting_is_validated():
    assert RetrieveConfig(judge_thresholds={"docs_chunks": 0.4}).judge_thresholds == {"docs_chunks": 0.4}
    for bad in ({"docs": 0.4}, {"docs_chunks": 1.5}, {"docs_chunks": "0.4"}, {"api_mapping": float("nan")}):
        with pytest.raises(ConfigError, match="judge_thresholds"):
            RetrieveConfig(judge_thresholds=bad)


def _decided(c: Candidate, d: Decision) -> Candidate:
    """The candidate as the validate stage leaves it: its decision, verdict and reason, and the stage's info."""
    c = decided(c, d)
    c.add_stage("validate", validate_info(d))
    return c


def _mapping(occurrences, verdict="accept", confidence=0.6):
    c = Candidate(table="api_mapping", id="class_renames:Viewport->SubViewport",
                  payload={"source_api": "Viewport", "target_api": "SubViewport", "change_type": "class_rename",
                           "notes": "Viewport nodes became SubViewport"})
    accepted = verdict == "accept"
    return _decided(c, Decision.model_validate({
        "accepted": accepted, "rule": "godot3_use" if accepted else "no_godot3_use", "confidence": confidence,
        "reasons": [] if accepted else ["no occurrence is Godot 3 use"], "occurrences": occurrences}))


def test_focused_question_names_the_occurrence_and_its_line():
    occ = [{"line": 2, "col": 9, "region": "code", "status": "godot3", "why": "", "start": 20, "end": 28, "ambiguous": True}]
    c = _mapping(occ)
    assert asked_occurrence(c).line == 2
    assert asked_occurrence(_mapping(occ, verdict="reject")) is None  # the judge never accepts on its own
    # The strongest use is asked about; an accept that rests only on a comment is not asked (the question is about code).
    comment = {"line": 1, "col": 3, "region": "comment", "status": "godot3_comment", "why": "", "start": 2, "end": 10,
               "ambiguous": False}
    node = {"line": 3, "col": 2, "region": "node_path", "status": "godot3_node", "why": "", "start": 40, "end": 48,
            "ambiguous": False}
    assert asked_occurrence(_mapping([comment, node, *occ])).line == 2
    assert asked_occurrence(_mapping([comment, node])).line == 3
    assert asked_occurrence(_mapping([comment], confidence=0.5)) is None
    q = occurrence_question(c, occ[0]["line"], "\tvar v = Viewport.new()")
    assert "`Viewport` on line 2" in q and "SubViewport" in q and "var v = Viewport.new()" in q
    assert numbered("a\nb").splitlines() == ["  1| a", "  2| b"]


def test_judge_set_errors_name_file_line_and_field(tmp_path):
    f = tmp_path / "js.jsonl"
    good = {"id": "js1", "chunk_text": "x", "table": "docs_chunks", "record": "r", "label": 1, "det_confidence": 0.5}
    f.write_text(json.dumps(good) + "\n" + json.dumps({**good, "label": "yes"}) + "\n")
    with pytest.raises(JudgeSetError, match=r"js.jsonl:2: field 'label'"):
        read_judge_set(f)
    f.write_text(json.dumps({**good, "table": "api_mapping"}) + "\n")
    with pytest.raises(JudgeSetError, match=r"js.jsonl:1: field 'occurrence'"):
        read_judge_set(f)
    f.write_text("{not json\n")
    with pytest.raises(JudgeSetError, match=r"js.jsonl:1: not JSON"):
        read_judge_set(f)


def test_a_finding_follows_the_mapping_the_judge_rejected():
    from types import SimpleNamespace

    from godot_rag.gdscript.facts import parse_chunk
    from godot_rag.retrieve.engine.state import Verdicts
    from godot_rag.retrieve.engine.trace import JudgeInfo
    from godot_rag.retrieve.evidence.validate import follow_mappings

    chunk = "export var speed = 1\nfunc _ready():\n\tvar v = Viewport.new()"
    start = chunk.index("Viewport")
    occ = {"line": 3, "col": 10, "region": "code", "status": "godot3", "why": "", "start": start, "end": start + 8,
           "ambiguous": True}
    mapping = _mapping([occ])
    proto = _decided(Candidate(table="label_prototypes", id="migration:godot3_class_name",
                               payload={"task_type": "migration", "evidence_mapping_ids": [mapping.id],
                                        "validator_rules": {"must_match": [r"\bViewport\b"]}}),
                     Decision(accepted=True, rule="must_match", confidence=1.0))
    validation = SimpleNamespace(facts=parse_chunk(chunk))  # the part the validate stage provides
    kept = follow_mappings(validation, Verdicts({"api_mapping": [mapping], "label_prototypes": [proto]}))
    assert kept[0].verdict == "accept" and kept[0] is proto  # the mapping still stands: nothing changes
    rejected = mapping.derive()
    rejected.verdict = "reject"
    rejected.add_stage("judge", JudgeInfo(model="m", question="occurrence", occurrence=occ, p_yes=0.1, mode="decide",
                                          threshold=0.5, verdict_before="accept", accepted=False, confidence=0.0))
    out = follow_mappings(validation, Verdicts({"api_mapping": [rejected], "label_prototypes": [proto]}))
    assert out[0].verdict == "reject" and "no accepted api_mapping" in out[0].reason
    j = out[0].info("judge")
    assert j.question == "follows_mapping" and j.verdict_before == "accept"
    assert out[0].info("validate").verdict == "accept"  # the earlier stage's explanation is kept
    # The finding's new decision names its rule and keeps the one it overrules.
    assert out[0].decision.rule == "follows_mapping" and out[0].decision.rule_chain == ["must_match", "follows_mapping"]
    assert out[0].decision.rules == ("no_accepted_mapping",) and proto.decision.accepted


def test_cli_bad_judge_files_are_one_line_errors(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "js.jsonl"
    bad.write_text('{"id": "p1"}\n')
    r = subprocess.run([sys.executable, "-m", "godot_rag.cli", "judge", "calibrate", "--set", str(bad), "--llm-url",
                        "http://127.0.0.1:9", "--quiet"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"{bad}:1: field 'chunk_text'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    cal = tmp_path / "cal.json"
    cal.write_text("[1, 2]")
    r = subprocess.run([sys.executable, "-m", "godot_rag.cli", "retrieve", "-", "--judge-calibration", str(cal)],
                       input="func _ready():\n\tpass\n", capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "Traceback" not in r.stderr and "field 'calibrations'" in r.stderr


def test_an_annotation_changes_no_verdict_and_no_score_a_decision_does():
    from godot_rag.retrieve.engine.trace import Occurrence
    from godot_rag.retrieve.evidence.judge import JudgeJob, _judged

    def job(c, cite=False):
        return JudgeJob(c, "occurrence", Occurrence.model_validate(occ), "key", "question", cite)

    occ = {"line": 2, "col": 9, "region": "code", "status": "godot3", "why": "", "start": 20, "end": 28, "ambiguous": True}
    answer = {"model": "m", "raw": '{"answer": "no", "evidence": []}', "answer": "no", "p_yes": 0.2,
              "p_yes_source": "logits", "evidence": [], "cached": False}
    chunk = "func f():\n\tvar v = Viewport.new()"
    c = _mapping([occ], confidence=0.6)
    c.info("validate").evidence.append({"literal": "Viewport", "kind": "source_api"})
    note = _judged(job(c), answer, {"mode": "annotate", "threshold": None, "why": "AUC 0.5"}, chunk)
    assert note.verdict == "accept" and note.info("judge").confidence == 0.6 and note.info("judge").mode == "annotate"
    low = _judged(job(c), answer, {"mode": "decide", "threshold": 0.5, "threshold_from": "calibration"}, chunk)
    assert low.verdict == "reject" and low.info("judge").confidence == 0.0 and "P(yes) 0.2 < threshold 0.5" in low.reason
    request = {"mode": "decide", "threshold": 0.5, "threshold_from": "request"}
    high = _judged(job(c), dict(answer, p_yes=0.9, answer="yes"), request, chunk)
    assert high.verdict == "accept" and high.info("judge").confidence == 0.9
    # Each of the judge's decisions is a new one under its rule, over the validator's, which it keeps.
    assert low.decision.rule == high.decision.rule == "judge" and low.decision.overrules == c.decision
    assert high.reason == f"{c.reason}; judge: P(yes) 0.9 >= threshold 0.5 (request)" and note.decision is c.decision
    rejected = _mapping([occ], verdict="reject", confidence=0.0)
    never = _judged(job(rejected), dict(answer, p_yes=0.99, answer="yes"), {"mode": "decide", "threshold": 0.5}, chunk)
    assert never.verdict == "reject"  # the judge never accepts on its own
    # Asked to cite, a yes needs a verified literal when the deterministic layer has none; not asked, P(yes) decides.
    bare, cites = _mapping([occ], confidence=0.6), dict(answer, p_yes=0.9, answer="yes", evidence=["made_up"])
    decide = {"mode": "decide", "threshold": 0.5, "threshold_from": "request"}
    asked = _judged(job(bare, cite=True), cites, decide, chunk)
    assert asked.verdict == "reject" and asked.info("judge").cited_hallucinated == ["made_up"]
    assert _judged(job(bare), dict(cites, evidence=[]), decide, chunk).verdict == "accept"


def test_the_judge_is_not_asked_about_the_page_the_chunk_copies():
    """Guides that show nothing more than the copied page were rejected for it; a judge's reject of that
    page would leave the chunk without a guide, so its records are kept out of the docs questions."""
    from godot_rag.retrieve.engine.state import QueryState
    from godot_rag.retrieve.evidence.judge import docs_targets

    def doc(cid, copy_source):
        c = Candidate(table="docs_chunks", id=cid, payload={}, verdict="accept", score=1.0)
        c.add_stage("validate", ValidateInfo(verdict="accept", accepted=True, confidence=0.9, evidence=[], contradictions=[],
                                             reasons=[], copy_source=copy_source))
        return c

    ctx = QueryState(chunk="x", strategy="F", cfg=RetrieveConfig(), resources=None)
    asked = docs_targets(ctx, [doc("tutorials/copied#000", True), doc("classes/class_node#001", None)], {"mode": "decide"})
    assert [c.id for c in asked] == ["classes/class_node#001"]
