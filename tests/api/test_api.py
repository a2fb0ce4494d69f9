import re

import pytest
from fastapi.testclient import TestClient

from conftest import ctrl_c_reaches_it
from godot_rag.api.app import REFERENCE_CHUNK, create_app
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database


@pytest.fixture(scope="module")
def client(retriever):
    return TestClient(create_app(retriever, warm=False))


def test_retrieve_returns_the_shared_result_model(client):
    r = client.post("/api/retrieve", json={"chunkText": REFERENCE_CHUNK, "strategy": "D", "k": 3,
                                           "tables": ["docs_chunks", "api_mapping"]})
    assert r.status_code == 200
    body = r.json()
    assert body["strategy"] == "D" and body["k"] == {"docs_chunks": 3, "api_mapping": 3}
    rec = body["results"][0]
    assert {"table", "payload", "score", "rank", "trace", "source"} <= set(rec)
    assert rec["payload"]["chunk_id"] == rec["id"] and "bm25" in rec["trace"]
    assert body["trace"]["stages"] and body["trace"]["total_ms"] > 0


@pytest.mark.parametrize("body,status,text", [
    ({"chunkText": "   ", "strategy": "B"}, 422, "empty"),
    ({"chunkText": "x" * 20001, "strategy": "B"}, 413, "limit"),
    ({"chunkText": "func f(): pass", "strategy": "Q"}, 400, "valid strategies: A, B, C, D, E, F"),
    ({"chunkText": "func f(): pass", "strategy": "B", "config": {"fusion": "magic"}}, 400, "unknown fusion"),
    ({"chunkText": "func f():\n    print('a\u0000b')", "strategy": "A"}, 422, "NUL byte at line 2, column 13"),
])
def test_errors(client, body, status, text):
    r = client.post("/api/retrieve", json=body)
    assert r.status_code == status and text in r.json()["error"]


BAD_SETTINGS = [
    {"weight_bm25": "abc"}, {"k1": "x"}, {"b": "1.5x"}, {"rrf_k": "sixty"}, {"ef_search": "many"},
    {"codematch_alpha": "on"}, {"min_direct_evidence": "one"}, {"k1": float("nan")}, {"weight_bm25": float("inf")},
    {"segments": "no"}, {"rerank_top": -1}, {"candidates": 10 ** 9}, {"godot_version": "5"}, {"extends": "Node2D; DROP"},
    {"tables": "docs_chunks"}, {"k_api": 10 ** 6}, {"nonsense": 1},
    {"weight_bm25": "0.5"}, {"k1": "1.5"}, {"b": True}, {"codematch_alpha": "0.5"}, {"rerank_weight": "0.3"},
    {"tables": []}, {"k": "abc"},
]


@pytest.mark.parametrize("settings", BAD_SETTINGS)
def test_bad_settings_are_400_never_500(client, settings):
    r = client.post("/api/retrieve", content=__import__("json").dumps(
        {"chunkText": "func f(): pass", "strategy": "D", "config": settings}, allow_nan=True),
        headers={"content-type": "application/json"})
    assert r.status_code == 400, (settings, r.status_code, r.text[:200])
    assert next(iter(settings)) in r.json()["error"]


def test_unknown_request_field_is_400_and_errors_do_not_echo_the_input(client):
    r = client.post("/api/retrieve", json={"chunkText": "func f(): pass", "strateg": "A"})
    assert r.status_code == 400 and "strateg" in r.json()["error"] and "valid:" in r.json()["error"]
    huge = "x" * 500_000  # under the 1 MiB cap on a request body
    r = client.post("/api/retrieve", json={"chunkText": 5, "strategy": "B", "k": huge})
    assert r.status_code == 422 and len(r.content) < 5_000
    for body in ({"chunkText": "func f(): pass", huge: 1}, {"chunkText": "func f(): pass", "config": {huge: 1}},
                 {"chunkText": "func f(): pass", "tables": [huge]}, {"chunkText": "func f(): pass", "strategy": huge}):
        r = client.post("/api/retrieve", json=body)
        assert r.status_code == 400 and len(r.content) < 5_000, (r.status_code, len(r.content))


