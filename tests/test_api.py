import re

import pytest
from fastapi.testclient import TestClient

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
])
def test_errors(client, body, status, text):
    r = client.post("/api/retrieve", json=body)
    assert r.status_code == status and text in r.json()["error"]


def test_database_unreachable_is_503():
    app = create_app(Retriever(Database(dsn="postgresql://nobody@127.0.0.1:1/none")), warm=False)
    r = TestClient(app).post("/api/retrieve", json={"chunkText": "func f(): pass", "strategy": "B"})
    assert r.status_code == 503 and "unreachable" in r.json()["error"]


def test_strategies_openapi_and_offline_page(client):
    s = client.get("/api/strategies").json()
    assert list(s["strategies"]) == ["A", "B", "C", "D", "E", "F"]
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
    table = subprocess.run(base + [str(chunk), "--strategy", "A"], capture_output=True, text=True)
    assert table.returncode == 0 and "zero hits; best single row" in table.stdout
    bad = subprocess.run(base + [str(chunk), "--strategy", "Z"], capture_output=True, text=True)
    assert bad.returncode == 1 and "valid strategies: A, B, C, D, E, F" in bad.stderr
    batch = tmp_path / "batch.jsonl"
    texts = [REFERENCE_CHUNK, "func _ready():\n    var t = get_node(\"Timer\")\n    t.timeout.connect(_on_timer_timeout)",
             "extends KinematicBody2D"]
    batch.write_text("".join(json.dumps({"chunkText": t}) + "\n" for t in texts))
    out = subprocess.run(base + ["--batch", str(batch), "--strategy", "B", "--workers", "2", "--quiet"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    results = [json.loads(l) for l in out.stdout.splitlines()]
    assert [r["chunk_text"] for r in results] == texts
