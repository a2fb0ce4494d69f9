"""Shared fixtures: a real embedded PostgreSQL + pgvector, the real MiniLM embedder, and a small
corpus of our own Markdown pages run through the real ingest, load and embed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared"


def pytest_configure(config):
    """SIGTERM (`timeout`, a CI runner stopping the job) ends the session as Ctrl-C does, as the CLI's commands do:
    pytest then tears the session's fixtures down, and the embedded servers they started are stopped. Killed
    outright, the session left its fixture server running, with no live process in its handle list."""
    import signal

    ending = []

    def terminated(signum, frame):
        if ending:  # a second SIGTERM must not break the teardown under way
            return
        ending.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminated)


@pytest.fixture(scope="session")
def pg_root(tmp_path_factory):
    return tmp_path_factory.mktemp("pg")


@pytest.fixture(scope="session", autouse=True)
def no_server_left_behind(pg_root):
    """Session end: every embedded PostgreSQL the suite started must be stopped again."""
    yield
    import time

    import psutil

    def left():
        return [p.pid for p in psutil.process_iter(["name", "cmdline"])
                if (p.info.get("name") or "").startswith("postgres")
                and any(str(pg_root) in a for a in p.info.get("cmdline") or [])]

    for _ in range(40):
        if not left():
            return
        time.sleep(0.25)
    pytest.fail(f"embedded PostgreSQL still running after the session: pids {left()}")


@pytest.fixture(scope="session")
def make_database(pg_root):
    """Each call gives a fresh, empty database on its own embedded server."""
    from godot_rag.store.db import Database

    made = []

    def make(name: str) -> Database:
        db = Database(data_dir=pg_root / name)
        made.append(db)
        return db

    yield make
    for db in made:
        db.stop()


@pytest.fixture(scope="session")
def ref():
    """The real Godot 4.7 class reference, built once from ../shared's class pages (read, never changed, by tests)."""
    from godot_rag.gdscript.classref import ClassReference
    from godot_rag.ingest.classref import build_class_reference
    from godot_rag.ingest.markdown import parse_page

    pages = [parse_page(f.name, f.read_text(encoding="utf-8"))
             for f in sorted((SHARED / "godot_docs" / "pages").glob("classes__*.md"))]
    return ClassReference(build_class_reference(pages))


@pytest.fixture(scope="session")
def embedder():
    from godot_rag.models.embedder import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def fixture_jsonl(tmp_path_factory):
    from godot_rag.ingest.pipeline import run_ingest

    out = tmp_path_factory.mktemp("jsonl")
    run_ingest(FIXTURES / "pages", FIXTURES / "renames.jsonl", out, quiet=True)
    return out


@pytest.fixture(scope="session")
def fixture_db(make_database, fixture_jsonl, embedder):
    from godot_rag.store.embed import embed_rows
    from godot_rag.store.load import load_jsonl

    db = make_database("fixture")
    load_jsonl(db, fixture_jsonl, quiet=True)
    embed_rows(db, embedder, quiet=True)
    return db


@pytest.fixture(scope="session")
def retriever(fixture_db, embedder, tmp_path_factory):
    from godot_rag.retrieve.pipeline import Retriever

    return Retriever(fixture_db, embedder=embedder, cache_dir=tmp_path_factory.mktemp("cache"))


from godot_rag.examples import REFERENCE_CHUNK  # noqa: F401  (the user's reference chunk)


def ctrl_c_reaches_it() -> None:
    """`preexec_fn` for a child that a test interrupts as a terminal would. A shell starts a background job
    (`cmd &`, as CI may run the suite) with SIGINT ignored, every child inherits that, and Python then leaves
    it ignored: without this, the Ctrl-C would not reach the child at all."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http_server(cmd: list[str], url: str, ready_path: str, tries: int = 240):
    """Start a real server process on loopback and wait until `ready_path` answers 200."""
    import subprocess
    import time

    import httpx

    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(tries):
        try:
            if httpx.get(url + ready_path, timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    pytest.fail(f"{' '.join(cmd[:4])} did not start")


def launch_chromium(playwright, executable: str):
    """Debian's headless Chromium, offline and quiet, for the browser tests."""
    return playwright.chromium.launch(executable_path=executable, headless=True, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"])


def wait_job(client, job_id, timeout=240):
    """Poll a scan job of the HTTP API until it ends; its whole status then."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        body = client.get(f"/api/scan/{job_id}?results=false").json()
        if body["status"] in ("done", "error", "cancelled"):
            return client.get(f"/api/scan/{job_id}").json()
        time.sleep(0.2)
    raise AssertionError("the scan job did not finish")
