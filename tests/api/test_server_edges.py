"""The edges of `godot-rag serve`: the server-side scan's path rules (checked on the text first, no
reads outside the allowed root, links included), no server path in any answer, the allowed Host
names, the cap on request bodies, and one-line errors for a bad --host or --port."""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from conftest import ROOT, free_port, wait_job
from godot_rag.api.app import create_app
from godot_rag.api.scan_routes import MAX_JSON, MAX_UPLOAD, OUTPUT_FILES
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.scan.allowed import MALFORMED_PATH
from godot_rag.scan.project import discover
from godot_rag.scan.run import ScanOptions, hide_server_paths, run_scan
from godot_rag.store.db import Database

SENTINEL = "SENTINEL_7f3a_outside_the_root"
GD = "extends Node2D\n\nfunc _ready():\n\tprint(\"hello\")\n\tqueue_free()\n"


@pytest.fixture(scope="module")
def app(retriever):
    return create_app(retriever, warm=False)


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture
def layout(tmp_path, monkeypatch, app):
    """allowed/game: a project with a file link and a directory link out of the root, a linked
    project.godot and .gitignore (all pointing at files that hold the sentinel); outside/: those files."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.gd").write_text(f"extends Node\n# {SENTINEL}\nfunc _ready():\n\tprint(\"{SENTINEL}\")\n")
    (outside / "dir" / "more.gd").write_text(f"# {SENTINEL}\nfunc f():\n\tpass\n")
    (outside / "project.godot").write_text(f'config_version=5\n[application]\nconfig/name="{SENTINEL}"\n')
    (outside / "gitignore").write_text("main.gd\n")  # followed, it would hide the project's only real script
    game = tmp_path / "allowed" / "game"
    (game / "nested").mkdir(parents=True)
    (game / "project.godot").write_text('config_version=5\n[application]\nconfig/name="game"\n')
    (game / "main.gd").write_text(GD)
    (game / "leak.gd").symlink_to(outside / "secret.gd")
    (game / "linked_dir").symlink_to(outside / "dir")
    (game / ".gitignore").symlink_to(outside / "gitignore")
    (game / "nested" / "project.godot").symlink_to(outside / "project.godot")
    (game / "nested" / "inner.gd").write_text(GD)
    (tmp_path / "allowed" / "out_link").symlink_to(outside)
    (tmp_path / "allowed" / "dangling").symlink_to(tmp_path / "nowhere")
    monkeypatch.setattr(app.state, "scan_allowed", [(tmp_path / "allowed").resolve()], raising=False)  # serve --allow-path
    return tmp_path


def every_answer(client, job_id) -> dict[str, str]:
    """The job's status JSON and each of its output files, as text."""
    out = {"status": client.get(f"/api/scan/{job_id}").text}
    for name in OUTPUT_FILES:
        r = client.get(f"/api/scan/{job_id}/{name}")
        assert r.status_code == 200, (name, r.status_code)
        out[name] = r.text
    return out


def server_paths(*more) -> list[str]:
    """Absolute paths of this machine that no answer may show: the temporary directory (job folders,
    uploads, the test folders), the checkout and the Python installation, and `more`."""
    paths = {tempfile.gettempdir(), str(Path(tempfile.gettempdir()).resolve()), str(ROOT), sys.prefix,
             *(str(p) for p in more)}
    return sorted(p for p in paths if p not in ("/", ""))


def assert_no_server_path(texts: dict[str, str], *more):
    for name, text in texts.items():
        for p in server_paths(*more):
            assert p not in text, f"{name} shows the server path {p}"
        assert "file:///" not in text, name


# -- the path rules ---------------------------------------------------------------------------------
def test_malformed_paths_are_400_with_one_message(client, layout):
    allowed = layout / "allowed"
    for path in (f"{allowed}/game\x00/x", "game", "../allowed/game", f"{allowed}/\ud800", f"{allowed}/ga\nme",
                 f"{allowed}/" + "a" * 5000, ""):
        r = client.post("/api/scan", content=json.dumps({"path": path}), headers={"content-type": "application/json"})
        assert r.status_code == 400, (path[:40], r.status_code, r.text[:200])
        if path:
            assert r.json()["error"] == MALFORMED_PATH, path[:40]
    r = client.post("/api/scan", json={"path": 5})
    assert r.status_code == 400


def test_outside_the_root_is_the_same_answer_whether_it_exists_or_not(client, layout, monkeypatch):
    allowed = layout / "allowed"
    touched = []
    answers = set()
    with monkeypatch.context() as m:
        for name in ("stat", "lstat"):  # the root check comes before any file-system access
            real = getattr(os, name)
            m.setattr(os, name, lambda p, *a, _real=real, **k: (touched.append(os.fspath(p)), _real(p, *a, **k))[1])
        for path in ("/etc", "/nonexistent/zzz", str(layout / "outside"), f"{allowed}/../outside",
                     f"{allowed}/../nowhere", f"{allowed}2", "/"):
            r = client.post("/api/scan", json={"path": path})
            assert r.status_code == 403, (path, r.status_code, r.text)
            answers.add(r.text)
    assert len(answers) == 1 and "--allow-path" in next(iter(answers))
    looked = [p for p in touched if p.startswith(("/etc", "/nonexistent", str(layout / "outside"), str(layout / "nowhere")))]
    assert not looked, looked
    # links inside the root that lead out of it: refused the same way, existing target or not
    for path in (f"{allowed}/out_link", f"{allowed}/dangling", f"{allowed}/game/linked_dir"):
        r = client.post("/api/scan", json={"path": path})
        assert r.status_code == 403 and r.text in answers, (path, r.status_code, r.text)
    r = client.post("/api/scan", json={"path": f"{allowed}/game/main.gd"})
    assert r.status_code == 400 and "no such directory" in r.json()["error"]


