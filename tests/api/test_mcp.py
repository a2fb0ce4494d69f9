"""`godot-rag mcp` as a real subprocess, driven by the MCP SDK's own client over stdio and over
streamable HTTP: every tool, the record resource, and bad arguments as tool errors while the server
keeps answering."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
import pytest

from conftest import REFERENCE_CHUNK, free_port

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

GODOT3_SCRIPT = "extends KinematicBody2D\n\nfunc _physics_process(delta):\n\tvar v = Vector2()\n\tmove_and_slide(v)\n"


AGENT_CODE = ("extends Node\n\nfunc _process(delta):\n\tif Input.is_action_presed(\"jump\"):\n\t\tpass\n"
              "\tif Input.is_action_pressed(\"a\", true, 3):\n\t\tpass\n\tGGT.change_scene(\"res://x.tscn\")\n")


async def check_code(session: ClientSession) -> None:
    """`check`: code an agent just wrote, against the class reference; small; bad input is a tool error."""
    got = await session.call_tool("check", {"code": AGENT_CODE, "godot_version": "4.3"})
    assert not got.is_error, got.content
    answer = got.structured_content
    found = {(f["kind"], f["line"]) for f in answer["findings"]}
    assert found == {("missing_engine_member", 4), ("wrong_argument_count", 6)}
    missing = next(f for f in answer["findings"] if f["kind"] == "missing_engine_member")
    assert "Input.is_action_pressed" in missing["action"] and missing["reference"].endswith("class_input.html")
    assert any(u.startswith("GGT") for u in answer["undecided"])  # an unknown receiver: said, never guessed
    assert len(json.dumps(answer)) < 4 * 400  # a few hundred tokens
    clean = (await session.call_tool("check", {"code": "func f():\n\tInput.is_action_pressed(\"a\")\n"})).structured_content
    assert clean["findings"] == [] and clean["checked"] == 1 and "none removed" in clean["summary"]
    for args, needle in [({"code": ""}, "empty"), ({"code": "func f():\n\tpass", "godot_version": "3.5"}, "Godot 4"),
                         ({"code": 7}, "argument 'code'"), ({"code": "x", "context": {"nope": 1}}, "context")]:
        bad = await session.call_tool("check", args)
        assert bad.is_error and needle in bad.content[0].text and len(bad.content[0].text.splitlines()) == 1, args


@pytest.fixture()
def project(tmp_path):
    """An allowed root with one Godot 3 project in it."""
    root = tmp_path / "allowed"
    proj = root / "game"
    proj.mkdir(parents=True)
    (proj / "project.godot").write_text("config_version=4\n")
    (proj / "player.gd").write_text(GODOT3_SCRIPT)
    return root


def mcp_command(fixture_db, root, *extra) -> list[str]:
    return [sys.executable, "-m", "godot_rag.cli", "mcp", "--data-dir", str(fixture_db.data_dir),
            "--allow-path", str(root), *extra]


async def exercise(session: ClientSession, root) -> None:
    await session.initialize()
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"evidence", "explain", "lookup", "scan", "strategies", "check"}
    assert tools["evidence"].input_schema["properties"]["k"]["type"] == "integer"
    assert tools["evidence"].output_schema and "records" in tools["evidence"].output_schema["properties"]

    ev = await session.call_tool("evidence", {"chunk": REFERENCE_CHUNK})
    assert not ev.is_error, ev.content
    records = ev.structured_content["records"]
    docs = [r for r in records if r["table"] == "docs_chunks"]
    assert docs[0]["id"].startswith("getting_started/demo/coding_the_player#")
    assert docs[0]["payload"]["chunk_id"] == docs[0]["id"] and "\n" not in docs[0]["reason"] and docs[0]["reason"]
    assert not [r for r in records if r["id"].startswith("tutorials/demo3d/player_movement#")]

    why = await session.call_tool("explain", {"chunk": REFERENCE_CHUNK, "record_id": "tutorials/demo3d/player_movement"})
    assert not why.is_error, why.content
    lost = why.structured_content["records"]
    assert lost and all(r["outcome"] == "rejected" and r["lost_at"] == "validate" for r in lost)
    assert "Vector3" in why.structured_content["verdict"]
    assert any(s["stage"] == "validate" and s["status"] == "lost here" for s in lost[0]["steps"])
    kept = await session.call_tool("explain", {"chunk": REFERENCE_CHUNK, "record_id": docs[0]["id"]})
    assert kept.structured_content["records"][0]["outcome"] == "returned"

    look = await session.call_tool("lookup", {"symbol": "KinematicBody2D"})
    assert not look.is_error, look.content
    entry = look.structured_content
    assert entry["godot4"] == "CharacterBody2D" and entry["godot3_name"] == "KinematicBody2D"
    assert entry["renamed_by"] == ["class_renames:KinematicBody2D->CharacterBody2D"]
    assert entry["record_id"].startswith("classes/class_characterbody2d#")

    scan = await session.call_tool("scan", {"path": str(root / "game")})
    assert not scan.is_error, scan.content
    assert scan.structured_content["files_scanned"] == 1 and scan.structured_content["findings"]["total"] >= 1
    assert scan.structured_content["top_findings"][0]["file"] == "player.gd"

    strategies = await session.call_tool("strategies", {})
    assert strategies.structured_content["default"] == "F" and strategies.structured_content["strategies"]["F"]["available"]

    await check_code(session)

    res = await session.read_resource("godot-rag://record/api_mapping/class_renames:KinematicBody2D-%3ECharacterBody2D")
    assert json.loads(res.contents[0].text)["target_api"] == "CharacterBody2D"

    # The project around the chunk: a name the project declares is not a Godot 3 API.
    chunk = "extends Node\n\nfunc _ready():\n\tvar n = get_len()\n"
    mapped = lambda r: [x["id"] for x in r.structured_content["records"] if x["table"] == "api_mapping"]
    alone = await session.call_tool("evidence", {"chunk": chunk})
    assert "gdscript_function_renames:get_len->get_length" in mapped(alone)
    own = {"project_symbols": [{"name": "get_len", "kind": "func", "file": "player.gd", "line": 7,
                                "scope": "res://player.gd"}], "file_path": "player.gd", "godot_version": "4.3"}
    with_context = await session.call_tool("evidence", {"chunk": chunk, "context": own})
    assert not with_context.is_error and mapped(with_context) == []
    bad = await session.call_tool("evidence", {"chunk": chunk, "context": {"project_symbol": []}})
    assert bad.is_error and "unknown context field" in bad.content[0].text

    # Bad arguments: tool errors with one line each, and the server goes on answering.
    for name, args, needle in [("evidence", {"chunk": 5}, "argument 'chunk'"),
                               ("evidence", {"chunk": "   \n"}, "empty"),
                               ("evidence", {"chunk": "func f():\n\tpass", "k": "ten"}, "argument 'k'"),
                               ("scan", {"path": str(root.parent)}, "not under a directory the server allows"),
                               ("lookup", {"symbol": "NoSuchClass"}, "no such class")]:
        bad = await session.call_tool(name, args)
        assert bad.is_error, (name, args)
        text = bad.content[0].text
        assert needle in text and len(text.splitlines()) == 1 and "Traceback" not in text, text
    again = await session.call_tool("lookup", {"symbol": "Input.is_action_pressed"})
    assert not again.is_error and again.structured_content["kind"] == "method"
    assert again.structured_content["record_id"].startswith("classes/class_input#")
    godot4 = (await session.call_tool("lookup", {"symbol": "CharacterBody2D"})).structured_content
    assert godot4["godot4"] == "CharacterBody2D" and godot4["godot3_name"] == "KinematicBody2D"


def test_mcp_over_stdio(fixture_db, project):
    async def main():
        params = StdioServerParameters(command=sys.executable, args=mcp_command(fixture_db, project)[1:],
                                       env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await exercise(session, project)

    anyio.run(main)


def test_mcp_over_streamable_http(fixture_db, project):
    port = free_port()
    proc = subprocess.Popen(mcp_command(fixture_db, project, "--http", "--port", str(port)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        import select

        ready, _, _ = select.select([proc.stdout], [], [], 240)  # the line comes once the socket listens
        line = proc.stdout.readline() if ready else ""  # "" also when the server failed (EOF)
        assert line.startswith("godot-rag mcp serving on http://127.0.0.1:"), proc.stderr.read()[-2000:]

        async def main():
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                ClientSession(read, write) as session,
            ):
                await exercise(session, project)

        anyio.run(main)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            err = proc.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err[-2000:]


@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGINT"])
def test_mcp_stops_the_database_it_started(pg_root, how):
    """The server starts its own embedded PostgreSQL (its warm-up opens the database) and stops it
    however it ends."""
    import time

    import psutil

    data_dir = pg_root / "mcp_own"

    def postgres() -> list[int]:
        return [p.pid for p in psutil.process_iter(["name", "cmdline"])
                if (p.info.get("name") or "").startswith("postgres")
                and any(str(data_dir) in a for a in p.info.get("cmdline") or [])]

    proc = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "mcp", "--data-dir", str(data_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not postgres() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert postgres(), proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "no database started"
        if how == "stdin closed":
            proc.stdin.close()
        else:
            proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGINT)
        proc.wait(timeout=120)
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == {"stdin closed": 0, "SIGTERM": 143, "SIGINT": 130}[how], err[-2000:]
    assert "Traceback" not in err and proc.stdout.read() == b""
    for _ in range(40):
        if not postgres():
            break
        time.sleep(0.25)
    assert not postgres()


def test_an_unexpected_failure_is_a_one_line_tool_error(retriever, monkeypatch):
    """In process, through the SDK's client: a crash inside a tool is one line naming its type, and the
    next call is answered."""
    from mcp import Client

    from godot_rag.api.mcp_server import create_server

    def boom(*args, **kwargs):
        raise RuntimeError("the index is\nbroken")

    server = create_server(retriever)

    async def main():
        async with Client(server) as client:
            with monkeypatch.context() as m:
                m.setattr(retriever, "retrieve", boom)
                bad = await client.call_tool("evidence", {"chunk": "func f():\n\tpass"})
            assert bad.is_error and bad.content[0].text == "evidence: internal error: RuntimeError: the index is broken"
            ok = await client.call_tool("evidence", {"chunk": REFERENCE_CHUNK, "strategy": "B", "k": 2})
            assert not ok.is_error and ok.structured_content["records"]

    anyio.run(main)
