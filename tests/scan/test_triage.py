"""What a scan reports: stable SARIF fingerprints, `--baseline`, and inline suppression. The directives and the
baseline reader on their own, then real scans of a Godot 3 script through F on the fixture database (the real
ingest, load and embedder)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from godot_rag.scan.run import ScanError, ScanOptions, run_scan
from godot_rag.scan.triage import (
    FINGERPRINT_KEY,
    BaselineError,
    base_fingerprint,
    parse_suppressions,
    read_baseline,
    suppression,
)

GODOT3 = ('extends KinematicBody2D\n\nfunc _physics_process(delta):\n\tmove_and_slide(Vector2())\n'
          '\tyield(get_tree(), "idle_frame")\n')
YIELD = "yield_instead_of_await"


# -- the directives and the baseline file -----------------------------------------------------------
def test_directives_on_the_line_the_line_above_and_the_file():
    text = ('extends Node  # godot-rag: ignore[godot3_class_name]\n# godot-rag: ignore\nvar a = 1\n'
            'var s = "# godot-rag: ignore-file"\n# godot-rag: ignore-file[tool_keyword, export_keyword]\n')
    found = parse_suppressions(text)
    assert found == {"lines": {"1": ["godot3_class_name"], "2": ["*"]}, "file": ["tool_keyword", "export_keyword"]}
    assert suppression(found, "godot3_class_name", 1) == "line 1"
    assert suppression(found, "onready_keyword", 1) is None
    assert suppression(found, "anything", 3) == "line 2"  # the line above
    assert suppression(found, "anything", 4) is None  # two lines below: not covered; a string holds no directive
    assert suppression(found, "export_keyword", 99) == "file"
    assert parse_suppressions("var x = 1\n") == {}


def test_the_fingerprint_ignores_the_line_number_and_the_indentation():
    finding = {"label": YIELD, "file": "a.gd", "line": 5, "evidence": {"code": "yield(get_tree(),  'x')",
                                                                        "literal": "yield"}, "mappings": []}
    moved = finding | {"line": 9, "evidence": {"code": "  yield(get_tree(), 'x')", "literal": "yield"}}
    assert base_fingerprint(finding) == base_fingerprint(moved)
    assert base_fingerprint(finding) != base_fingerprint(finding | {"file": "b.gd"})
    assert base_fingerprint(finding) != base_fingerprint(finding | {"label": "other"})


@pytest.mark.parametrize("content, says", [
    ("{not json", "the baseline is not SARIF JSON (line 1"),
    ("[1, 2]", "the baseline is not a SARIF log (no list of runs)"),
    (b"\xff\xfe", "the baseline is not SARIF JSON (not UTF-8 text)"),
])
def test_a_bad_baseline_is_one_line_naming_the_file(tmp_path, content, says):
    path = tmp_path / "previous.sarif"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(BaselineError) as err:
        read_baseline(path)
    assert str(err.value).startswith(f"{path}: {says}") and "\n" not in str(err.value)
    with pytest.raises(BaselineError, match="cannot read the baseline"):
        read_baseline(tmp_path / "missing.sarif")


def test_the_cli_rejects_a_bad_baseline_before_scanning(tmp_path):
    game = tmp_path / "game"
    game.mkdir()
    (game / "player.gd").write_text(GODOT3)
    bad = tmp_path / "previous.sarif"
    bad.write_text("not sarif")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), GODOT_RAG_DATA=str(tmp_path / "no-database"))
    r = subprocess.run([sys.executable, "-m", "godot_rag.cli", "scan", str(game), "--baseline", str(bad), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"error: {bad}: the baseline is not SARIF JSON (line 1: Expecting value)"


# -- real scans -------------------------------------------------------------------------------------
def scan_text(retriever, tmp_path, name: str, text: str, **kw):
    """A Godot 3 project holding `player.gd` = `text`, scanned through F; (result, its SARIF results)."""
    game = tmp_path / name
    game.mkdir()
    (game / "project.godot").write_text("config_version=4\n")
    (game / "player.gd").write_text(text)
    result = run_scan(ScanOptions(root=game, out=tmp_path / f"{name}-out", cache=tmp_path / "cache.sqlite3",
                                  quiet=True, workers=1, **kw), retriever=retriever)
    return result, json.loads((result.out / "findings.sarif").read_text())["runs"][0]["results"]


def prints(results) -> dict[str, int]:
    return {r["partialFingerprints"][FINGERPRINT_KEY]: r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in results}


def test_fingerprints_survive_a_line_inserted_above(retriever, tmp_path):
    _, before = scan_text(retriever, tmp_path, "before", GODOT3)
    _, after = scan_text(retriever, tmp_path, "after", GODOT3.replace("\nfunc", "\n# a new comment\nfunc"))
    assert len(before) >= 2 and YIELD in {r["ruleId"] for r in before}
    assert prints(before).keys() == prints(after).keys()  # the same fingerprints...
    moved = {fp: (line, prints(after)[fp]) for fp, line in prints(before).items() if line > 1}
    assert moved and all(new == old + 1 for old, new in moved.values())  # ...on the lines that moved down


def test_a_baseline_reports_only_new_findings_and_counts_the_rest(retriever, tmp_path):
    first, results = scan_text(retriever, tmp_path, "first", GODOT3)
    again, _ = scan_text(retriever, tmp_path, "again", GODOT3, baseline=first.out / "findings.sarif")
    assert again.findings == [] and again.summary["findings"]["baselined"] == len(results)
    grown = GODOT3 + '\nfunc _ready():\n\tyield(get_tree().create_timer(1.0), "timeout")\n'
    later, new = scan_text(retriever, tmp_path, "later", grown, baseline=first.out / "findings.sarif")
    assert [(f["label"], f["line"]) for f in later.findings] == [(YIELD, 8)]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in new] == [8]
    assert later.summary["findings"]["baselined"] == len(results)


def test_a_bad_baseline_stops_the_scan(retriever, tmp_path):
    bad = tmp_path / "previous.sarif"
    bad.write_text("{}")
    with pytest.raises(ScanError, match="the baseline is not a SARIF log"):
        scan_text(retriever, tmp_path, "bad", GODOT3, baseline=bad)


def test_inline_suppression_is_counted_and_marked_in_sarif(retriever, tmp_path):
    _, plain = scan_text(retriever, tmp_path, "plain", GODOT3)
    ignored = GODOT3.replace('"idle_frame")', f'"idle_frame")  # godot-rag: ignore[{YIELD}]')
    result, results = scan_text(retriever, tmp_path, "line", ignored)
    assert YIELD not in {f["label"] for f in result.findings}
    assert result.summary["findings"]["suppressed"] == 1
    assert result.summary["findings"]["total"] == len(plain) - 1
    (marked,) = [r for r in results if r.get("suppressions")]
    assert marked["ruleId"] == YIELD and marked["suppressions"][0]["kind"] == "inSource"
    assert len(results) == len(plain)  # SARIF keeps it, marked
    rows = (result.out / "findings.jsonl").read_text().splitlines()
    assert YIELD not in {json.loads(r)["label"] for r in rows}
    whole, results = scan_text(retriever, tmp_path, "file", "# godot-rag: ignore-file\n" + GODOT3, fail_on="error")
    assert whole.findings == [] and whole.summary["findings"]["suppressed"] == len(plain) == len(results)
    assert not whole.failed and "suppressed inline" in _summary_text(whole.summary)


def _summary_text(summary: dict) -> str:
    from godot_rag.scan.summary import summary_text

    return summary_text(summary)