def test_discover_lists_a_link_out_of_the_root_and_never_reads_it(layout):
    game = (layout / "allowed" / "game").resolve()
    disc = discover(game)
    scripts = {s.rel: s for s in disc.scripts}
    assert set(scripts) == {"leak.gd", "main.gd", "nested/inner.gd"}  # no linked directory; the linked .gitignore is not read
    assert scripts["leak.gd"].outside and not scripts["main.gd"].outside
    assert all(p.name != SENTINEL for p in disc.projects)
    nested = next(p for p in disc.projects if p.rel == "nested")
    assert nested.config_version is None  # its project.godot is a link out of the root: not read


def test_server_scan_reads_nothing_outside_the_root_and_shows_no_server_path(client, layout, retriever):
    r = client.post("/api/scan", json={"path": str(layout / "allowed" / "game"), "strategy": "F"})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["job_id"])
    assert body["status"] == "done", body.get("error")
    assert body["source"] == "game" and body["summary"]["root"] == "game"
    assert body["summary"]["database"] == "embedded PostgreSQL" and body["summary"]["cache"] is None
    files = {f["file"]: f for f in body["files"]}
    assert files["leak.gd"]["error"] == "a link to a file outside the scanned folder: not read"
    assert files["main.gd"]["chunks"] and not files["leak.gd"]["chunks"]
    texts = every_answer(client, body["job_id"])
    for name, text in texts.items():
        assert SENTINEL not in text, f"{name} holds the content of a file outside the root"
    assert_no_server_path(texts, layout, retriever.db.data_dir.resolve())
    sarif = json.loads(texts["findings.sarif"])
    assert "uri" not in sarif["runs"][0]["originalUriBaseIds"]["SRCROOT"]


def test_uploaded_zip_answers_show_no_server_path(client, retriever):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("game/project.godot", "config_version=4\n")
        z.writestr("game/player.gd", "extends KinematicBody2D\n\nfunc _ready():\n\tyield(get_tree(), \"idle_frame\")\n")
        z.writestr("game/bad.gd", b"\xff\xfe not text")
    r = client.post("/api/scan", content=buf.getvalue(), headers={"content-type": "application/zip"})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["job_id"])
    assert body["status"] == "done" and body["summary"]["root"] == "upload"
    texts = every_answer(client, body["job_id"])
    assert_no_server_path(texts, retriever.db.data_dir.resolve())
    assert "not UTF-8" in texts["report.md"]


def test_the_cli_keeps_full_local_paths(retriever, layout, tmp_path):
    game = (layout / "allowed" / "game").resolve()
    res = run_scan(ScanOptions(root=game, out=tmp_path / "out", quiet=True, workers=1, cache=tmp_path / "c.sqlite3"),
                   retriever=retriever)
    assert res.summary["root"] == str(game) and res.summary["cache"] == str(tmp_path / "c.sqlite3")
    assert str(retriever.db.data_dir.resolve()) in res.summary["database"]
    assert SENTINEL not in (tmp_path / "out" / "chunks.jsonl").read_text()


def test_messages_for_clients_hide_the_database_and_job_paths(tmp_path):
    db = Database(data_dir=tmp_path / "data" / "pgdata")
    text = f"the database is empty; it is the {db.describe()}; lock {db.data_dir}/postmaster.pid; cache {tmp_path}/data/cache"
    shown = hide_server_paths(text + f"; {tmp_path}/job/src/a.gd", db, {tmp_path / "job" / "src": "upload"})
    assert str(tmp_path) not in shown and "embedded PostgreSQL" in shown and "upload/a.gd" in shown
    assert "secret" not in Database(dsn="postgresql://u:secret@h:1/db").hide_paths("PostgreSQL at postgresql://u:secret@h:1/db")
    # a database whose embedded server cannot start: the 503 names no path
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = TestClient(create_app(Retriever(Database(data_dir=blocker / "pgdata")), warm=False)).post(
        "/api/retrieve", json={"chunkText": GD, "strategy": "B"})
    assert r.status_code == 503 and str(tmp_path) not in r.text, r.text


def test_retrieve_strategies_and_docs_answers_show_no_server_path(client, retriever):
    texts = {name: client.get(path).text for name, path in (("strategies", "/api/strategies"), ("examples", "/api/examples"),
                                                             ("openapi", "/openapi.json"))}
    for strategy in "ABCDEF":  # E falls back to D here (no LLM, llm_optional)
        r = client.post("/api/retrieve", json={"chunkText": GD, "strategy": strategy, "config": {"llm_optional": True}})
        assert r.status_code == 200, r.text[:300]
        texts[strategy] = r.text
    assert_no_server_path(texts, retriever.db.data_dir.resolve(), Path.home())


