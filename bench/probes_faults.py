"""The `faults` group of bench/probes.py (28-36): nested JSON over HTTP and in batch lines, a DSN the driver
cannot parse, a batch against an unreachable server, `timeout` on an idle batch, a scan of a project with paths
it cannot read or name, a chunk of 20,000 `(`, and MCP lines the stdio transport cannot decode.

`run(P, srv, data_dir, tmp)`: P is the probes module (its row, cli, spawn, stop_proc, base_env, GODOT_RAG)."""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import time
from pathlib import Path

SECRET = "s3cretpw"
BAD_DSN = f"postgresql://user:{SECRET}@[bad/x"
GOOD = "func _ready():\n\tprint(\"hello\")\n"


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _post(conn: http.client.HTTPConnection, path: str, body: str) -> tuple[int, str]:
    conn.request("POST", path, body=body.encode(), headers={"content-type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read().decode(errors="replace")


def probe_http(P, srv) -> None:
    port = srv.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)  # one keep-alive connection throughout
    try:
        scan = _post(conn, "/api/scan", '{"path": "/x", "config": ' + deep(3000) + "}")
        after = _post(conn, "/api/retrieve", json.dumps({"chunkText": GOOD, "strategy": "B"}))
        P.row("28. /api/scan, config nested 3,000 levels, then a request on the same connection", "400, then 200",
              f"{scan[0]} {scan[1][:90]}; then {after[0]}", scan[0] == 400 and after[0] == 200)
        retrieve = _post(conn, "/api/retrieve", '{"chunkText": ' + deep(3000) + "}")
        malformed = _post(conn, "/api/retrieve", '{"chunkText": "x",')
        boolean = _post(conn, "/api/retrieve", json.dumps({"chunkText": GOOD, "strategy": "B", "k": True}))
        conn.request("GET", "/api/nothing-here")
        missing = conn.getresponse()
        missing_body = missing.read().decode()
        ok = (retrieve[0] == 400 and malformed[0] == 400 and "JSON decode error" not in malformed[1]
              and boolean[0] == 422 and missing.status == 404 and set(json.loads(missing_body)) == {"error"})
        P.row("29. /api/retrieve: nested, malformed, k=true; a 404", '400, 400 "malformed JSON", 422, {"error"}',
              f"{retrieve[0]}, {malformed[0]} {malformed[1][:60]}, {boolean[0]}, {missing.status} {missing_body[:40]}", ok)
    finally:
        conn.close()


def probe_batch(P, data_dir: Path, tmp: Path) -> None:
    lines = [json.dumps({"chunkText": GOOD}), '{"chunkText": ' + deep(5000) + "}", json.dumps({"chunkText": GOOD, "x": 1}),
             json.dumps({"chunkText": GOOD})]
    batch = tmp / "faults-batch.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    env = P.base_env(data_dir)
    r = P.cli(["retrieve", "--batch", str(batch), "-s", "B", "--format", "result", "--quiet"], env, timeout=600)
    out = [json.loads(line) for line in r.out.splitlines() if line.strip()]
    errors = [o.get("line") for o in out if "error" in o]
    P.row("30. batch: a line nested 5,000 levels and one with an unknown key among good lines",
          "rc 0, 4 lines, lines 2 and 3 errors", f"rc {r.rc}, {len(out)} lines, errors at {errors}",
          r.rc == 0 and len(out) == 4 and errors == [2, 3])
    unreachable = P.cli(["retrieve", "--batch", str(batch), "--dsn", "postgresql://user:pw@127.0.0.1:1/x"], env, timeout=120)
    P.row("32. batch against an unreachable server", "one line, rc 1, within seconds", unreachable.describe(),
          unreachable.one_line_error() and unreachable.seconds < 30)


def probe_dsn(P, tmp: Path) -> None:
    chunk = tmp / "faults-chunk.gd"
    chunk.write_text(GOOD)
    project = tmp / "faults-dsn-project"
    project.mkdir(exist_ok=True)
    (project / "project.godot").write_text("config_version=5\n")
    (project / "a.gd").write_text(GOOD)
    env = P.base_env()
    for args in (["status"], ["retrieve", str(chunk), "-s", "B"], ["scan", str(project), "--out", str(tmp / "faults-dsn-out")]):
        r = P.cli([*args, "--dsn", BAD_DSN], env, timeout=120)
        P.row(f"31. {args[0]} --dsn with a password the driver cannot parse", "one line, no password",
              r.describe(), r.one_line_error() and SECRET not in r.out + r.err)


def probe_idle_timeout(P, data_dir: Path) -> None:
    import psutil

    env = P.base_env(data_dir)
    t0 = time.monotonic()
    p = P.spawn(["timeout", "15", P.GODOT_RAG, "retrieve", "--batch", "-", "--quiet"], env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: set[int] = set()
    while p.poll() is None and time.monotonic() - t0 < 60:
        with contextlib.suppress(psutil.NoSuchProcess):
            seen |= {c.pid for c in psutil.Process(p.pid).children(recursive=True)}
        time.sleep(0.5)
    rc = P.stop_proc(p, wait=5)
    seconds = time.monotonic() - t0
    time.sleep(0.5)
    left = [pid for pid in seen if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
            and "postgres" not in psutil.Process(pid).name()]
    handles_file = data_dir / ".handle_pids.json"
    stale = set(json.loads(handles_file.read_text() or "[]")) & seen if handles_file.exists() else set()
    P.row("33. timeout 15 godot-rag retrieve --batch - (idle stdin)", "rc 124 within 20 s, nothing left",
          f"rc {rc} after {seconds:.1f} s; processes left {left or 'none'}; stale handles {sorted(stale) or 'none'}",
          rc == 124 and seconds < 20 and not left and not stale)


def probe_scan(P, data_dir: Path, tmp: Path) -> None:
    root = tmp / "faults-hostile"
    root.mkdir(exist_ok=True)
    (root / "project.godot").write_text("config_version=5\n")
    (root / "good.gd").write_text("extends Node\n\n" + GOOD)
    (root / os.fsdecode(b"caf\xe9.gd")).write_text("extends Node\n")
    far = root.joinpath(*["a" * 60] * 5)
    far.mkdir(parents=True, exist_ok=True)
    (far / "deep.gd").write_text("extends Node\n")
    for link, target in (("loop1.gd", "loop2.gd"), ("loop2.gd", "loop1.gd"), ("dangling.gd", "missing.gd")):
        if not (root / link).is_symlink():
            (root / link).symlink_to(target)
    r = P.cli(["scan", str(root), "--out", str(tmp / "faults-scan-out"), "-s", "B", "--json", "--quiet"],
              P.base_env(data_dir), timeout=600)
    try:
        summary = json.loads(r.out)
    except json.JSONDecodeError:
        summary = {}
    listed = sorted(u["file"] for u in summary.get("unreadable", []))
    P.row("34. scan: a name not UTF-8, a 312-character res:// path, a link loop, a dangling link", "rc 0, 2 scanned, 4 listed",
          f"rc {r.rc}, {summary.get('files_scanned')} scanned, listed {listed}",
          r.rc == 0 and summary.get("files_scanned") == 2 and len(listed) == 4)


def probe_paren_chunk(P, srv) -> None:
    t0 = time.monotonic()
    status, _ = srv.request({"chunkText": "(" * 19_999, "strategy": "F"})
    seconds = time.monotonic() - t0
    P.row("35. one chunk of 19,999 `(` (F)", "answered in under 2 s", f"{status} in {seconds:.2f} s", seconds < 2)


def probe_mcp_stdio(P, data_dir: Path) -> None:
    lines = ["{oops", '{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"\\ud800"}}',
             '{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":' + deep(100_000) + "}}"]
    r = subprocess.run([P.GODOT_RAG, "mcp", "--no-warm"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                       env=P.base_env(data_dir), timeout=120)
    codes = [json.loads(line).get("error", {}).get("code") for line in r.stdout.splitlines() if line.strip()]
    P.row("36. mcp over stdio: a malformed line, a lone surrogate, 100,000 levels", "three -32700 replies",
          f"replies {codes}", codes == [-32700] * 3)


def run(P, srv, data_dir: Path, tmp: Path) -> None:
    P.guarded("28-29. HTTP faults", "4xx", probe_http, P, srv)
    P.guarded("35. pathological chunk", "bounded", probe_paren_chunk, P, srv)
    P.guarded("30, 32. batch faults", "one line each", probe_batch, P, data_dir, tmp)
    P.guarded("31. DSN masking", "masked", probe_dsn, P, tmp)
    P.guarded("33. idle batch under timeout", "rc 124", probe_idle_timeout, P, data_dir)
    P.guarded("34. scan of hostile paths", "listed", probe_scan, P, data_dir, tmp)
    P.guarded("36. mcp stdio", "-32700", probe_mcp_stdio, P, data_dir)
