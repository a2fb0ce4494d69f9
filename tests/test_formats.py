"""The JSON renderings (formats.py): `records` (the user's records, a line each), `result` (rejected records
by id) and `full`, through `retrieve --batch` with ids, `retrieve --json` and POST /api/retrieve."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from conftest import REFERENCE_CHUNK
from godot_rag.api.app import create_app
from godot_rag.formats import json_lines, record_rows
from godot_rag.records import DERIVED_METADATA
from godot_rag.retrieve.engine.config import RetrieveConfig

GODOT3 = "extends KinematicBody2D\n\nfunc _ready():\n\tyield(get_tree(), \"idle_frame\")\n"


@pytest.fixture(scope="module")
def f_result(retriever):
    return retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(), explain=False)


def test_the_three_renderings_of_one_result(f_result):
    assert f_result.rejected, "the reference chunk has rejected records in F"
    rows = [json.loads(line) for line in json_lines(f_result, "records", chunk="ref").splitlines()]
    assert len(rows) == len(f_result.results) and rows[0]["chunk"] == "ref"
    assert set(rows[0]) >= {"chunk", "table", "id", "payload", "score", "reason"}
    assert rows[0]["id"].startswith("getting_started/demo/coding_the_player#") and rows[0]["payload"]["chunk_id"] == rows[0]["id"]
    assert all(r["reason"] and "\n" not in r["reason"] for r in rows)
    result = json.loads(json_lines(f_result, "result", extra={"line": 3, "id": "x"}))
    assert result["line"] == 3 and result["id"] == "x" and result["chunk_text"] == REFERENCE_CHUNK
    assert all("payload" not in c and c["id"] and c["reason"] for c in result["rejected"])
    assert all("payload" in c for c in result["results"]) and result["trace"]["stages"]
    full = json.loads(json_lines(f_result, "full"))
    assert all(c["payload"] for c in full["rejected"])
    assert len(json_lines(f_result, "records", chunk=1)) < len(json.dumps(result)) < len(json.dumps(full))


def test_records_leave_out_the_derived_matching_metadata(f_result):
    """`records` is the user's record without what ingest derives for matching; `full` keeps all of it."""
    guide = next(c for c in f_result.results if c.table == "docs_chunks" and c.payload["metadata"].get("code_uses"))
    row = next(r for r in record_rows(f_result, None) if r["id"] == guide.id)
    assert not set(row["payload"]["metadata"]) & set(DERIVED_METADATA)
    assert row["payload"]["metadata"]["page_path"] == guide.payload["metadata"]["page_path"]
    assert {k: v for k, v in row["payload"].items() if k != "metadata"} == {
        k: v for k, v in guide.payload.items() if k != "metadata"}
    assert guide.payload["metadata"]["code_uses"], "the stored record is untouched"
    full = json.loads(json_lines(f_result, "full"))
    assert next(c for c in full["results"] if c["id"] == guide.id)["payload"]["metadata"]["code_uses"]


def test_batch_writes_records_by_default_and_echoes_ids(fixture_db, tmp_path):
    batch = tmp_path / "batch.jsonl"
    lines = [{"id": "ref", "chunkText": REFERENCE_CHUNK}, {"chunkText": "   "}, {"id": 7, "chunk_text": GODOT3}]
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines))
    base = [sys.executable, "-m", "godot_rag.cli", "retrieve", "--data-dir", str(fixture_db.data_dir), "--quiet",
            "--workers", "1", "--batch", str(batch)]
    out = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {r["chunk"] for r in rows} == {"ref", 2, 7}
    ref = [r for r in rows if r["chunk"] == "ref"]
    assert ref[0]["id"].startswith("getting_started/demo/coding_the_player#")
    assert not [r for r in ref if r["id"].startswith("tutorials/demo3d/player_movement#")]
    error = next(r for r in rows if r["chunk"] == 2)
    assert error["status"] == 422 and error["line"] == 2 and "empty" in error["error"]
    assert any(r["chunk"] == 7 and r["table"] == "api_mapping" and "KinematicBody2D" in r["id"] for r in rows)
    assert '"batch_summary"' in out.stderr and '"format": "records"' in out.stderr

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"chunkText": "a"}) + "\n" + json.dumps({"id": [1], "chunkText": "b"}) + "\n")
    r = subprocess.run([*base[:-1], str(bad)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr  # the one batch rule: the bad line's own error line
    error = [json.loads(line) for line in r.stdout.splitlines() if '"error"' in line]
    assert [(e["line"], e["chunk"], e["status"]) for e in error] == [(2, 2, 422)] and "field 'id'" in error[0]["error"]
    r = subprocess.run([*base[:-1], str(bad), "--strict"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "bad.jsonl:2: field 'id'" in r.stderr and "Traceback" not in r.stderr


def test_the_prompt_format_everywhere(retriever, fixture_db, tmp_path):
    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(), explain=False)
    line = json.loads(json_lines(res, "prompt", chunk="g3", extra={"line": 1}, prompt_budget=300))
    assert line["chunk"] == "g3" and line["line"] == 1 and 0 < line["tokens"] <= 300
    assert "- KinematicBody2D -> CharacterBody2D (class rename, line 1)" in line["prompt"]
    client = TestClient(create_app(retriever, warm=False))
    body = {"chunkText": GODOT3, "strategy": "F", "format": "prompt", "prompt_budget": 300, "id": "g3"}
    assert client.post("/api/retrieve", json=body).json() == {k: v for k, v in line.items() if k != "line"}
    assert client.post("/api/retrieve", json=body | {"prompt_budget": 0}).status_code == 422
    chunk = tmp_path / "g3.gd"
    chunk.write_text(GODOT3)
    out = subprocess.run([sys.executable, "-m", "godot_rag.cli", "retrieve", str(chunk), "--data-dir", str(fixture_db.data_dir),
                          "--format", "prompt", "--prompt-budget", "300"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == line["prompt"]


def test_http_takes_the_format(retriever):
    client = TestClient(create_app(retriever, warm=False))
    body = {"chunkText": REFERENCE_CHUNK, "strategy": "F"}
    records = client.post("/api/retrieve", json=body | {"format": "records", "id": "ref"}).json()["records"]
    assert records[0]["chunk"] == "ref" and records[0]["id"].startswith("getting_started/demo/coding_the_player#")
    result = client.post("/api/retrieve", json=body | {"format": "result"}).json()
    assert result["rejected"] and all("payload" not in c for c in result["rejected"])
    full = client.post("/api/retrieve", json=body).json()  # the page's default: everything
    assert full["rejected"] and all("payload" in c for c in full["rejected"])
    bad = client.post("/api/retrieve", json=body | {"format": "jsonl"})
    assert bad.status_code == 422 and "format" in bad.json()["error"]
    bad = client.post("/api/retrieve", content=json.dumps(body | {"id": "\ud800"}), headers={"content-type": "application/json"})
    assert bad.status_code == 422 and "surrogate" in bad.json()["error"]


def test_record_rows_without_a_validator_say_how_the_record_was_found(retriever):
    res = retriever.retrieve(REFERENCE_CHUNK, "B", RetrieveConfig(k=3), explain=False)
    rows = record_rows(res, 1)
    assert rows and all(r["reason"].startswith("found by ") for r in rows)
