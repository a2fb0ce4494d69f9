"""`godot-rag scan` end to end: real demo projects (../shared/realcode/godot-demo-projects) against a real
database built from all of ../shared/godot_docs (ingest + load; the embedding of a slice of the tutorials),
the real embedder, the CLI as a subprocess, the API with a zip upload, SARIF against the SARIF 2.1.0
object model, and the HTML report and the scan page in Chromium."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SHARED, ctrl_c_reaches_it, free_port, launch_chromium, wait_job
from godot_rag.scan.chunking import chunk_text
from godot_rag.scan.project import discover
from godot_rag.scan.run import ScanError, ScanInterrupted, ScanOptions, run_scan

DEMOS = SHARED / "realcode" / "godot-demo-projects"
WAYPOINTS3 = DEMOS / "godot3" / "3d" / "waypoints"
WAYPOINTS4 = DEMOS / "godot4" / "3d" / "waypoints"
EVAL3 = SHARED / "eval" / "realcode_godot3.dev.jsonl"
SYNTAX_LABELS = {"yield_instead_of_await", "export_keyword", "onready_keyword", "tool_keyword", "setget_syntax",
                 "move_and_slide_arguments", "string_signal_connection"}
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))

slow = pytest.mark.slow  # the tests that use the database built from all the pages
needs_demos = pytest.mark.skipif(not WAYPOINTS3.is_dir() or not WAYPOINTS4.is_dir(),
                                 reason="../shared/realcode/godot-demo-projects is not here")


# -- fixtures ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_db(make_database, embedder, tmp_path_factory):
    """The real records: every page of ../shared/godot_docs through ingest and load (api_mapping and
    label_prototypes complete, the whole class reference); the finding prototypes and the first 2D game
    tutorial are embedded, to keep the suite short (F's embedding list runs, with the real model)."""
    from godot_rag.ingest.pipeline import run_ingest
    from godot_rag.store.embed import embed_rows
    from godot_rag.store.load import load_jsonl

    out = tmp_path_factory.mktemp("scan-jsonl")
    run_ingest(SHARED / "godot_docs" / "pages", SHARED / "godot_docs" / "renames_3_to_4.jsonl", out, quiet=True)
    db = make_database("scan")
    load_jsonl(db, out, quiet=True)
    # every finding prototype (they are few, and F finds them through the embedding as well as BM25),
    # and one tutorial of the docs
    for prefix in ("migration:", "review:", "getting_started/first_2d_game/"):
        embed_rows(db, embedder, quiet=True, only=prefix)
    yield db
    db.stop()


@pytest.fixture(scope="module")
def real_retriever(real_db, embedder):
    from godot_rag.retrieve.pipeline import Retriever

    return Retriever(real_db, embedder=embedder)


@pytest.fixture(scope="module")
def cache_file(tmp_path_factory):
    return tmp_path_factory.mktemp("scan-cache") / "cache.sqlite3"


def scan(retriever, root, out, cache, **kw):
    return run_scan(ScanOptions(root=root, out=out, cache=cache, quiet=True, workers=1, **kw), retriever=retriever)


@pytest.fixture(scope="module")
def godot3_scan(real_retriever, cache_file, tmp_path_factory):
    return scan(real_retriever, WAYPOINTS3, tmp_path_factory.mktemp("out3"), cache_file)


def cli(*args, timeout=300):
    r = subprocess.run([sys.executable, "-m", "godot_rag.cli", "scan", *map(str, args)], capture_output=True, text=True,
                       env=ENV, timeout=timeout)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return r


def bounded_count(name: str, text: str) -> int:
    return len(re.findall(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text))


# -- project, chunking (no database) ----------------------------------------------------------------
def test_project_version_gitignore_addons_and_nested_projects(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "project.godot").write_text('config_version=4\n\n[application]\nconfig/name="Old"\n')
    (tmp_path / "a" / "main.gd").write_text("extends Node\n")
    (tmp_path / "a" / "addons" / "plug").mkdir(parents=True)
    (tmp_path / "a" / "addons" / "plug" / "p.gd").write_text("extends Node\n")
    (tmp_path / "b" / ".godot").mkdir(parents=True)
    (tmp_path / "b" / "project.godot").write_text("config_version=5\n")
    (tmp_path / "b" / "ok.gd").write_text("extends Node\n")
    (tmp_path / "b" / ".godot" / "cached.gd").write_text("extends Node\n")
    (tmp_path / "b" / ".import").mkdir()
    (tmp_path / "b" / ".import" / "x.gd").write_text("extends Node\n")
    (tmp_path / "b" / "build").mkdir()
    (tmp_path / "b" / "build" / "gen.gd").write_text("extends Node\n")
    (tmp_path / "b" / "tmp_skip.gd").write_text("extends Node\n")
    (tmp_path / "b" / ".gitignore").write_text("build/\ntmp_*.gd\n")
    (tmp_path / "loose.gd").write_text("extends Node\n")
    d = discover(tmp_path)
    got = {s.rel: s.project.godot_version for s in d.scripts}
    assert got == {"a/main.gd": "3", "b/ok.gd": "4", "loose.gd": "auto"}
    names = {p.rel: p for p in d.projects}
    assert names["a"].name == "Old" and names["a"].config_version == 4 and names["b"].config_version == 5
    assert "no project.godot" in names["."].source and d.ignored_files == 1
    assert d.skipped_dirs == {"addons/": 1, ".godot/": 1, ".import/": 1, ".gitignore": 1}
    assert "a/addons/plug/p.gd" in {s.rel for s in discover(tmp_path, include_addons=True).scripts}


GD = '''extends Node2D
# The header comment.
signal hit

export var speed = 10
onready var sprite = $Sprite


# Comment of _ready.
func _ready():
\tpass


# A lone comment that belongs to nothing.

var late_var = 1

class Inner:
\tvar x = 1


static func helper(a):
\treturn a
'''


def test_chunks_are_top_level_blocks_with_their_comments():
    fc = chunk_text(GD)
    assert fc.chunker == "tree-sitter" and fc.extends == "Node2D"
    got = [(c.kind, c.name, c.start_line, c.end_line) for c in fc.chunks]
    assert got == [("header", None, 1, 6), ("func", "_ready", 9, 11), ("declarations", None, 16, 16),
                   ("class", "Inner", 18, 19), ("func", "helper", 22, 23)]
    lines = GD.split("\n")
    for c in fc.chunks:
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])
    assert fc.chunks[1].text.startswith("# Comment of _ready.\nfunc _ready():")