# -- Host names and body caps -----------------------------------------------------------------------
def test_only_the_allowed_host_names_are_answered(retriever):
    app = create_app(retriever, warm=False, allowed_hosts=["127.0.0.1", "localhost", "::1", "games.example"])
    c = TestClient(app, base_url="http://127.0.0.1:8000")
    assert c.get("/api/strategies").status_code == 200
    for host in ("localhost:8000", "LOCALHOST", "[::1]:8000", "games.example"):
        assert c.get("/api/strategies", headers={"host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example", ""):
        r = c.get("/api/strategies", headers={"host": host})
        assert r.status_code == 400 and "not allowed" in r.json()["error"], host
        r = c.post("/api/retrieve", json={"chunkText": GD, "strategy": "B"}, headers={"host": host})
        assert r.status_code == 400, host


def test_every_post_body_is_capped(client):
    r = client.post("/api/retrieve", content=b"{" + b" " * (2 * 2**20) + b"}", headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over" in r.json()["error"]

    def chunks():  # no Content-Length: counted while it is read
        for _ in range(40):
            yield b" " * 65536

    r = client.post("/api/retrieve", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over" in r.json()["error"]
    r = client.post("/api/scan", content=json.dumps({"path": "/x" * MAX_JSON}), headers={"content-type": "application/json"})
    assert r.status_code == 413
    r = client.post("/api/scan", content=b"PK" + b"\0" * 100, headers={"content-type": "application/zip",
                                                                        "content-length": str(MAX_UPLOAD + 1)})
    assert r.status_code == 413


# -- serve, a real process ---------------------------------------------------------------------------
def serve_cmd(*args):
    return [sys.executable, "-m", "godot_rag.cli", "serve", *args]


@pytest.mark.parametrize("args,words", [
    (["--port", "70000"], "--port '70000': not a port number"),
    (["--port", "abc"], "--port 'abc': not a port number"),
    (["--port", "-1"], "--port '-1': not a port number"),
    (["--host", "no-such-host.invalid"], "--host 'no-such-host.invalid'"),
    (["--host", "192.0.2.1", "--port", "0"], "cannot listen on 192.0.2.1:0"),
])
def test_serve_bad_host_or_port_is_one_line(args, words, tmp_path):
    r = subprocess.run(serve_cmd(*args, "--data-dir", str(tmp_path / "pgdata"), "--no-warm"), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr[-1500:]
    assert words in r.stderr and not (tmp_path / "pgdata").exists()  # nothing started


def raw_http(port: int, head: bytes, body: bytes = b"", *, more: int = 0) -> bytes:
    """Sends a request head and the first bytes of its body, and reads the answer without ever sending
    the rest (`more`: extra body parts of 64 KiB sent in chunked encoding, never finished)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(head + body)
        try:
            for _ in range(more):
                s.sendall(b"10000\r\n" + b" " * 65536 + b"\r\n")
        except OSError:  # the server answered and closed while we were still sending
            pass
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.find(b"\r\n\r\n") + 4 + 10:
            part = s.recv(65536)
            if not part:
                break
            data += part
        return data


def test_served_host_check_and_body_cap_on_a_real_server(fixture_db):
    port = free_port()
    proc = subprocess.Popen(serve_cmd("--port", str(port), "--no-warm", "--data-dir", str(fixture_db.data_dir),
                                      "--allow-host", "games.example"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert f"serving on http://127.0.0.1:{port}" in line, proc.stderr.read()[-2000:]
        import httpx

        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/api/strategies", timeout=60).status_code == 200
        assert httpx.get(base + "/api/strategies", headers={"host": f"localhost:{port}"}, timeout=60).status_code == 200
        assert httpx.get(base + "/api/strategies", headers={"host": "games.example"}, timeout=60).status_code == 200
        r = httpx.get(base + "/api/strategies", headers={"host": "evil.example"}, timeout=60)
        assert r.status_code == 400 and "not allowed" in r.json()["error"]
        # a declared 60 MB body: refused before a byte of it is read (only 1 KiB is ever sent)
        head = (f"POST /api/retrieve HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {60 * 2**20}\r\n\r\n").encode()
        answer = raw_http(port, head, b" " * 1024)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        # a chunked body with no length: refused once it passes the cap, before it ends (it never does)
        head = (f"POST /api/retrieve HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                "Transfer-Encoding: chunked\r\n\r\n").encode()
        answer = raw_http(port, head, more=20)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        r = httpx.post(base + "/api/retrieve", content=json.dumps({"chunkText": 'print("\ud800")', "strategy": "B"}),
                       headers={"content-type": "application/json"}, timeout=60)
        assert r.status_code == 422 and "lone surrogate" in r.json()["error"]
    finally:
        proc.terminate()
        proc.wait(60)
    err = proc.stderr.read()
    assert "Traceback" not in err, err[-2000:]
