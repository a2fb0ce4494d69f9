"""Faults and hostile input: nested JSON, a DSN the driver cannot parse, an unreachable database, SIGTERM on
an idle pool, paths a scan cannot read or name, pathological sizes, and MCP lines the transport cannot decode.
Real processes, the real embedded PostgreSQL (the fixture database) and the real MCP SDK client."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from conftest import ROOT, free_port, start_http_server

ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))
SECRET = "s3cretpw"
BAD_DSN = f"postgresql://user:{SECRET}@[bad/x"
UNREACHABLE_DSN = "postgresql://user:pw@127.0.0.1:1/x"
GOOD = "func _ready():\n\tprint(\"hello\")\n"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def godot_rag(*args: str, input: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "godot_rag.cli", *args], capture_output=True, text=True, env=ENV,
                          input=input, timeout=timeout)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    err = r.stderr.strip()
    assert r.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, err[-800:]
    assert err.startswith("error: ") and SECRET not in r.stdout + r.stderr
    return err


# -- one JSON reader -------------------------------------------------------------------------------------
def test_the_json_reader_caps_depth_and_size_with_one_message():
    from godot_rag.jsonlines import MAX_DEPTH, JSONInputError, parse_json

    assert parse_json(json.dumps({"a": [[1]]})) == {"a": [[1]]}
    for text in (deep(5000), deep(MAX_DEPTH + 1), '{"chunkText": ' + deep(100_000) + "}"):
        with pytest.raises(JSONInputError, match=f"nested more than {MAX_DEPTH} levels"):
            parse_json(text)
    with pytest.raises(JSONInputError) as e:
        parse_json(b"[1]" + b" " * 100, max_bytes=50)
    assert e.value.status == 413
    with pytest.raises(JSONInputError, match=r"malformed JSON: .* at line 1 column 2"):
        parse_json("{oops")


def test_a_setting_nested_too_deep_is_one_line(tmp_path):
    chunk = tmp_path / "c.gd"
    chunk.write_text(GOOD)
    r = godot_rag("retrieve", str(chunk), "--data-dir", str(tmp_path / "db"), "--set", "k=" + deep(3000))
    assert "--set: malformed JSON: nested more than" in one_line_error(r)


def test_batch_line_nested_too_deep_costs_that_line_alone(fixture_db, tmp_path):
    lines = [json.dumps({"id": "a", "chunkText": GOOD}), '{"chunkText": ' + deep(5000) + "}",
             json.dumps({"chunkText": GOOD, "strateg": "B"}), json.dumps({"id": "d", "chunkText": GOOD})]
    batch = tmp_path / "b.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    base = ["retrieve", "--data-dir", str(fixture_db.data_dir), "-s", "B", "--quiet", "--format", "result"]
    r = godot_rag(*base, "--batch", str(batch), "--workers", "1")
    assert r.returncode == 0, r.stderr[-800:]
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o.get("id", o.get("chunk")) for o in out] == ["a", 2, 3, "d"]
    assert "nested more than" in out[1]["error"] and out[1]["status"] == 400
    assert "unknown field(s) strateg" in out[2]["error"] and out[2]["status"] == 400  # as HTTP refuses it
    assert "error" not in out[0] and "error" not in out[3]
    # --strict, from stdin: one line naming both bad lines, nothing run
    strict = godot_rag(*base, "--batch", "-", "--strict", input="\n".join(lines) + "\n")
    err = one_line_error(strict)
    assert "stdin:2: malformed JSON: nested more than" in err and "stdin:3: unknown field(s) strateg" in err
    assert strict.stdout == ""
    # a batch with no good line is a failed command
    none_good = godot_rag(*base, "--batch", "-", "--workers", "1", input=lines[1] + "\n" + lines[2] + "\n")
    assert none_good.returncode == 1 and "no good line" in none_good.stderr and len(none_good.stdout.splitlines()) == 2


# -- one rule for secrets --------------------------------------------------------------------------------
def test_mask_secrets_in_any_text():
    from godot_rag.errors import mask_secrets
    from godot_rag.store.db import mask_dsn

    for text in (f'missing "=" after "{BAD_DSN}" in connection info string', f"host=h password={SECRET} user=u",
                 f"postgresql://u:{SECRET}@h:5/db and more", f"password = '{SECRET} x'", f"PGPASSWORD={SECRET}",
                 f"postgres://u:p@{SECRET}@h/db"):
        assert SECRET not in mask_secrets(text), text
        assert "***" in mask_secrets(text)
    assert SECRET not in mask_dsn(BAD_DSN)
    assert mask_secrets("http://127.0.0.1:8000/api and postgresql://u@h/db") == "http://127.0.0.1:8000/api and postgresql://u@h/db"


def test_a_dsn_the_driver_cannot_parse_never_shows_its_password(tmp_path):
    chunk = tmp_path / "c.gd"
    chunk.write_text(GOOD)
    assert "unreachable" in one_line_error(godot_rag("status", "--dsn", BAD_DSN))
    assert "unreachable" in one_line_error(godot_rag("retrieve", str(chunk), "--dsn", BAD_DSN, "-s", "B"))
    project = tmp_path / "p"
    project.mkdir()
    (project / "project.godot").write_text("config_version=5\n")
    (project / "a.gd").write_text(GOOD)
    scan = godot_rag("scan", str(project), "--out", str(tmp_path / "out"), "--dsn", BAD_DSN, "--quiet")
    assert scan.returncode == 2 and "unreachable" in one_line_error(scan)


def test_http_with_a_dsn_the_driver_cannot_parse_is_503_without_the_password():
    from fastapi.testclient import TestClient

    from godot_rag.api.app import create_app
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store.db import Database

    app = create_app(Retriever(Database(dsn=BAD_DSN)), warm=False)
    r = TestClient(app, raise_server_exceptions=False).post("/api/retrieve", json={"chunkText": GOOD, "strategy": "B"})
    assert r.status_code == 503 and SECRET not in r.text and "\n" not in r.json()["error"]


# -- workers that fail fast and stop cleanly ---------------------------------------------------------------
def test_batch_against_an_unreachable_server_ends_at_once_with_one_line(tmp_path):
    batch = tmp_path / "b.jsonl"
    batch.write_text((json.dumps({"chunkText": GOOD}) + "\n") * 3)
    t0 = time.monotonic()
    r = godot_rag("retrieve", "--batch", str(batch), "--dsn", UNREACHABLE_DSN, "--workers", "2", timeout=120)
    assert "unreachable" in one_line_error(r) and time.monotonic() - t0 < 60
    assert r.stdout == ""


def _handles(data_dir: Path) -> list[int]:
    path = data_dir / ".handle_pids.json"
    return json.loads(path.read_text() or "[]") if path.exists() else []


def _descendants(pid: int) -> set[int]:
    try:
        return {c.pid for c in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return set()


def _alive(pids: set[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE and "postgres" not in psutil.Process(pid).name():
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def test_timeout_on_an_idle_batch_ends_it_and_leaves_nothing(fixture_db):
    """`timeout 15 godot-rag retrieve --batch -` on a stdin that never says anything: SIGTERM reaches the
    parent and its workers, the pool stops (it used to hang in Pool.terminate), rc 124 within 20 s."""
    fixture_db.uri()
    cmd = ["timeout", "15", sys.executable, "-m", "godot_rag.cli", "retrieve", "--batch", "-", "--quiet",
           "--data-dir", str(fixture_db.data_dir), "-s", "B"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    seen: set[int] = set()
    try:
        while proc.poll() is None and time.monotonic() - t0 < 40:
            seen |= _descendants(proc.pid)
            time.sleep(0.5)
        rc = proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    err = proc.stderr.read().decode()
    assert rc == 124 and time.monotonic() - t0 < 20, (rc, err[-800:])
    assert "interrupted" in err and "Traceback" not in err
    time.sleep(0.5)
    assert not _alive(seen), seen
    assert not set(_handles(fixture_db.data_dir)) & (seen | {proc.pid})


def test_sigterm_to_the_parent_alone_while_stdin_blocks(fixture_db):
    fixture_db.uri()
    cmd = [sys.executable, "-m", "godot_rag.cli", "retrieve", "--batch", "-", "--quiet", "--data-dir",
           str(fixture_db.data_dir), "-s", "B"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    seen: set[int] = set()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 12:  # the workers start
        seen |= _descendants(proc.pid)
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    t1 = time.monotonic()
    try:
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    err = proc.stderr.read().decode()
    assert rc == 143 and time.monotonic() - t1 < 10, (rc, err[-800:])
    assert "interrupted" in err and "Fatal Python error" not in err and "Traceback" not in err
    time.sleep(0.5)
    assert not _alive(seen)
    assert not set(_handles(fixture_db.data_dir)) & (seen | {proc.pid})


def _half_a_result(pool) -> None:
    """What a worker killed while it wrote a result leaves in the pool's results pipe: a length prefix
    and the first part of a message whose rest never comes."""
    import struct

    os.write(pool._outqueue._writer.fileno(), struct.pack("!i", 4096) + b"\x80" * 100)


@pytest.mark.parametrize("tasks_in_flight", [False, True])
def test_stopping_workers_when_one_died_mid_result_does_not_hang(tasks_in_flight):
    """The pool's result thread is left waiting for the rest of a half-written result (seen with `retrieve
    --batch ... | head` under load): stopping the pool still ends, with every worker and thread gone."""
    import multiprocessing
    import threading

    from godot_rag.store.db import stop_pool

    pool = multiprocessing.get_context("spawn").Pool(2)
    if tasks_in_flight:
        pool.imap(time.sleep, [30] * 8)
    _half_a_result(pool)
    time.sleep(0.5)  # the result thread reads the prefix and waits for the rest
    stopper = threading.Thread(target=stop_pool, args=(pool,), daemon=True)
    stopper.start()
    stopper.join(60)
    assert not stopper.is_alive(), "stop_pool hung on the half-written result"
    assert all(proc.exitcode is not None for proc in pool._pool)
    assert not pool._result_handler.is_alive() and not pool._task_handler.is_alive()


# -- a scan that never dies of one file ------------------------------------------------------------------
def _hostile_project(root: Path) -> Path:
    root.mkdir()
    (root / "project.godot").write_text("config_version=5\n")
    (root / "good.gd").write_text("extends Node\n\n" + GOOD)
    os.makedirs(root, exist_ok=True)
    (root / os.fsdecode(b"caf\xe9.gd")).write_text("extends Node\n")
    deep_dir = root.joinpath(*["a" * 60] * 5)  # a res:// path over 300 characters
    deep_dir.mkdir(parents=True)
    (deep_dir / "deep.gd").write_text("extends Node2D\n\nfunc far():\n\treturn 1\n")
    (root / "loop1.gd").symlink_to("loop2.gd")
    (root / "loop2.gd").symlink_to("loop1.gd")
    (root / "dangling.gd").symlink_to("missing.gd")
    (root / "big.gd").write_text("extends Node\n" + "# padding\n" * 2000)
    # a folder whose path is over PATH_MAX (made step by step: each name is short enough)
    here = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(20):
            os.mkdir("b" * 250)
            os.chdir("b" * 250)
        Path("x.gd").write_text("extends Node\n")
    finally:
        os.chdir(here)
    return root


def _remove_long_tree(root: Path) -> None:
    import shutil

    here = os.getcwd()
    try:
        os.chdir(root)
        depth = 0
        while os.path.isdir("b" * 250):
            os.chdir("b" * 250)
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            shutil.rmtree("b" * 250)
    finally:
        os.chdir(here)


def test_scan_lists_every_path_it_cannot_read_and_scans_the_rest(fixture_db, tmp_path):
    from godot_rag.scan.run import ScanOptions, run_scan

    root = _hostile_project(tmp_path / "hostile")
    try:
        res = run_scan(ScanOptions(root=root, out=tmp_path / "out", cache=tmp_path / "c.sqlite3", quiet=True, workers=1,
                                   strategy="B", max_file_bytes=4096), db=fixture_db)
        reasons = {u["file"]: u["error"] for u in res.summary["unreadable"]}
        scanned = {f["file"] for f in res.files if not f["error"]}
        assert "good.gd" in scanned and any(f.endswith("/deep.gd") and len(f) > 300 for f in scanned), scanned
        assert "not UTF-8" in reasons["caf\\xe9.gd"]
        assert "link loop" in reasons["loop1.gd"] and "link loop" in reasons["loop2.gd"]
        assert "dangling" in reasons["dangling.gd"]
        assert "over 4096 bytes" in reasons["big.gd"]
        assert any("File name too long" in v for k, v in reasons.items() if k.startswith("long/") or k.startswith("b")), reasons
        report = (tmp_path / "out" / "report.md").read_text()
        assert "dangling" in report and "link loop" in report
    finally:
        _remove_long_tree(root)


def test_scan_cli_keeps_its_exit_codes_with_bad_paths(fixture_db, tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "project.godot").write_text("config_version=5\n")
    (root / "good.gd").write_text("extends Node\n\n" + GOOD)
    (root / "dangling.gd").symlink_to("missing.gd")
    (root / os.fsdecode(b"caf\xe9.gd")).write_text("extends Node\n")
    r = godot_rag("scan", str(root), "--out", str(tmp_path / "out"), "--data-dir", str(fixture_db.data_dir), "-s", "B",
                  "--quiet", "--workers", "1", "--cache", str(tmp_path / "c.sqlite3"), "--json")
    assert r.returncode == 0, r.stderr[-800:]
    summary = json.loads(r.stdout)
    assert summary["files_scanned"] == 1 and len(summary["unreadable"]) == 2


# -- bounded cost per file and per chunk -----------------------------------------------------------------
def test_chunk_keys_cost_grows_with_the_file_not_its_square(monkeypatch):
    """One file of the same function repeated: each chunk's cache key read every declaration of the name
    (7.4 million calls for 2,724 chunks); now each name's part is built once."""
    from godot_rag.gdscript.project import ProjectIndex, RequestContext
    from godot_rag.scan.symbols import chunk_symbols_key, file_declarations, file_symbols

    fn = "func process(delta):\n\tvar v = Vector2()\n\tmove_and_slide(v)\n\n"
    n = 2000
    symbols = file_symbols("big.gd", file_declarations("extends Node\n\n" + fn * n))
    index = RequestContext(project_symbols=symbols).index()
    calls = [0]
    original = ProjectIndex.type_scope

    def counted(self, s):
        calls[0] += 1
        return original(self, s)

    monkeypatch.setattr(ProjectIndex, "type_scope", counted)
    memo: dict = {}
    keys = {chunk_symbols_key(index, fn, ["res://big.gd"], memo) for _ in range(n)}
    assert len(keys) == 1 and calls[0] <= 2 * len(symbols), calls[0]
    # a name declared in a few places keeps its lines in the key (the cached results of real projects stay valid)
    small = RequestContext(project_symbols=file_symbols("a.gd", file_declarations("extends Node\n\n" + fn))).index()
    assert chunk_symbols_key(small, fn, ["res://a.gd"]) == chunk_symbols_key(small, fn, ["res://a.gd"], {})


def test_a_repeated_batch_chunk_is_answered_once(retriever, tmp_path, monkeypatch, capsys):
    from godot_rag.batch import BatchOptions, run_batch
    from godot_rag.retrieve.engine.config import RetrieveConfig

    calls: list[str] = []
    real = retriever.retrieve
    monkeypatch.setattr(retriever, "retrieve", lambda chunk, *a, **k: calls.append(chunk) or real(chunk, *a, **k))
    batch = tmp_path / "b.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "chunkText": GOOD if i % 2 else GOOD + "# other\n"}) + "\n"
                             for i in range(6)))
    summary = run_batch(retriever, batch, "B", RetrieveConfig(), BatchOptions(workers=1, quiet=True, fmt="result"))
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert summary["chunks"] == 6 and [o["id"] for o in out] == list(range(6)) and len(calls) == 2
    same = [{k: v for k, v in o.items() if k not in ("id", "line", "chunk")} for o in (out[1], out[3])]
    assert same[0] == same[1]


def test_a_run_of_one_character_is_one_window(embedder):
    from godot_rag.models.embedder import MAX_QUERY_WINDOWS

    t0 = time.perf_counter()
    _, windows = embedder.encode_query("(" * 19_999)
    assert windows == 1 and time.perf_counter() - t0 < 5
    _, windows = embedder.encode_query("( " * 9_999)
    assert windows <= MAX_QUERY_WINDOWS


# -- HTTP: one error shape ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(fixture_db):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_http_server([sys.executable, "-m", "godot_rag.cli", "serve", "--no-warm", "--port", str(port),
                              "--data-dir", str(fixture_db.data_dir)], url, "/api/strategies")
    yield url
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_http_errors_have_one_shape_and_keep_alive_survives(server):
    with httpx.Client(base_url=server, timeout=120) as client:  # one keep-alive connection throughout
        deep_config = '{"path": "/x", "config": ' + deep(3000) + "}"
        for path, body in (("/api/scan", deep_config), ("/api/retrieve", '{"chunkText": ' + deep(3000) + "}")):
            r = client.post(path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400 and "nested more than" in r.json()["error"], (path, r.status_code, r.text[:300])
        r = client.post("/api/retrieve", content=b'{"chunkText": "x",', headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"].startswith("malformed JSON: ")
        r = client.post("/api/retrieve", json={"chunkText": GOOD, "strategy": "B", "k": True})
        assert r.status_code == 422 and r.json()["error"].startswith("k: ")
        r = client.post("/api/retrieve", json={"chunkText": GOOD, "strateg": "B"})
        assert r.status_code == 400 and "unknown request field(s) strateg" in r.json()["error"]
        r = client.get("/api/nothing-here")
        assert r.status_code == 404 and set(r.json()) == {"error"}
        r = client.get("/api/retrieve")
        assert r.status_code == 405 and set(r.json()) == {"error"}
        r = client.post("/api/retrieve", json={"chunkText": GOOD, "strategy": "B", "k": 3})
        assert r.status_code == 200 and r.json()["strategy"] == "B"


# -- MCP over stdio ----------------------------------------------------------------------------------------
def test_mcp_stdio_answers_lines_it_cannot_decode(fixture_db):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    lines = ["{oops", '{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"\\ud800"}}',
             '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":' + deep(100_000) + "}}", '{"foo": 1, "id": 9}',
             json.dumps(init)]
    r = subprocess.run([sys.executable, "-m", "godot_rag.cli", "mcp", "--no-warm", "--data-dir", str(fixture_db.data_dir)],
                       input="\n".join(lines) + "\n", capture_output=True, text=True, env=ENV, timeout=120)
    replies = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(m.get("id"), m.get("error", {}).get("code")) for m in replies] == \
        [(None, -32700), (5, -32700), (None, -32700), (9, -32600), (1, None)], r.stdout[-1500:]
    assert replies[-1]["result"]["serverInfo"]["name"] == "godot-rag"


def test_mcp_arguments_are_checked_as_http_checks_keys(fixture_db):
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "godot_rag.cli", "mcp", "--no-warm", "--data-dir",
                                                                 str(fixture_db.data_dir)], env=ENV)

    async def run():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            unknown = await session.call_tool("evidence", {"chunk": GOOD, "strateg": "B"})
            assert unknown.is_error and "unknown argument(s) strateg" in unknown.content[0].text
            boolean = await session.call_tool("evidence", {"chunk": GOOD, "strategy": "B", "k": True})
            assert boolean.is_error and "'k'" in boolean.content[0].text
            good = await session.call_tool("evidence", {"chunk": GOOD, "strategy": "B", "k": 3})
            assert not good.is_error, good.content

    anyio.run(run)