def test_long_function_is_cut_at_statement_boundaries_never_mid_line():
    body = "".join(f"\tif value_{i} > {i}:\n\t\tprint(\"branch {i}\", value_{i})\n\t\tvalue_{i} = {i}\n" for i in range(60))
    text = "extends Node\n\n\nfunc big(value_0):\n" + body + "\treturn 1\n"
    fc = chunk_text(text, max_chars=600)
    parts = [c for c in fc.chunks if c.name == "big"]
    assert len(parts) > 3 and all(c.parts == len(parts) for c in parts)
    lines = text.split("\n")
    covered = []
    for c in parts:
        assert len(c.text) <= 600
        assert c.text == "\n".join(lines[c.start_line - 1:c.end_line])  # whole lines of the file
        assert c.text.split("\n")[0].lstrip().startswith(("func", "if", "return"))  # a statement starts each part
        covered += list(range(c.start_line, c.end_line + 1))
    assert covered == list(range(parts[0].start_line, parts[-1].end_line + 1))


def test_file_that_does_not_parse_is_cut_by_lines():
    text = "extends Node\n)))) ((( ]]\nfunc a():\n\tpass\n<<<< >>>> {{{\nfunc b():\n\treturn 2\n"
    fc = chunk_text(text)
    assert fc.chunker == "line-fallback"
    assert [(c.kind, c.name) for c in fc.chunks] == [("header", None), ("func", "a"), ("func", "b")]