@pytest.mark.parametrize("body", [{"strategy": "E"}, {"strategy": "F", "config": {"validator_llm": True}}])
def test_a_missing_llm_is_503_naming_it(client, body):
    r = client.post("/api/retrieve", json={"chunkText": "func f():\n\tqueue_free()", **body})
    assert r.status_code == 503 and "needs an LLM" in r.json()["error"]


def test_dsn_password_is_masked_everywhere():
    from godot_rag.store.db import mask_dsn

    for dsn in ("postgresql://u:secret@127.0.0.1:1/db", "host=127.0.0.1 port=1 user=u password=secret dbname=db"):
        assert "secret" not in mask_dsn(dsn) and "***" in mask_dsn(dsn)
        app = create_app(Retriever(Database(dsn=dsn)), warm=False)
        r = TestClient(app).post("/api/retrieve", json={"chunkText": "func f(): pass", "strategy": "B"})
        assert r.status_code == 503 and "secret" not in r.text


def test_database_unreachable_is_503():
    app = create_app(Retriever(Database(dsn="postgresql://nobody@127.0.0.1:1/none")), warm=False)
    r = TestClient(app).post("/api/retrieve", json={"chunkText": "func f(): pass", "strategy": "B"})
    assert r.status_code == 503 and "unreachable" in r.json()["error"]


def test_strategies_openapi_and_offline_page(client):
    s = client.get("/api/strategies").json()
    assert list(s["strategies"]) == ["A", "B", "C", "D", "E", "F"]
    # the stage columns come from the strategy table
    f_stages = [st["name"] for st in s["stage_lists"]["F"]["stages"]]
    assert f_stages[:2] == ["parse", "resolve"] and f_stages.index("validate") < f_stages.index("score") < f_stages.index("cut")
    assert s["stage_lists"]["E"]["needs"] and "--llm" in s["stage_lists"]["E"]["needs"]
    # the page's schema: each stage's contract, and a column for the stages that say something about each record
    by_name = {st["name"]: st for st in s["stage_lists"]["F"]["stages"]}
    assert by_name["validate"]["requires"] == ["pool", "resolved", "version", "class_uses"]
    assert by_name["api"]["provides"] == ["pool", "class_uses"] and by_name["validate"]["optional"] == ["vectors"]
    assert "verdicts: Verdicts" in by_name["validate"]["outputs"]
    assert by_name["version"]["provides"] == ["version"] and by_name["version"]["column"] is None
    assert by_name["validate"]["column"] == {"label": "validate", "unit": "verdict", "score": "confidence", "unit_scale": True,
                                             "lossy": True, "source": False}
    assert [n for n, st in by_name.items() if st["column"]] == ["bm25", "embedding", "union", "fuse", "codematch", "merge",
                                                                 "rerank", "shortlist", "api", "validate", "check", "rank",
                                                                 "judge", "score", "cut"]
    settings = client.get("/openapi.json").json()["components"]["schemas"]["RetrieveRequest"]["properties"]["config"]
    assert {"k1", "fusion", "weight_api", "godot_version"} <= set(settings["properties"])  # every setting documented
    assert "/api/retrieve" in client.get("/openapi.json").json()["paths"]
    page = client.get("/").text
    assert "/static/app.js" in page
    for asset in ("/static/app.js", "/static/style.css"):
        text = client.get(asset).text
        assert not re.search(r"https?://", text)  # no CDN: everything is served by the app
    assert "innerHTML" not in client.get("/static/app.js").text