# -- bad input: one line, exit 2, before any database --------------------------------------------
def test_usage_errors_exit_2_with_one_line(tmp_path):
    f = tmp_path / "file.gd"
    f.write_text("extends Node\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("no scripts")
    for target, text in [(f, "not a directory"), (tmp_path / "nope", "no such directory"),
                         (tmp_path / "empty", "no .gd files found")]:
        r = cli(target, "--out", tmp_path / "out", "--data-dir", tmp_path / "pg-unused", timeout=120)
        assert r.returncode == 2, (target, r.stderr)
        err = [l for l in r.stderr.splitlines() if l.startswith("error:")]
        assert len(err) == 1 and text in err[0] and str(target.name) in err[0]
    r = cli(tmp_path, "--strategy", "Q", "--data-dir", tmp_path / "pg-unused", timeout=120)
    assert r.returncode == 2 and "valid strategies" in r.stderr


def test_database_error_exits_2(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "a.gd").write_text("extends Node\n")
    r = cli(tmp_path / "p", "--out", tmp_path / "out", "--dsn", "postgresql://nobody@127.0.0.1:1/none", timeout=120)
    assert r.returncode == 2 and "error:" in r.stderr and "unreachable" in r.stderr


@slow
# -- the real scans -------------------------------------------------------------------------------
@needs_demos
def test_godot3_project_yields_migration_findings_that_match_the_port(godot3_scan):
    s = godot3_scan.summary
    assert [(p["config_version"], p["godot_version_used"]) for p in s["projects"]] == [(4, "3")]
    findings = godot3_scan.findings
    assert findings and all(f["migration"] for f in findings)
    # each finding points at the Godot 3 name in the file, with its line and column
    for f in findings:
        line = (WAYPOINTS3 / f["file"]).read_text().split("\n")[f["line"] - 1]
        assert line[f["column"] - 1:f["end_column"] - 1] == f["evidence"]["literal"], f
        assert f["severity"] == "error" and f["expected_finding"] and f["recommended_action"] and f["docs_chunk_ids"]
    # the renames are the ones the demo's own 4.0 port applied (the eval's rule) ...
    renames = {(m["id"].split(":")[0], m["source_api"], m["target_api"], f["file"]) for f in findings for m in f["mappings"]
               if not m["id"].startswith("gdscript_syntax:")}
    ported = [r for r in renames if bounded_count(r[2], (WAYPOINTS4 / r[3]).read_text()) > 0
              and bounded_count(r[1], (WAYPOINTS4 / r[3]).read_text()) < bounded_count(r[1], (WAYPOINTS3 / r[3]).read_text())]
    assert len(renames) >= 8 and len(ported) / len(renames) >= 0.85, sorted(set(renames) - set(ported))
    # ... and every gold pair of the dev set's chunks of this demo is found
    gold = {tuple(m) for line in EVAL3.read_text().splitlines() if '"rc3:3d/waypoints/' in line
            for m in json.loads(line)["relevant_mappings"]}
    found = {(t, s_, d) for t, s_, d, _ in renames}
    assert gold and gold <= found, gold - found
    assert {f["label"] for f in findings} & SYNTAX_LABELS >= {"export_keyword", "onready_keyword", "setget_syntax"}
    # the outputs
    out = godot3_scan.out
    rows = [json.loads(l) for l in (out / "chunks.jsonl").read_text().splitlines()]
    assert len(rows) == s["chunks"] and {r["file"] for r in rows} == {"camera.gd", "waypoint.gd"}
    text = (WAYPOINTS3 / "waypoint.gd").read_text().split("\n")
    for r in rows:
        assert r["chunkText"] == "\n".join(text[r["start_line"] - 1:r["end_line"]]) or r["file"] != "waypoint.gd"
        assert all(rec["verdict"] == "accept" and set(rec["trace"]) <= {"validate", "api"} and rec["payload"]
                   for rec in r["results"])
    assert sum(1 for _ in (out / "findings.jsonl").open()) == len(findings)


@slow
@needs_demos
def test_godot4_project_yields_no_migration_finding(real_retriever, cache_file, tmp_path):
    res = scan(real_retriever, WAYPOINTS4, tmp_path / "out", cache_file)
    s = res.summary
    assert [(p["config_version"], p["godot_version_used"]) for p in s["projects"]] == [(5, "4")]
    assert s["chunks"] >= 8 and s["files_scanned"] == 3
    assert [f for f in res.findings if f["migration"]] == []
    rows = [json.loads(l) for l in (tmp_path / "out" / "chunks.jsonl").read_text().splitlines()]
    assert all(rec["table"] != "api_mapping" for r in rows for rec in r["results"])
    assert sum(1 for r in rows for rec in r["results"] if rec["table"] == "docs_chunks") >= 5  # evidence came back
    assert all(r["config"]["godot_version"] == "4" for r in rows)


@slow
@needs_demos
def test_sarif_validates_against_the_sarif_2_1_0_model(godot3_scan):
    sarif_pydantic = pytest.importorskip("sarif_pydantic", reason="needs the test extra (sarif-pydantic)")
    raw = json.loads((godot3_scan.out / "findings.sarif").read_text())
    log = sarif_pydantic.Sarif.model_validate(raw)
    assert log.version == "2.1.0" and raw["$schema"].endswith("sarif-2.1.0.json")

    def no_extras(model, where="sarif"):  # the models allow extra keys; ours must all be SARIF's own
        from pydantic import BaseModel

        assert not model.model_extra, (where, model.model_extra)
        for name, value in model:
            for i, v in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(v, BaseModel):
                    no_extras(v, f"{where}.{name}[{i}]")
                elif isinstance(v, dict):
                    for k, vv in v.items():
                        if isinstance(vv, BaseModel):
                            no_extras(vv, f"{where}.{name}.{k}")

    no_extras(log)
    run = log.runs[0]
    rules = [r.id for r in run.tool.driver.rules]
    assert sorted(rules) == sorted({f["label"] for f in godot3_scan.findings})  # one rule per label
    assert len(run.results) == len(godot3_scan.findings)
    for res, f in zip(run.results, godot3_scan.findings):
        assert rules[res.rule_index] == res.rule_id == f["label"] and res.level.value == "error"
        region = res.locations[0].physical_location.region
        assert (region.start_line, region.start_column) == (f["line"], f["column"])
        assert res.locations[0].physical_location.artifact_location.uri == f["file"]


@slow
@needs_demos
def test_report_md_has_the_same_findings(godot3_scan):
    md = (godot3_scan.out / "report.md").read_text()
    assert f"## Findings ({len(godot3_scan.findings)})" in md
    for f in godot3_scan.findings:
        assert f"{f['file']}:{f['line']}:{f['column']}" in md
    assert "config_version=4: Godot 3.x" in md and "| `godot3_property_name` | error | migration |" in md


# -- bad files, exit codes, cache ----------------------------------------------------------------
def make_project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "project.godot").write_text("config_version=5\n")
    (root / "player.gd").write_text("extends Node2D\n\n\nfunc _ready():\n\tvar t = Timer.new()\n\tadd_child(t)\n\tt.start()\n\n\n"
                                    "func _process(delta):\n\tposition.x += delta\n")
    (root / "old.gd").write_text("extends Node\n\n\nfunc _ready():\n\tyield(get_tree().create_timer(1.0), \"timeout\")\n"
                                 "\tvar x = rand_range(0, 1)\n\tprint(x)\n")
    (root / "latin1.gd").write_bytes("extends Node\n# caf\xe9\nfunc f():\n\tpass\n".encode("latin-1"))
    (root / "broken.gd").write_text("extends Node\n)))) ((( ]]\nfunc a():\n\tprint(\"a\")\n")
    return root