def test_cli_retrieve_and_batch(fixture_db, tmp_path):
    """The thin CLI over the same library: a trace table, JSON, and --batch on two processes in input order."""
    import json
    import subprocess
    import sys

    from godot_rag.examples import REFERENCE_CHUNK

    base = [sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(fixture_db.data_dir)]
    chunk = tmp_path / "chunk.gd"
    chunk.write_text(REFERENCE_CHUNK)
    table = subprocess.run([*base, str(chunk), "--strategy", "A"], capture_output=True, text=True)
    assert table.returncode == 0 and "zero hits; best single row" in table.stdout
    bad = subprocess.run([*base, str(chunk), "--strategy", "Z"], capture_output=True, text=True)
    assert bad.returncode == 1 and "valid strategies: A, B, C, D, E, F" in bad.stderr
    batch = tmp_path / "batch.jsonl"
    texts = [REFERENCE_CHUNK, "func _ready():\n    var t = get_node(\"Timer\")\n    t.timeout.connect(_on_timer_timeout)",
             "extends KinematicBody2D"]
    batch.write_text("".join(json.dumps({"chunkText": t}) + "\n" for t in texts))
    out = subprocess.run([*base, "--batch", str(batch), "--strategy", "B", "--workers", "2", "--quiet", "--format", "result"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    results = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["chunk_text"] for r in results] == texts


def test_batch_workers_let_go_of_the_database_however_the_batch_ends(fixture_db, tmp_path):
    """The worker processes of `--batch` hold the embedded server too. After a batch, and after Ctrl-C
    (sent to the whole process group, as a terminal does), none of them is left in the server's handle
    list: a dead one there keeps the server running after its last real user has gone. No traceback."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    handles = fixture_db.data_dir / ".handle_pids.json"

    def only_live_handles() -> bool:
        def live(pid):
            try:
                return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return False
        return all(live(p) for p in json.loads(handles.read_text()))

    base = [sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(fixture_db.data_dir), "--strategy", "B",
            "--workers", "2", "--quiet", "--batch"]
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps({"chunkText": f"func f{i}():\n\tpass"}) + "\n" for i in range(3)))
    done = subprocess.run([*base, str(small)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert only_live_handles(), handles.read_text()
    # Interrupted while its input is still open (a pipe on stdin): the batch cannot have ended first.
    lines = "".join(json.dumps({"chunkText": f"func f{i}():\n\tvar t = get_node(\"Timer\")"}) + "\n" for i in range(8))
    out = tmp_path / "out.jsonl"
    with out.open("w") as sink:
        proc = subprocess.Popen([*base, "-"], stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=ctrl_c_reaches_it)
        assert proc.stdin is not None
        proc.stdin.write(lines)
        proc.stdin.flush()
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None and out.stat().st_size == 0:
            time.sleep(0.2)
        assert proc.poll() is None and out.stat().st_size > 0, "no output while the input was still open"
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "interrupted" in err, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    time.sleep(1)
    assert only_live_handles(), handles.read_text()


def test_cli_bad_inputs_are_one_line_errors(fixture_db, tmp_path):
    """Bad lines in a batch give error lines (the batch goes on, also with two workers; --strict refuses
    it); binary files, bad TOML and bad --set values give one-line errors, never a traceback."""
    import json
    import subprocess
    import sys

    base = [sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(fixture_db.data_dir)]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"chunkText": t}) + "\n" for t in ["func f():\n    pass", "   ", "x" * 20001]))
    out = subprocess.run([*base, "--batch", str(batch), "--strategy", "B", "--workers", "2", "--quiet", "--format", "result"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(l) for l in out.stdout.splitlines()]
    assert "chunk_text" in lines[0] and lines[1]["status"] == 422 and lines[1]["line"] == 2 and lines[2]["status"] == 413
    binary = tmp_path / "blob.gd"
    binary.write_bytes(b"\xff\xfe\x00\x01binary")
    toml = tmp_path / "bad.toml"
    toml.write_text("[retrieve\nk = ")
    malformed = tmp_path / "bad.jsonl"
    malformed.write_text('{"chunkText": "a"}\n{oops\n')
    for args, needle in [([str(binary)], "blob.gd"), ([str(batch), "--config", str(toml)], "bad.toml"),
                         ([str(batch), "--set", "weight_bm25=abc"], "weight_bm25"),
                         (["--batch", str(malformed), "--strict"], "bad.jsonl:2")]:
        r = subprocess.run(base + args + ["--strategy", "B"], capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr, (args, r.stderr[-300:])
    # E with an LLM that cannot be opened: one line that says how to name one (was 40 lines of traceback)
    chunk = tmp_path / "c.gd"
    chunk.write_text("func _ready():\n    pass\n")
    r = subprocess.run([*base, str(chunk), "--strategy", "E", "--llm-gguf", str(tmp_path / "missing.gguf")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr[-500:]
    assert "needs an LLM" in r.stderr and "--llm-bundled" in r.stderr