@slow

def test_cli_bad_file_listed_and_skipped_exit_codes_and_fallback(real_db, tmp_path):
    proj = make_project(tmp_path / "proj")
    out = tmp_path / "out"
    cache = tmp_path / "cache.sqlite3"
    common = [proj, "--out", out, "--data-dir", real_db.data_dir, "--cache", cache, "--quiet", "--workers", "1"]
    r = cli(*common, "--fail-on", "error")
    assert r.returncode == 1, r.stderr[-1500:]
    assert "latin1.gd" in r.stdout and "not UTF-8" in r.stdout and "FAIL" in r.stdout
    summary = json.loads((out / "scan.json").read_text())
    assert summary["unreadable"] == [{"file": "latin1.gd", "error": "not UTF-8 (byte 18, line 2)"}]
    assert summary["line_fallback"] == ["broken.gd"] and summary["files_scanned"] == 3
    rows = [json.loads(l) for l in (out / "chunks.jsonl").read_text().splitlines()]
    assert {r_["file"] for r_ in rows} == {"player.gd", "old.gd", "broken.gd"}
    findings = [json.loads(l) for l in (out / "findings.jsonl").read_text().splitlines()]
    assert {(f["file"], f["line"], f["label"]) for f in findings} >= {("old.gd", 5, "yield_instead_of_await"),
                                                                      ("old.gd", 6, "godot3_method_name")}
    report = (out / "report.html").read_text()
    assert "latin1.gd" in report and "not UTF-8" in report and "does not parse: its chunks were cut by lines" in report
    # the same findings, other thresholds: everything comes from the cache now
    r = cli(*common, "--fail-on", "none", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["computed"] == 0
    assert cli(*common).returncode == 0  # the default is --fail-on none
    (proj / "old.gd").unlink()
    r = cli(*common, "--fail-on", "info")
    assert r.returncode == 0, r.stdout  # no finding left at all

@slow

def test_rerun_after_editing_one_file_redoes_only_its_chunks(real_retriever, tmp_path):
    proj = tmp_path / "wp"
    shutil.copytree(WAYPOINTS4, proj)
    cache = tmp_path / "cache.sqlite3"
    first = scan(real_retriever, proj, tmp_path / "o1", cache)
    assert first.summary["computed"] == first.summary["unique_chunks"] > 0
    path = proj / "camera.gd"
    text = path.read_text()
    head, sep, rest = text.partition("\nfunc ")
    path.write_text(head + sep + rest.replace("\n", "\n\tvar _scan_probe := 1\n", 1))  # one function changed
    second = scan(real_retriever, proj, tmp_path / "o2", cache)
    assert second.summary["computed"] == 1 and second.summary["cached"] == second.summary["unique_chunks"] - 1
    # --changed-since: only the files git sees changed since the ref
    git = ["git", "-C", str(proj), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    (proj / "main.gd").write_text((proj / "main.gd").read_text() + "\n\nfunc _scan_new():\n\tpass\n")
    third = scan(real_retriever, proj, tmp_path / "o3", cache, changed_since="HEAD")
    assert third.summary["files_selected"] == 1 and third.summary["computed"] == 1
    assert {e["file"] for e in third.files} == {"main.gd"}
    with pytest.raises(ScanError, match="not a commit"):
        scan(real_retriever, proj, tmp_path / "o4", cache, changed_since="no-such-ref")

@slow

def test_interrupted_scan_keeps_what_was_done_and_resumes(real_retriever, tmp_path):
    proj = tmp_path / "wp"
    shutil.copytree(WAYPOINTS3, proj)
    cache = tmp_path / "cache.sqlite3"
    calls = {"n": 0}

    def cancelled():
        calls["n"] += 1
        return calls["n"] > 3  # stop after three chunks

    opts = ScanOptions(root=proj, out=tmp_path / "o", cache=cache, quiet=True, workers=1, refresh=False)
    with pytest.raises(ScanInterrupted) as e:
        run_scan(opts, retriever=real_retriever, cancelled=cancelled)
    assert e.value.done == 3
    assert sqlite3.connect(cache).execute("SELECT count(*) FROM results").fetchone()[0] == 3
    res = run_scan(opts, retriever=real_retriever)
    assert res.summary["cached"] == 3 and res.summary["computed"] == res.summary["unique_chunks"] - 3

@slow

def test_ctrl_c_in_the_cli_exits_cleanly_and_leaves_no_process(real_db, tmp_path):
    import psutil

    proj = tmp_path / "proj"
    shutil.copytree(DEMOS / "godot4" / "3d" / "platformer", proj)  # 27 chunks: the worker pool runs
    cache = tmp_path / "cache.sqlite3"
    proc = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "scan", str(proj), "--out", str(tmp_path / "o"),
                             "--data-dir", str(real_db.data_dir), "--cache", str(cache), "--workers", "2", "--quiet"],
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_reaches_it)
    children: set[int] = set()
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        try:
            children |= {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            break
        if cache.exists() and sqlite3.connect(cache).execute(
                "SELECT count(*) FROM sqlite_master WHERE name='results'").fetchone()[0]:
            n = sqlite3.connect(cache).execute("SELECT count(*) FROM results").fetchone()[0]
            if n >= 1:
                break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err[-2000:]
    assert proc.returncode == 130 and "interrupted" in err and "resume" in err, err[-2000:]
    done = sqlite3.connect(cache).execute("SELECT count(*) FROM results").fetchone()[0]
    assert done >= 1
    time.sleep(1)
    assert not [p for p in children if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


# -- API and the browser ---------------------------------------------------------------------------
def zip_of(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def zip_dir(root: Path, prefix: str = "") -> bytes:
    return zip_of({prefix + p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()})


@pytest.fixture(scope="module")
def app(real_retriever):
    from godot_rag.api.app import create_app

    return create_app(real_retriever, warm=False)


@pytest.fixture(scope="module")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        yield c


@slow
@needs_demos
def test_api_scan_of_an_uploaded_zip(client):
    r = client.post("/api/scan?strategy=F", content=zip_dir(WAYPOINTS3, "waypoints/"),
                    headers={"content-type": "application/zip"})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["job_id"])
    assert body["status"] == "done" and body["progress"]["done"] == body["progress"]["total"] > 0
    files = {f["file"]: f for f in body["files"]}
    assert set(files) == {"waypoints/camera.gd", "waypoints/waypoint.gd"}
    assert files["waypoints/waypoint.gd"]["godot_version"] == "3"
    chunk = next(c for c in files["waypoints/waypoint.gd"]["chunks"] if c["findings"])
    assert chunk["chunkText"] and chunk["findings"][0]["migration"]
    assert body["summary"]["findings"]["total"] >= 20
    sarif = client.get(f"/api/scan/{body['job_id']}/findings.sarif")
    assert sarif.status_code == 200 and sarif.json()["version"] == "2.1.0"
    assert client.get(f"/api/scan/{body['job_id']}/../../etc/passwd").status_code == 404
    assert client.get("/api/scan/" + "0" * 32).status_code == 404


@slow
@slow
@pytest.mark.parametrize("files,status,text", [
    ({"../evil.gd": "extends Node\n"}, 400, "unsafe path"),
    ({"/abs/evil.gd": "extends Node\n"}, 400, "unsafe path"),
    ({"readme.txt": "nothing here"}, 422, "no .gd"),
    ({"addons/x/only.gd": "extends Node\n"}, 422, "no .gd files"),
])
def test_api_rejects_bad_zips(client, files, status, text):
    r = client.post("/api/scan", content=zip_of(files), headers={"content-type": "application/zip"})
    assert r.status_code == status and text in r.json()["error"], r.text

@slow

def test_api_rejects_zip_bombs_too_many_entries_and_non_zips(client):
    bomb = zip_of({"big.gd": b"#" * (12 * 2**20)})  # 12 MiB of one byte: about 12 KiB compressed
    r = client.post("/api/scan", content=bomb, headers={"content-type": "application/zip"})
    assert r.status_code == 413 and "zip bomb" in r.json()["error"]
    huge = zip_of({f"part{i}.gd": b"#" * (15 * 2**20) for i in range(14)})  # 210 MiB unpacked
    r = client.post("/api/scan", content=huge, headers={"content-type": "application/zip"})
    assert r.status_code == 413 and "MiB" in r.json()["error"]
    many = zip_of({f"d/f{i}.txt": "" for i in range(20_001)})
    r = client.post("/api/scan", content=many, headers={"content-type": "application/zip"})
    assert r.status_code == 413 and "entries" in r.json()["error"]
    r = client.post("/api/scan", content=b"PK\x03\x04 not really", headers={"content-type": "application/zip"})
    assert r.status_code == 400 and "not a valid zip" in r.json()["error"]
    r = client.post("/api/scan", content=b"x", headers={"content-type": "text/plain"})
    assert r.status_code == 415


@slow
@needs_demos
def test_api_server_side_path_only_where_allowed(client, monkeypatch, tmp_path):
    r = client.post("/api/scan", json={"path": str(WAYPOINTS4)})
    assert r.status_code == 403 and "--allow-path" in r.json()["error"]
    monkeypatch.setattr(client.app.state, "scan_allowed", [tmp_path.resolve()])
    r = client.post("/api/scan", json={"path": str(WAYPOINTS4)})
    assert r.status_code == 403 and "not under" in r.json()["error"]
    (tmp_path / "link").symlink_to(WAYPOINTS4)
    r = client.post("/api/scan", json={"path": str(tmp_path / "link")})
    assert r.status_code == 403  # a link out of the allowed directory does not count
    shutil.copytree(WAYPOINTS4, tmp_path / "wp")
    r = client.post("/api/scan", json={"path": str(tmp_path / "wp"), "godot_version": "9"})
    assert r.status_code == 400 and "godot_version" in r.json()["error"]
    r = client.post("/api/scan", json={"path": str(tmp_path / "wp")})
    assert r.status_code == 202
    body = wait_job(client, r.json()["job_id"])
    assert body["status"] == "done" and body["summary"]["findings"]["migration"] == 0


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
browser_ok = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the 'browser' extra (playwright)")
    with sync_api.sync_playwright() as p:
        b = launch_chromium(p, CHROMIUM)
        yield b
        b.close()


@slow
@needs_demos
@browser_ok
@pytest.mark.browser
def test_report_html_opens_in_chromium_and_shows_the_findings(godot3_scan, browser):
    page = browser.new_page()
    requests = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto((godot3_scan.out / "report.html").as_uri())
    assert page.locator("article.finding").count() == len(godot3_scan.findings)
    assert page.locator("table.files tr").count() == 1 + godot3_scan.summary["files_selected"]
    marks = {page.locator("article.finding mark").nth(i).text_content()
             for i in range(page.locator("article.finding mark").count())}
    assert {"get_camera", "Spatial", "rect_position", "onready"} <= marks
    assert "Godot 3" in page.text_content("table.summary")
    assert page.locator("article.finding ul.docs a[href^='https://docs.godotengine.org']").count() >= 1
    assert [u for u in requests if not u.startswith("file://")] == []  # self-contained
    page.close()


@slow
@needs_demos
@browser_ok
@pytest.mark.browser
def test_scan_page_files_chunks_and_open_in_the_debugger(app, browser, tmp_path):
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.1)
        proj = tmp_path / "hostile"
        shutil.copytree(WAYPOINTS3, proj)
        hostile = '# <img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\n'
        (proj / "camera.gd").write_text(hostile + (proj / "camera.gd").read_text())
        zpath = tmp_path / "hostile.zip"
        zpath.write_bytes(zip_dir(proj))
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{port}/scan")
        page.set_input_files("#zip", str(zpath))
        page.click("#start")
        page.wait_for_function("document.querySelector('#status').textContent === 'done' || "
                               "document.querySelector('#status').className === 'error'", timeout=240_000)
        assert page.text_content("#status") == "done"
        assert page.locator("#files li").count() == 2
        assert page.locator("#summary a").all_text_contents() == [
            "report.html", "report.md", "findings.sarif", "findings.jsonl", "chunks.jsonl"]
        page.locator("#files li", has_text="camera.gd").click()
        assert page.locator("#chunks li.chunk").count() >= 2
        first = page.locator("#chunks li.chunk pre").first.text_content()
        assert first.startswith("# <img src=x") and page.evaluate("window.__pwned") is None
        assert page.locator("#chunks img, #chunks script").count() == 0
        page.locator("#chunks li.chunk button.open").first.click()
        page.wait_for_url("**/?*")
        # the journey view takes the chunk (and consumes the handoff): it is in its editor, hostile text as text
        page.wait_for_function("document.querySelector('#chunk') && document.querySelector('#chunk').value.length > 0")
        assert page.input_value("#chunk") == first and page.evaluate("window.__pwned") is None
        from urllib.parse import parse_qs, urlparse

        q = parse_qs(urlparse(page.url).query)
        assert q["strategy"] == ["F"] and q["chunk"] == [first]
        page.close()
    finally:
        server.should_exit = True
        thread.join(20)


def test_the_cache_key_changes_with_any_rule_of_the_verdicts(tmp_path, monkeypatch):
    """No number to bump by hand: the key holds a digest of the code that decides verdicts."""
    from godot_rag.retrieve.engine import fingerprint
    from godot_rag.scan import run as scan_run

    copy = tmp_path / "godot_rag"
    copy.mkdir()
    for name in fingerprint.VERDICT_SOURCES:
        src = fingerprint.PACKAGE_DIR / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, copy / name)
    assert fingerprint.code_digest(copy) == fingerprint.code_digest()
    # A refit guide model (`godot-rag fit-guides` writes the shipped file) decides other verdicts: a new key.
    model = copy / "store" / "guide_model.json"
    shipped = model.read_text()
    model.write_text(json.dumps(json.loads(shipped) | {"threshold": json.loads(shipped)["threshold"] + 0.01}))
    assert fingerprint.code_digest(copy) != fingerprint.code_digest()
    model.write_text(shipped)
    # So does a refit ranker (`godot-rag fit-ranker`).
    ranker = copy / "store" / "ranker_model.json"
    fitted = ranker.read_text()
    refit = json.loads(fitted)
    refit["groups"]["guides"]["threshold"] += 0.05
    ranker.write_text(json.dumps(refit))
    assert fingerprint.code_digest(copy) != fingerprint.code_digest()
    ranker.write_text(fitted)
    rules = copy / "retrieve" / "evidence" / "docs_evidence.py"  # the docs-evidence weights
    rules.write_text(rules.read_text().replace("RESOLVED_API = 6.0", "RESOLVED_API = 7.0", 1))
    changed = fingerprint.code_digest(copy)
    assert changed != fingerprint.code_digest()
    key = scan_run.cache_key("func f():\n\tpass\n", "F", {"k": 10}, "db")
    monkeypatch.setattr(scan_run, "results_version", lambda: f"0.1.0+{changed[:24]}")
    assert scan_run.cache_key("func f():\n\tpass\n", "F", {"k": 10}, "db") != key


WORKER_THREADS = """
import json, sys
from godot_rag.scan import run
run._init_worker(None, sys.argv[1], "F", True)
assert "error" not in run._worker, repr(run._worker.get("error"))
embedder = run._worker["retriever"].embedder
session = getattr(embedder.load(), "session", None)
print(json.dumps({"threads": embedder.threads,
                  "onnx_intra_op": session.get_session_options().intra_op_num_threads if session else None}))
"""


def test_a_scan_worker_keeps_its_query_encoder_on_one_thread(real_db):
    """One worker per core: each worker's encoder on one thread, as a batch worker's (two workers with an
    encoder on two threads each put four busy threads on two cores)."""
    r = subprocess.run([sys.executable, "-c", WORKER_THREADS, str(real_db.data_dir)], capture_output=True, text=True,
                       env=ENV, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == {"threads": 1, "onnx_intra_op": 1}  # the database's encoder is ONNX Runtime's
