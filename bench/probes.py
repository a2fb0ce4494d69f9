"""Re-runs the robustness probes against a `godot-rag serve` this script starts itself, plus the CLI
probes, and prints a Markdown table: probe | expected | observed | ok.

    .venv/bin/python bench/probes.py [--data-dir DIR] [--only GROUPS]   (default: env GODOT_RAG_DATA, every group)

Groups: http (the retrieve API, 1-9), llm (4, an LLM server that is down), dsn (16), cli (10-11), temp (11-17,
fresh data directories), edges (18-27: odd text, the batch rule, the scan's path rules, answers without
server paths, serve's --host/--port, Host names, body caps), faults (28-36, bench/probes_faults.py: nested JSON,
a DSN the driver cannot parse, an unreachable or idle batch, hostile scan paths, a chunk of 20,000 `(`, MCP stdio).

Stdlib only (urllib, subprocess). Every process it starts (the servers, the CLI commands and the
embedded PostgreSQL they start in temporary data directories) is stopped on every exit path.
Exit 0 even when probes fail (it is a report); 2 when the server could not be started.
Progress goes to stderr; the table to stdout.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
_bin = Path(sys.executable).parent / "godot-rag"
GODOT_RAG = str(_bin) if _bin.exists() else (shutil.which("godot-rag") or "godot-rag")
CHUNK = ("extends CharacterBody2D\n\nvar gravity = 980.0\n\nfunc _physics_process(delta):\n"
         "\tvelocity.y += gravity * delta\n\tmove_and_slide()\n")
BIG = 900 * 1024  # under the 1 MiB cap on a request body: these probe the validation, not the cap
SENTINEL = "SENTINEL_probe_outside_the_root"
LLM_DOWN = "http://127.0.0.1:9"
SECRET_DSN = "postgresql://u:secret@127.0.0.1:9/db"

GROUPS = ("http", "llm", "dsn", "cli", "temp", "edges", "faults")
ROWS: list[tuple[str, str, str, bool]] = []
PROCS: list[subprocess.Popen] = []  # everything started, stopped in cleanup()
DATA_DIRS: list[Path] = []  # embedded data directories whose postmaster we may have started
TEMP_DIRS: list[Path] = []
T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[probes {time.monotonic() - T0:6.0f}s] {msg}", file=sys.stderr, flush=True)


def cell(text) -> str:
    return str(text).replace("\r", "").replace("\n", " / ").replace("|", "\\|")


def row(probe: str, expected: str, observed: str, ok: bool) -> None:
    ROWS.append((probe, expected, observed, bool(ok)))
    log(f"{'ok  ' if ok else 'FAIL'} {probe}: {observed[:160]}")


def guarded(probe: str, expected: str, fn, *a, **kw) -> None:
    """A probe that crashes is a FAIL row, never the end of the script."""
    try:
        fn(*a, **kw)
    except KeyboardInterrupt:
        raise
    except Exception as e:
        row(probe, expected, f"probe crashed: {type(e).__name__}: {str(e)[:200]}", False)


# -- processes ------------------------------------------------------------------------------------------
def base_env(data_dir: Path | None = None, **extra) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for k in ("GODOT_RAG_DSN", "GODOT_RAG_DEBUG", "GODOT_RAG_DATA"):
        env.pop(k, None)
    if data_dir is not None:
        env["GODOT_RAG_DATA"] = str(data_dir)
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def spawn(cmd: list[str], **kw) -> subprocess.Popen:
    # Own session: a Ctrl-C on the terminal reaches only this script, which then stops them in order.
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    PROCS.append(p)
    return p


def stop_proc(p: subprocess.Popen, sig=signal.SIGTERM, wait: float = 60) -> int | None:
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(wait)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(10)
        except ProcessLookupError:
            pass
    return p.poll()


class Result:
    def __init__(self, rc, out: str, err: str, seconds: float):
        self.rc, self.out, self.err, self.seconds = rc, out, err, seconds

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err or "Traceback (most recent call last)" in self.out

    @property
    def last_err(self) -> str:
        lines = [l for l in self.err.splitlines() if l.strip()]
        return lines[-1].strip() if lines else ""

    def describe(self) -> str:
        n = len([l for l in self.err.splitlines() if l.strip()])
        rc = "timeout" if self.rc is None else f"exit {self.rc}"
        first = next((l.strip() for l in self.err.splitlines() if l.strip()), "")
        return (f"{rc} ({self.seconds:.0f} s): {self.last_err[:100] or '(no stderr)'}"
                + (f" [{n} stderr lines, first: {first[:70]}]" if n > 1 else "") + (" [TRACEBACK]" if self.traceback else ""))

    def one_line_error(self) -> bool:
        return self.rc not in (0, None) and not self.traceback and self.last_err.startswith("error:")


def cli(args: list[str], env: dict, timeout: float = 180, cwd: Path | None = None, exe: str | None = None) -> Result:
    t = time.monotonic()
    p = spawn([exe or GODOT_RAG, *args], env=env, cwd=str(cwd or ROOT), stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        stop_proc(p, wait=20)
        out, err = p.communicate()
        rc = None
    return Result(rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - t)


def ps_args() -> list[tuple[int, str]]:
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        pid, _, args = line.strip().partition(" ")
        if pid.isdigit():
            res.append((int(pid), args))
    return res


def postmasters(data_dir: Path) -> list[int]:
    d = str(Path(data_dir).resolve())
    return [pid for pid, args in ps_args() if "postgres" in args and (f"-D {d}" in args or f'-D "{d}"' in args
                                                                       or f"-D {data_dir}" in args)]


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        cur = todo.pop()
        kids = [c for c, pp in parent.items() if pp == cur]
        out += kids
        todo += kids
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`godot-rag serve` on a free port; ready when it prints its 'serving on' line."""

    def __init__(self, name: str, args: list[str], env: dict):
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.out_lines: list[str] = []
        self.ready = threading.Event()
        # the server writes its stderr to this file; the child holds its own descriptor once started
        with tempfile.NamedTemporaryFile(prefix=f"probe-serve-{name}-", suffix=".err", delete=False) as err_file:
            self.err_path = Path(err_file.name)
            TEMP_DIRS.append(self.err_path)
            self.proc = spawn([GODOT_RAG, "serve", "--host", "127.0.0.1", "--port", str(self.port), *args], env=env,
                              cwd=str(ROOT), stdout=subprocess.PIPE, stderr=err_file, stdin=subprocess.DEVNULL)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            self.out_lines.append(line)
            if "serving on http://" in line:
                self.ready.set()
        self.ready.set()  # exited

    def wait_ready(self, timeout: float) -> bool:
        self.ready.wait(timeout)
        return self.proc.poll() is None and any("serving on http://" in l for l in self.out_lines)

    def output(self) -> str:
        try:
            err = self.err_path.read_text(errors="replace")
        except OSError:
            err = ""
        return "".join(self.out_lines) + err

    def stderr_tail(self, n=3) -> str:
        lines = [l for l in self.output().splitlines() if l.strip()]
        return " / ".join(lines[-n:])

    def request(self, body, path="/api/retrieve", method="POST", timeout: float = 300, headers=None):
        return http_call(self.base + path, body, method, timeout, headers)

    def stop(self) -> int | None:
        return stop_proc(self.proc, signal.SIGTERM, wait=60)


def http_call(url: str, body, method="POST", timeout: float = 300, headers=None):
    """(status or None, body bytes). body: bytes/str sent as is (raw JSON text, NaN allowed) or an object."""
    if body is None:
        data = None
    elif isinstance(body, bytes):
        data = body
    elif isinstance(body, str):
        data = body.encode()
    else:
        data = json.dumps(body).encode()  # allow_nan: NaN/Infinity go out as raw JSON text
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        try:
            return e.code, e.read()
        except (OSError, http.client.HTTPException):
            return e.code, b""
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        return None, f"{type(e).__name__}: {e}".encode()


def body_json(data: bytes):
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def describe_http(status, data: bytes) -> str:
    if status is None:
        return f"connection error: {data.decode(errors='replace')[:100]}"
    d = body_json(data)
    if status == 200 and isinstance(d, dict):
        fb = (d.get("trace") or {}).get("llm_fallback")
        n = len(d.get("results") or [])
        return f"HTTP 200: {n} results, strategy {d.get('strategy')}" + (f"; llm_fallback: {str(fb)[:80]}" if fb else "")
    msg = (d.get("error") or d.get("detail") or json.dumps(d)) if isinstance(d, dict) else data.decode(errors="replace")
    return f"HTTP {status}: {str(msg)[:100]}"


def error_text(data: bytes) -> str:
    d = body_json(data)
    return str(d.get("error") or d.get("detail") or "") if isinstance(d, dict) else data.decode(errors="replace")


def is4xx(status) -> bool:
    return status is not None and 400 <= status < 500


def req(strategy="A", config=None, **top) -> dict:
    body = {"chunkText": CHUNK, "strategy": strategy}
    if config is not None:
        body["config"] = config
    body.update(top)
    return body


def raw_body(fields: dict[str, str]) -> str:
    """JSON text from already-encoded values (so NaN, Infinity, 1e400 and huge ints go out verbatim)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in fields.items()) + "}"


# -- HTTP probes ----------------------------------------------------------------------------------------
def http_simple(srv: Serve, probe: str, expected: str, body, check, timeout=300):
    def run():
        status, data = srv.request(body, timeout=timeout)
        row(probe, expected, describe_http(status, data), check(status, data))
    guarded(probe, expected, run)


def probes_http(srv: Serve, data_dir: Path):
    # 1. numeric settings as strings
    for name in ["weight_bm25", "k1", "b", "rrf_k", "ef_search", "codematch_alpha", "min_direct_evidence"]:
        http_simple(srv, f"1. D config {name}=\"abc\"", "4xx naming the setting", req("D", {name: "abc"}),
                    lambda s, d, n=name: is4xx(s) and n in error_text(d))
    def numeric_strings():
        seen = []
        for name, value in [("weight_bm25", "0.5"), ("k1", "1.5"), ("b", "0.5"), ("rrf_k", "60"), ("ef_search", "100"),
                            ("codematch_alpha", "0.5"), ("min_direct_evidence", "1")]:
            status, _ = srv.request(req("D", {name: value}))
            seen.append((name, value, status))
        acc = [f"{n}={v!r}" for n, v, st in seen if not is4xx(st)]
        row("1b. D numeric-looking strings (\"0.5\", \"60\") for the same 7 settings", "4xx for each",
            "; ".join(f"{n}={v!r}: {st}" for n, v, st in seen), not acc)
    guarded("1b. numeric-looking strings", "4xx", numeric_strings)
    # 2. NaN / Infinity
    for lit in ["NaN", "Infinity", "-Infinity"]:
        body = raw_body({"chunkText": json.dumps(CHUNK), "strategy": '"D"', "config": f'{{"weight_bm25": {lit}}}'})
        http_simple(srv, f"2. D weight_bm25={lit} (raw JSON)", "4xx", body, lambda s, d: is4xx(s))
    # 3. NUL byte
    nul = "extends Node\nfunc _ready():\n\tpr\x00int(1)\n"
    http_simple(srv, "3. A chunk with NUL at line 3 col 4", "422 naming line 3, column 4",
                {"chunkText": nul, "strategy": "A"},
                lambda s, d: s == 422 and "line 3" in error_text(d) and "column 4" in error_text(d))
    # 4. LLM-needing requests on a server without an LLM
    llm503 = lambda s, d: s == 503 and "LLM" in error_text(d)
    http_simple(srv, "4. F validator_llm=true, serve without LLM", "503 naming the LLM",
                req("F", {"validator_llm": True}), llm503)
    http_simple(srv, "4. E, serve without LLM", "503 naming the LLM", req("E"), llm503)
    http_simple(srv, "4. F validator_llm+llm_optional, serve without LLM", "200 with llm_fallback",
                req("F", {"validator_llm": True, "llm_optional": True}),
                lambda s, d: s == 200 and bool(((body_json(d) or {}).get("trace") or {}).get("llm_fallback")))
    http_simple(srv, "4. E llm_optional=true, serve without LLM", "200, fell back to D (llm_fallback set)",
                req("E", {"llm_optional": True}),
                lambda s, d: s == 200 and bool(((body_json(d) or {}).get("trace") or {}).get("llm_fallback")))
    # 5. assorted bad values
    http_simple(srv, "5. A k1=NaN (raw JSON)", "4xx",
                raw_body({"chunkText": json.dumps(CHUNK), "strategy": '"A"', "config": '{"k1": NaN}'}),
                lambda s, d: is4xx(s))
    http_simple(srv, '5. A segments="no"', "4xx", req("A", {"segments": "no"}), lambda s, d: is4xx(s))
    http_simple(srv, "5. A rerank_top=-1", "4xx", req("A", {"rerank_top": -1}), lambda s, d: is4xx(s))
    http_simple(srv, "5. A candidates=1e9", "4xx",
                raw_body({"chunkText": json.dumps(CHUNK), "strategy": '"A"', "config": '{"candidates": 1e9}'}),
                lambda s, d: is4xx(s))
    http_simple(srv, '5. {"strateg":"A","chunk":...}', "400 naming the unknown key(s)",
                {"strateg": "A", "chunk": CHUNK}, lambda s, d: s == 400 and "strateg" in error_text(d))
    http_simple(srv, '5. {"strateg":"A","chunkText":...}', "400 naming strateg",
                {"strateg": "A", "chunkText": CHUNK}, lambda s, d: s == 400 and "strateg" in error_text(d))
    # 6. 900 KB bodies that fail validation: the answer must stay small
    big = "x" * BIG
    cases = [
        ("900 KB chunkText + k=\"abc\"", {"chunkText": big, "strategy": "A", "k": "abc"}),
        ("900 KB chunkText alone", {"chunkText": big, "strategy": "A"}),
        ("unknown top-level key of 900 KB", {"chunkText": CHUNK, "strategy": "A", big: 1}),
        ("unknown config key of 900 KB", req("A", {big: 1})),
        ("config fusion = 900 KB string", req("A", {"fusion": big})),
        ("tables = [900 KB string]", {"chunkText": CHUNK, "strategy": "A", "tables": [big]}),
        ("strategy = 900 KB string", {"chunkText": CHUNK, "strategy": big}),
        ("extends = 900 KB string", {"chunkText": CHUNK, "strategy": "A", "extends": big}),
    ]
    for label, body in cases:
        def run(label=label, body=body):
            probe = f"6. {label}"
            status, data = srv.request(body)
            row(probe, "4xx, answer < 10 KB", f"{describe_http(status, data)[:110]} ... ({len(data)} bytes)",
                is4xx(status) and len(data) < 10 * 1024)
        guarded(f"6. {label}", "4xx, answer < 10 KB", run)
    # 7. sweep
    guarded("7. sweep (every field x bad values)", "every answer 4xx (no 500, no connection error)", sweep, srv)
    # 8. memory
    guarded("8. RSS, 10 + 10 distinct k1/b (B)", "growth bounded (LRU of 6 BM25 slots)", memory_probe, srv)
    # 9. tokenizer_parts and the BM25 cache files
    guarded("9. tokenizer_parts=true (B) vs BM25 cache", "no cache file deleted", cache_probe, srv, data_dir)


SWEEP_VALUES = ['"abc"', '"1"', "[]", "{}", "true", "null", "NaN", "Infinity", "-Infinity", "-1", "-1e308", "1e308",
                "1e400", "1" + "0" * 30, json.dumps("x" * 100_000), '"\\ud800x"']  # the last: a lone surrogate


def sweep(srv: Serve):
    status_code, data = srv.request(None, path="/api/strategies", method="GET", timeout=60)
    settings = (body_json(data) or {}).get("settings") or {}
    if not settings:
        raise RuntimeError(f"GET /api/strategies gave no settings (HTTP {status_code})")
    top = ["chunkText", "strategy", "k", "tables", "explain", "config", "godot_version", "extends"]
    counts = {"4xx": 0, "2xx": 0, "5xx": 0, "conn": 0, "other": 0}
    accepted: dict[str, list[str]] = {}
    bad = []
    n = 0
    for where, names in (("top", top), ("config", sorted(settings))):
        for name in names:
            for value in SWEEP_VALUES:
                base = {"chunkText": json.dumps(CHUNK), "strategy": '"A"'}
                if where == "top":
                    base[name] = value
                else:
                    base["config"] = raw_body({name: value})
                status, data = srv.request(raw_body(base), timeout=120)
                n += 1
                shown = value if len(value) < 20 else value[:8] + f"...({len(value)} chars)"
                field = name if where == "top" else "config." + name
                label = f"{field}={shown}"
                if status is None:
                    counts["conn"] += 1
                    bad.append((label, describe_http(status, data)))
                elif 400 <= status < 500:
                    counts["4xx"] += 1
                elif 200 <= status < 300:
                    counts["2xx"] += 1
                    accepted.setdefault(field, []).append(shown)
                elif status >= 500:
                    counts["5xx"] += 1
                    bad.append((label, describe_http(status, data)))
                else:
                    counts["other"] += 1
    shown = "; ".join(f"{f}: " + (f"all {len(v)} values" if len(v) == len(SWEEP_VALUES) else ", ".join(v))
                      for f, v in accepted.items())
    obs = (f"{n} requests ({len(SWEEP_VALUES)} values x {n // len(SWEEP_VALUES)} fields): {counts['4xx']} 4xx, "
           f"{counts['2xx']} 2xx, {counts['5xx']} 5xx, {counts['conn']} connection errors; "
           f"accepted (2xx): {shown[:900] or 'none'}")
    row("7. sweep (every field x bad values)", "no 5xx and no connection error (values answered 2xx are listed)", obs,
        counts["5xx"] == 0 and counts["conn"] == 0)
    for label, desc in bad:
        row(f"7. sweep: {label}", "4xx", desc, False)


def memory_probe(srv: Serve):
    pid = srv.proc.pid

    def measure():
        kids = descendants(pid)
        return rss_kb(pid), sum(rss_kb(k) for k in kids), len(kids)

    srv.request(req("B"), timeout=300)  # the default k1/b: warm
    before = measure()
    values = [(round(0.3 + 0.17 * i, 2), round(0.05 + 0.045 * i, 3)) for i in range(20)]  # k1 <= 10, b <= 1
    errors = []
    after = []
    for batch in (values[:10], values[10:]):
        for k1, b in batch:
            status, data = srv.request(req("B", {"k1": k1, "b": b}), timeout=300)
            if status != 200:
                errors.append(f"k1={k1},b={b}: {describe_http(status, data)[:60]}")
        after.append(measure())
    mb = lambda kb: kb / 1024
    g1, g2 = mb(after[0][0] - before[0]), mb(after[1][0] - after[0][0])
    obs = (f"serve RSS {mb(before[0]):.0f} MB -> {mb(after[0][0]):.0f} MB after 10 (+{g1:.0f}) -> "
           f"{mb(after[1][0]):.0f} MB after 20 (+{g2:.0f}); children ({after[1][2]}) "
           f"{mb(before[1]):.0f} -> {mb(after[1][1]):.0f} MB" + (f"; errors: {'; '.join(errors)[:200]}" if errors else ""))
    row("8. RSS, 10 + 10 distinct k1/b (B)", "second 10 add < 100 MB (bounded), all 200", obs,
        not errors and g2 < 100)


def cache_probe(srv: Serve, data_dir: Path):
    cache = Path(data_dir).resolve().parent / "cache"

    def files():
        return {p.name: p.stat().st_size for p in cache.glob("*")} if cache.is_dir() else {}

    before = files()
    status, data = srv.request(req("B", {"tokenizer_parts": True}), timeout=600)
    status2, data2 = srv.request(req("B"), timeout=300)  # and the default again
    after = files()
    deleted = sorted(set(before) - set(after))
    added = sorted(set(after) - set(before))
    for name in added:  # leave the cache as it was: remove only what this probe made the server write
        if name.startswith("bm25-") and name.endswith(".npz"):
            (cache / name).unlink(missing_ok=True)
    obs = (f"{cache}: {len(before)} files before, {len(after)} after; deleted: {', '.join(deleted) or 'none'}; "
           f"added (then removed again): {', '.join(added) or 'none'}; parts request {describe_http(status, data)[:40]}; "
           f"default request {describe_http(status2, data2)[:20]}")
    row("9. tokenizer_parts=true (B) vs BM25 cache", "no cache file deleted, both 200", obs,
        not deleted and status == 200 and status2 == 200 and bool(before))


def probes_llm_down(data_dir: Path):
    srv = Serve("llmdown", ["--no-warm", "--data-dir", str(data_dir), "--llm-url", LLM_DOWN], base_env(data_dir))
    try:
        if not srv.wait_ready(300):
            row("4. serve --llm-url http://127.0.0.1:9", "starts", f"did not start: {srv.stderr_tail()}", False)
            return
        llm503 = lambda s, d: s == 503 and "LLM" in error_text(d)
        fallback = lambda s, d: s == 200 and bool(((body_json(d) or {}).get("trace") or {}).get("llm_fallback"))
        http_simple(srv, "4. F validator_llm=true, LLM server down", "503 naming the LLM",
                    req("F", {"validator_llm": True}), llm503)
        http_simple(srv, "4. E, LLM server down", "503 naming the LLM", req("E"), llm503)
        http_simple(srv, "4. F validator_llm+llm_optional, LLM down", "200 with llm_fallback",
                    req("F", {"validator_llm": True, "llm_optional": True}), fallback)
        http_simple(srv, "4. E llm_optional=true, LLM down", "200, fell back to D (llm_fallback set)",
                    req("E", {"llm_optional": True}), fallback)
    finally:
        rc = srv.stop()
        tb = "Traceback" in srv.output()
        log(f"llm-down serve stopped (exit {rc}); traceback in its log: {tb}")


def probe_dsn_serve():
    srv = Serve("dsn", ["--dsn", SECRET_DSN], base_env())
    try:
        if not srv.wait_ready(120):
            out = srv.output()
            row("16. serve --dsn with password, request", "no 'secret' in output", f"did not start: "
                f"{srv.stderr_tail()[:100]}; 'secret' in output: {'secret' in out}", False)
            return
        status, data = srv.request(req("A"), timeout=60)
        _s2, d2 = srv.request(None, path="/api/strategies", method="GET", timeout=60)
    finally:
        srv.stop()
    out = srv.output()
    leaks = [w for w, text in (("body", data.decode(errors="replace")), ("strategies", d2.decode(errors="replace")),
                               ("serve output", out)) if "secret" in text]
    row("16. serve --dsn u:secret@..., POST A", "no 'secret' in body or serve output (503 expected)",
        f"{describe_http(status, data)}; 'secret' found in: {', '.join(leaks) or 'nowhere'}", not leaks)


# -- CLI probes -----------------------------------------------------------------------------------------
def cli_row(probe: str, expected: str, r: Result, ok: bool | None = None):
    row(probe, expected, r.describe(), r.one_line_error() if ok is None else ok)


def probes_cli_full(data_dir: Path, tmp: Path):
    env = base_env(data_dir)
    chunk_file = tmp / "chunk.gd"
    chunk_file.write_text(CHUNK)

    def batch_probe():
        f = tmp / "batch.jsonl"
        f.write_text("\n".join(json.dumps({"chunkText": c}) for c in ["", "x" * 20_001, CHUNK]) + "\n")
        r = cli(["retrieve", "--format", "result", "--batch", str(f), "--workers", "2", "-s", "B", "--quiet"], env, timeout=120)
        lines = [body_json(l.encode()) for l in r.out.splitlines() if l.strip()]
        errs = [(l or {}).get("status") for l in lines[:2]]
        ok = (r.rc == 0 and len(lines) == 3 and errs == [422, 413] and isinstance(lines[2], dict)
              and "results" in lines[2] and not r.traceback)
        row("10. retrieve --batch (empty, over-long, ok) --workers 2", "finishes < 120 s, error lines 422 and 413, 1 result",
            f"{r.describe()}; {len(lines)} result lines, statuses {errs}", ok)
    guarded("10. retrieve --batch --workers 2", "finishes", batch_probe)

    one = "exit != 0, one 'error:' line, no traceback"

    def binary_probe():
        f = tmp / "binary.gd"
        f.write_bytes(bytes(range(256)) * 8)
        cli_row("11. retrieve <binary file>", one, cli(["retrieve", str(f), "-s", "A"], env))
        g = tmp / "nul.gd"
        g.write_text("extends Node\nfunc _ready():\n\tpr\x00int(1)\n")
        cli_row("11. retrieve <UTF-8 file with a NUL>", one, cli(["retrieve", str(g), "-s", "A"], env))
    guarded("11. retrieve <binary file>", one, binary_probe)
    guarded("11. retrieve --set weight_bm25=abc", one, lambda: cli_row(
        "11. retrieve --set weight_bm25=abc", one,
        cli(["retrieve", str(chunk_file), "-s", "A", "--set", "weight_bm25=abc"], env)))

    def toml_probe():
        f = tmp / "bad.toml"
        f.write_text("[retrieve\nk = = 3\n")
        cli_row("11. retrieve --config <bad TOML>", one, cli(["retrieve", str(chunk_file), "-s", "A", "--config", str(f)], env))
    guarded("11. retrieve --config <bad TOML>", one, toml_probe)

    def batch_line_probe():
        f = tmp / "malformed.jsonl"
        f.write_text(json.dumps({"chunkText": CHUNK}) + "\n{not json\n" + json.dumps({"chunk": CHUNK}) + "\n"
                     + json.dumps({"chunkText": CHUNK}) + "\n")
        r = cli(["retrieve", "--format", "result", "--batch", str(f), "-s", "A", "--quiet"], env)
        lines = [body_json(l.encode()) or {} for l in r.out.splitlines() if l.strip()]
        errs = [(l.get("line"), l.get("status")) for l in lines if "error" in l]
        row("11. retrieve --batch <malformed line 2, line 3 without chunkText>",
            "exit 0; error lines for lines 2 and 3, results for 1 and 4", f"{r.describe()}; error lines {errs}; "
            f"{sum('results' in l for l in lines)} results", r.rc == 0 and not r.traceback and len(lines) == 4
            and [e[0] for e in errs] == [2, 3] and "results" in lines[0] and "results" in lines[3])
        r = cli(["retrieve", "--format", "result", "--batch", str(f), "-s", "A", "--quiet", "--strict"], env)
        cli_row("11. the same with --strict", one + ", names file:2 and file:3, no output", r,
                r.one_line_error() and ":2:" in r.last_err and ":3:" in r.last_err and not r.out.strip())
    guarded("11. retrieve --batch <malformed line>", "error lines", batch_line_probe)

    def llm_probe():
        r = cli(["retrieve", str(chunk_file), "--strategy", "E"], env, timeout=300)
        cli_row("11. retrieve --strategy E, no LLM", one + ", names the LLM", r, r.one_line_error() and "LLM" in r.last_err)
        r = cli(["retrieve", str(chunk_file), "-s", "F", "--validator-llm", "--llm-url", LLM_DOWN], env, timeout=300)
        cli_row("11. retrieve -s F --validator-llm --llm-url :9", one + ", names the LLM", r,
                r.one_line_error() and "LLM" in r.last_err)
    guarded("11. retrieve --strategy E, no LLM", one, llm_probe)

    def warnings_probe():
        e = base_env(data_dir)
        e.pop("XDG_RUNTIME_DIR", None)
        r = cli(["status"], e, timeout=180)
        found = [w for w in ("RuntimeDirWarning", "on_event", "DeprecationWarning") if w in r.err]
        row("17. `status` stderr (XDG_RUNTIME_DIR unset)", "exit 0, no RuntimeDirWarning / on_event deprecation",
            f"exit {r.rc}; found: {', '.join(found) or 'none'}" + (" [TRACEBACK]" if r.traceback else ""),
            r.rc == 0 and not found and not r.traceback)
    guarded("17. CLI stderr warnings", "none", warnings_probe)


def status_rows(env: dict) -> dict:
    r = cli(["status"], env, timeout=180)
    d = body_json(r.out.encode()) or {}
    return {t: v.get("rows") for t, v in (d.get("tables") or {}).items()}


def probe_nul_ingest(tmp: Path, pages_src: Path, renames: Path):
    pages = tmp / "pages-nul"
    shutil.copytree(pages_src, pages)
    victim = pages / "tutorials__demo__signals__c3d4e5f6.md"
    if not victim.exists():
        victim = sorted(pages.glob("*.md"))[0]
    text = victim.read_text()
    cut = text.find("\n", len(text) // 3) + 1
    victim.write_text(text[:cut] + "Some\x00prose with a NUL\n" + text[cut:])
    out = tmp / "jsonl-nul"
    r = cli(["ingest", "--pages", str(pages), "--renames", str(renames), "--out", str(out), "--quiet"], base_env())
    d = body_json(r.out.strip().splitlines()[-1].encode()) if r.out.strip() else None
    report = (out / "ingest_report.jsonl").read_text() if (out / "ingest_report.jsonl").exists() else ""
    stripped = "NUL" in report and not any("\x00" in (out / f).read_text() for f in os.listdir(out) if f.endswith(".jsonl"))
    warned = bool(d and d.get("pages_warning")) or "NUL" in r.err
    row("11. ingest of a page with a NUL byte", "exit 0, warns (pages_warning / report), NUL stripped",
        f"{r.describe()}; pages_warning={d.get('pages_warning') if d else '?'}; report mentions NUL: {'NUL' in report}; "
        f"stripped: {stripped}", r.rc == 0 and warned and stripped and not r.traceback)
    data = tmp / "data-nul" / "pgdata"
    DATA_DIRS.append(data)
    r2 = cli(["load", "--jsonl", str(out), "--quiet"], base_env(data), timeout=300)
    ok = (r2.rc == 0 or (r2.one_line_error() and r2.last_err.count(":") >= 3)) and not r2.traceback
    row("11. load of that ingest into a fresh data dir", "exit 0, or one line naming file:line:field",
        r2.describe() + (f"; stdout {r2.out.strip()[:80]}" if r2.rc == 0 else ""), ok)


def probe_concurrent_load(jsonl: Path, env: dict):
    t = time.monotonic()
    ps = [spawn([GODOT_RAG, "load", "--jsonl", str(jsonl), "--force", "--quiet"], env=env, cwd=str(ROOT),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL) for _ in range(2)]
    res = []
    for p in ps:
        try:
            out, err = p.communicate(timeout=240)
            res.append(Result(p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - t))
        except subprocess.TimeoutExpired:
            stop_proc(p, wait=20)
            out, err = p.communicate()
            res.append(Result(None, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - t))
    row("13. two concurrent load --force", "both exit 0 (one may wait), no traceback",
        " ; ".join(f"#{i + 1} {r.describe()[:90]}" for i, r in enumerate(res)),
        all(r.rc == 0 and not r.traceback for r in res))


def probes_cli_temp(tmp: Path):
    pages_src = FIXTURES / "pages"
    renames = FIXTURES / "renames.jsonl"

    # 11. ingest of a page holding a NUL byte, then load into a fresh data dir
    guarded("11. ingest of a page with a NUL byte", "warns and strips", probe_nul_ingest, tmp, pages_src, renames)

    # 12. an empty docs_chunks.jsonl must not wipe the store
    data = tmp / "data" / "pgdata"
    DATA_DIRS.append(data)
    env = base_env(data)
    jsonl = tmp / "jsonl"
    state = {}

    def setup():
        r = cli(["ingest", "--pages", str(pages_src), "--renames", str(renames), "--out", str(jsonl), "--quiet"], base_env())
        r2 = cli(["load", "--jsonl", str(jsonl), "--quiet"], env, timeout=300)
        state["rows"] = status_rows(env)
        row("12. setup: ingest + load fixture pages (fresh data dir)", "exit 0 twice, rows loaded",
            f"ingest {r.describe()[:40]}; load {r2.describe()[:40]}; rows {state['rows']}",
            r.rc == 0 and r2.rc == 0 and bool(state["rows"].get("docs_chunks")))
    guarded("12. setup: ingest + load fixture pages", "exit 0", setup)

    def empty_load():
        empty = tmp / "jsonl-empty"
        shutil.copytree(jsonl, empty)
        (empty / "docs_chunks.jsonl").write_text("")
        r = cli(["load", "--jsonl", str(empty), "--quiet"], env, timeout=300)
        row("12. load with an empty docs_chunks.jsonl", "refused without --prune-all: exit != 0, says what would be deleted",
            r.describe(), r.one_line_error() and "delete" in r.last_err)
        after = status_rows(env)
        row("12. rows after the refused load", f"unchanged ({state.get('rows')})", f"rows {after}",
            bool(state.get("rows")) and after == state.get("rows"))
    guarded("12. load with an empty docs_chunks.jsonl", "refused", empty_load)

    # 13. two concurrent load --force
    guarded("13. two concurrent load --force", "both exit 0", probe_concurrent_load, jsonl, env)

    # 14. SIGTERM to serve stops its embedded PostgreSQL
    def sigterm():
        srv = Serve("temp", ["--data-dir", str(data)], env)
        try:
            if not srv.wait_ready(300):
                row("14. SIGTERM to serve (temp data dir)", "starts", f"did not start: {srv.stderr_tail()[:120]}", False)
                return
            running = postmasters(data)
            srv.proc.send_signal(signal.SIGTERM)
            try:
                rc = srv.proc.wait(60)
            except subprocess.TimeoutExpired:
                rc = "still running after 60 s"
            left = postmasters(data)
            for _ in range(30):
                if not left:
                    break
                time.sleep(0.5)
                left = postmasters(data)
        finally:
            srv.stop()
        tb = "Traceback" in srv.output()
        row("14. SIGTERM to serve (temp data dir)", "serve exits, no postgres for that data dir remains",
            f"postmaster before: {running or 'none'}; serve exit {rc}; left after: {left or 'none'}"
            + (" [TRACEBACK in serve log]" if tb else ""), bool(running) and not left and not tb)
    guarded("14. SIGTERM to serve", "no postgres left", sigterm)

    # 15. status from another cwd with no GODOT_RAG_DATA; retrieve against an empty database
    def default_dir():
        home = Path(tempfile.mkdtemp(prefix="probe-home-"))
        cwd = Path(tempfile.mkdtemp(prefix="probe-cwd-"))
        TEMP_DIRS.extend([home, cwd])
        default = home / ".local" / "share" / "godot-rag" / "pgdata"
        DATA_DIRS.append(default)
        e = base_env()
        e["HOME"] = str(home)
        e.pop("XDG_DATA_HOME", None)
        r = cli(["status"], e, cwd=cwd, timeout=240)
        d = body_json(r.out.encode()) or {}
        where = str(d.get("database", ""))
        row("15. status, other cwd, no GODOT_RAG_DATA (HOME=tmp)", "exit 0, prints the data dir (the user data dir)",
            f"exit {r.rc}; database: {where[:110]}; cwd left empty: {not any(cwd.iterdir())}"
            + (" [TRACEBACK]" if r.traceback else ""),
            r.rc == 0 and str(default) in where and not any(cwd.iterdir()))
        f = cwd / "chunk.gd"
        f.write_text(CHUNK)
        r = cli(["retrieve", str(f), "-s", "A"], e, cwd=cwd, timeout=240)
        low = r.last_err.lower()
        cli_row("15. retrieve against the empty database", "exit != 0, says the database is empty, run ingest/load", r,
                r.one_line_error() and "empty" in low and "ingest" in low and "load" in low)
    guarded("15. status, no GODOT_RAG_DATA", "prints the data dir", default_dir)

    # 16. DSN password masking in status
    def dsn_status():
        r = cli(["status", "--dsn", SECRET_DSN], base_env(), timeout=120)
        leak = "secret" in r.out or "secret" in r.err
        row("16. status --dsn postgresql://u:secret@127.0.0.1:9/db", "no 'secret' in output; one-line error",
            f"{r.describe()}; 'secret' in output: {leak}", not leak and r.one_line_error())
    guarded("16. status --dsn with password", "masked", dsn_status)


def probe_import_warnings():
    r = cli(["-W", "error::DeprecationWarning", "-c", "import godot_rag.api.app"], base_env(), timeout=120, exe=sys.executable)
    row("17. python -W error::DeprecationWarning -c 'import godot_rag.api.app'", "exit 0",
        r.describe(), r.rc == 0 and not r.traceback)


def serve_log_row(srv: Serve):
    out = srv.output()
    found = [w for w in ("RuntimeDirWarning", "on_event", "DeprecationWarning") if w in out]
    tbs = out.count("Traceback (most recent call last)")
    row("17. main serve stderr", "no RuntimeDirWarning / on_event deprecation, no traceback",
        f"warnings: {', '.join(found) or 'none'}; tracebacks: {tbs}", not found and tbs == 0)


# -- edges: odd text, the batch rule, the scan's path rules, server paths, serve's edges ----------------
def scan_layout(tmp: Path) -> Path:
    """allowed/game: a project with a .gd link to a sentinel file outside the allowed root; outside/."""
    outside = tmp / "outside"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.gd").write_text(f'extends Node\nfunc _ready():\n\tprint("{SENTINEL}")\n')
    game = tmp / "allowed" / "game"
    game.mkdir(parents=True, exist_ok=True)
    (game / "project.godot").write_text('config_version=5\n[application]\nconfig/name="game"\n')
    (game / "player.gd").write_text(CHUNK)
    (game / "leak.gd").symlink_to(outside / "secret.gd")
    return tmp / "allowed"


def wait_scan(srv: Serve, job_id: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _status, data = srv.request(None, path=f"/api/scan/{job_id}?results=false", method="GET", timeout=60)
        d = body_json(data) or {}
        if d.get("status") in ("done", "error", "cancelled"):
            return d
        time.sleep(0.5)
    return {"status": "timeout"}


def server_paths(data_dir: Path, allowed: Path) -> list[str]:
    """Absolute paths of the server machine that no answer to a client may show."""
    paths = {str(Path(data_dir).resolve()), str(Path(data_dir).resolve().parent), str(allowed.resolve()),
             tempfile.gettempdir(), str(ROOT), sys.prefix}
    return sorted(p for p in paths if p not in ("", "/"))


def stream_body(port: int, path: str, size: int, piece: int = 2**20):
    """POSTs a JSON body of `size` bytes a piece at a time, reading the answer as soon as there is one (a
    server may answer before the body ends). Returns (status or None, bytes sent, answer body)."""
    import select

    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\nConnection: close\r\n\r\n").encode()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(head)
        try:
            while sent < size and not select.select([s], [], [], 0)[0]:
                part = b"x" * min(piece, size - sent)
                s.sendall(part)
                sent += len(part)
        except OSError:
            pass  # the server answered and closed
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    m = re.match(rb"HTTP/1\.[01] (\d+)", data)
    return (int(m.group(1)) if m else None), sent, data.split(b"\r\n\r\n", 1)[-1]


SURROGATE = 'print("\ud800")\n'  # json.dumps sends it as the escape \ud800, as a client's JSON would


def probe_surrogate_http(srv: Serve):
    seen = []
    for strategy in "ABCDEF":
        status, data = srv.request({"chunkText": SURROGATE, "strategy": strategy})
        seen.append(f"{strategy}: {status}")
        ok = status == 422 and "surrogate" in error_text(data)
        if not ok:
            row(f"18. {strategy}: chunkText with a lone surrogate", "422 naming it", describe_http(status, data), False)
    row("18. POST /api/retrieve, chunkText with a lone surrogate, strategies A-F", "422 for each, naming it",
        "; ".join(seen), all(x.endswith(" 422") for x in seen))


def probe_surrogate_batch(tmp: Path, env: dict):
    f = tmp / "surrogate.jsonl"
    f.write_text("".join(json.dumps({"chunkText": t}) + "\n" for t in (CHUNK, SURROGATE, CHUNK, CHUNK)))
    r = cli(["retrieve", "--format", "result", "--batch", str(f), "-s", "D", "--workers", "2", "--quiet"], env, timeout=300)
    lines = [body_json(l.encode()) or {} for l in r.out.splitlines() if l.strip()]
    errs = [(l.get("line"), l.get("status")) for l in lines if "error" in l]
    row("19. retrieve --batch -s D, a lone surrogate on line 2 of 4", "exit 0; an error line for line 2, the rest answered",
        f"{r.describe()}; {len(lines)} lines, error lines {errs}",
        r.rc == 0 and errs == [(2, 422)] and len(lines) == 4 and not r.traceback)


def probe_serve_args(tmp: Path):
    for args in (["--port", "70000"], ["--port", "abc"], ["--host", "bad.invalid"]):
        r = cli(["serve", *args, "--no-warm", "--data-dir", str(tmp / "never")], base_env(), timeout=120)
        n = len([l for l in r.err.splitlines() if l.strip()])
        row(f"24. serve {' '.join(args)}", "one 'error:' line, no traceback", f"{r.describe()}",
            r.one_line_error() and n == 1)


def probe_batch_rule(tmp: Path, env: dict):
    f = tmp / "typed.jsonl"
    f.write_text("\n".join([json.dumps({"chunkText": CHUNK}), json.dumps({"chunkText": 5}), "[]",
                            json.dumps({"chunkText": "x\x00y"}), json.dumps({"chunkText": "x" * 20_001}),
                            json.dumps({"chunkText": CHUNK})]) + "\n")
    r = cli(["retrieve", "--format", "result", "--batch", str(f), "-s", "B", "--quiet"], env, timeout=300)
    lines = [body_json(l.encode()) or {} for l in r.out.splitlines() if l.strip()]
    errs = [l.get("line") for l in lines if "error" in l]
    summary = next((body_json(l.encode()) for l in r.err.splitlines() if "batch_summary" in l), {}) or {}
    bad = (summary.get("batch_summary") or {}).get("bad_lines")
    row("25. retrieve --batch: {\"chunkText\": 5}, [], NUL, over-long between good lines",
        "exit 0; error lines 2-5, lines 1 and 6 answered; summary bad_lines 4",
        f"{r.describe()}; error lines {errs}; bad_lines {bad}",
        r.rc == 0 and errs == [2, 3, 4, 5] and len(lines) == 6 and bad == 4)
    r = cli(["retrieve", "--format", "result", "--batch", str(f), "-s", "B", "--quiet", "--strict"], env, timeout=300)
    named = [n for n in (2, 3, 4, 5) if f":{n}:" in r.last_err]
    row("25. the same with --strict", "one 'error:' line naming lines 2, 3, 4 and 5; nothing run",
        f"{r.describe()[:150]}; names lines {named}", r.one_line_error() and named == [2, 3, 4, 5] and not r.out.strip())


def probes_edges(srv: Serve, data_dir: Path, tmp: Path, allowed: Path):
    env = base_env(data_dir)

    guarded("18. lone surrogate over HTTP", "422", probe_surrogate_http, srv)

    guarded("19. lone surrogate in a batch", "error line", probe_surrogate_batch, tmp, env)

    def nul_path_probe():
        status, data = srv.request({"path": f"{allowed}/game\x00/x"}, path="/api/scan")
        row("20. POST /api/scan, a NUL byte in path", "400, one message", describe_http(status, data), status == 400)
    guarded("20. NUL in a scan path", "400", nul_path_probe)

    def outside_probe():
        a = srv.request({"path": "/etc"}, path="/api/scan")
        b = srv.request({"path": "/nonexistent/zzz"}, path="/api/scan")
        c = srv.request({"path": f"{allowed}/../outside"}, path="/api/scan")
        row("21. POST /api/scan: /etc vs /nonexistent/zzz vs ALLOWED/../outside",
            "the same answer (403) for each: nothing tells whether it exists",
            f"{describe_http(*a)} | {describe_http(*b)} | {describe_http(*c)}",
            a[0] == b[0] == c[0] == 403 and a[1] == b[1] == c[1])
    guarded("21. outside the root", "same answer", outside_probe)

    state = {}

    def symlink_probe():
        status, data = srv.request({"path": str(allowed / "game")}, path="/api/scan")
        job = (body_json(data) or {}).get("job_id")
        if status != 202 or not job:
            row("22. scan of a folder holding a .gd link out of the root", "202, done", describe_http(status, data), False)
            return
        d = wait_scan(srv, job)
        texts = {"status": srv.request(None, path=f"/api/scan/{job}", method="GET", timeout=60)[1].decode(errors="replace")}
        for name in ("report.html", "report.md", "scan.json", "findings.sarif", "chunks.jsonl", "findings.jsonl"):
            st, body = srv.request(None, path=f"/api/scan/{job}/{name}", method="GET", timeout=60)
            texts[name] = body.decode(errors="replace") if st == 200 else f"HTTP {st}"
        state["texts"] = texts
        leaked = [n for n, t in texts.items() if SENTINEL in t]
        row("22. scan of a folder holding a .gd file link to a sentinel outside the root",
            "done; the sentinel's content in no answer or output",
            f"job {d.get('status')}; sentinel found in: {', '.join(leaked) or 'nothing'}",
            d.get("status") == "done" and not leaked)
    guarded("22. file link out of the root", "not read", symlink_probe)

    def paths_probe():
        texts = state.get("texts") or {}
        zip_buf = __import__("io").BytesIO()
        with __import__("zipfile").ZipFile(zip_buf, "w") as z:
            z.writestr("game/player.gd", CHUNK)
        _st, data = http_call(srv.base + "/api/scan", zip_buf.getvalue(), timeout=60,
                             headers={"Content-Type": "application/zip"})
        job = (body_json(data) or {}).get("job_id")
        if job:
            wait_scan(srv, job)
            for name in ("status", "report.html", "report.md", "scan.json", "findings.sarif"):
                path = f"/api/scan/{job}" + ("" if name == "status" else f"/{name}")
                texts[f"upload {name}"] = srv.request(None, path=path, method="GET", timeout=60)[1].decode(errors="replace")
        found = sorted({f"{n}: {p}" for n, t in texts.items() for p in server_paths(data_dir, allowed) if p in t})
        row("23. GET /api/scan/{id} and every output (a server folder, an upload)",
            "no absolute server path (data dir, temp dir, allowed root, checkout)",
            f"{len(texts)} answers; server paths found: {'; '.join(found)[:300] or 'none'}", bool(texts) and not found)
    guarded("23. server paths in answers", "none", paths_probe)

    guarded("24. serve --port/--host", "one line", probe_serve_args, tmp)

    guarded("25. the batch rule", "error lines", probe_batch_rule, tmp, env)

    def host_probe():
        evil = srv.request(None, path="/api/strategies", method="GET", timeout=60, headers={"Host": "evil.example"})
        local = srv.request(None, path="/api/strategies", method="GET", timeout=60,
                            headers={"Host": f"localhost:{srv.port}"})
        row("26. GET /api/strategies with Host: evil.example, then Host: localhost:PORT",
            "4xx for evil.example (DNS rebinding), 200 for localhost",
            f"{describe_http(*evil)[:90]} | HTTP {local[0]}", is4xx(evil[0]) and local[0] == 200)
    guarded("26. Host header", "4xx", host_probe)

    def big_body_probe():
        before = rss_kb(srv.proc.pid)
        status, sent, answer = stream_body(srv.port, "/api/retrieve", 60 * 2**20)
        after = rss_kb(srv.proc.pid)
        row("27. POST /api/retrieve with a 60 MB body", "413 before the body is read, server RSS grows < 10 MB",
            f"HTTP {status} after {sent / 2**20:.0f} MB sent: {error_text(answer)[:60]}; "
            f"RSS {before / 1024:.0f} -> {after / 1024:.0f} MB", status == 413 and after - before < 10 * 1024)
    guarded("27. 60 MB body", "413", big_body_probe)


# -- cleanup --------------------------------------------------------------------------------------------
def wait_postmasters_gone(d: Path, tries: int) -> list[int]:
    """The postmasters still running in data dir `d` after up to `tries` half-second waits."""
    left = []
    for _ in range(tries):
        left = postmasters(d)
        if not left:
            break
        time.sleep(0.5)
    return left


def full_dir_holders(d: Path, mine: set[int]) -> list[int]:
    """The live processes outside this script that still hold the full data dir."""
    try:
        return [p for p in json.loads((d / ".handle_pids.json").read_text() or "[]")
                if p not in mine and Path(f"/proc/{p}").exists()]
    except (OSError, ValueError):
        return []


def cleanup(full_dir: Path | None, full_was_running: bool) -> list[str]:
    """Stop what we started; then any postmaster left in a data dir we used (the full one only when it was
    not running before and no process outside this script still holds it)."""
    notes = []
    for p in reversed(PROCS):
        if p.poll() is None:
            stop_proc(p, signal.SIGTERM, wait=60)
            notes.append(f"stopped pid {p.pid}")
    mine = {p.pid for p in PROCS} | {os.getpid()}
    dirs = list(DATA_DIRS) + ([full_dir] if full_dir is not None and not full_was_running else [])
    for d in dirs:
        left = wait_postmasters_gone(d, 20)
        if not left:
            continue
        if d == full_dir:
            holders = full_dir_holders(d, mine)
            if holders:
                notes.append(f"postgres in {d} kept: still used by pids {holders}")
                continue
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # fast shutdown
        wait_postmasters_gone(d, 40)
        notes.append(f"had to stop leftover postmaster(s) {left} in {d}"
                     + ("" if not postmasters(d) else " (STILL RUNNING)"))
    return notes


def print_table(seconds: float):
    print("| probe | expected | observed | ok |")
    print("|---|---|---|---|")
    def order(r):
        m = re.match(r"(\d+)(\w*)\.", r[0])
        return (int(m.group(1)), m.group(2)) if m else (99, "")

    for probe, expected, observed, ok in sorted(ROWS, key=order):
        print(f"| {cell(probe)} | {cell(expected)} | {cell(observed)} | {'ok' if ok else 'FAIL'} |")
    n_ok = sum(r[3] for r in ROWS)
    print()
    print(f"run time: {seconds:.0f} s")
    print(f"{len(ROWS)} probes, {n_ok} ok, {len(ROWS) - n_ok} FAIL")
    sys.stdout.flush()


def probes_with_main_serve(only: set[str], srv: Serve, data_dir: Path, tmp: Path, allowed: Path) -> None:
    """The chosen groups that run while the main serve (the full database) is up."""
    if "http" in only:
        probes_http(srv, data_dir)
    if "edges" in only:
        probes_edges(srv, data_dir, tmp, allowed)
    if "faults" in only:  # 28-36 (bench/probes_faults.py)
        import probes_faults

        probes_faults.run(sys.modules[__name__], srv, data_dir, tmp)
    if "llm" in only:
        guarded("4. serve with the LLM server down", "503 / 200 fallback", probes_llm_down, data_dir)
    if "dsn" in only:
        guarded("16. serve --dsn with password", "masked", probe_dsn_serve)
    if "cli" in only:
        probes_cli_full(data_dir, tmp)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default=os.environ.get("GODOT_RAG_DATA"),
                    help="data directory of the full database (default: env GODOT_RAG_DATA)")
    ap.add_argument("--keep-temp", action="store_true", help="keep the temporary directories")
    ap.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated groups (default all: {','.join(GROUPS)})")
    args = ap.parse_args()
    only = {g.strip() for g in args.only.split(",") if g.strip()}
    if only - set(GROUPS):
        print(f"error: unknown group(s) {', '.join(sorted(only - set(GROUPS)))}; valid: {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    if not args.data_dir:
        print("error: give --data-dir DIR or set GODOT_RAG_DATA", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir).resolve()
    os.environ["HF_HUB_OFFLINE"] = "1"

    def _term(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _term)
    signal.signal(signal.SIGINT, _term)  # also when started in the background, where SIGINT comes in ignored
    full_was_running = bool(postmasters(data_dir))
    tmp = Path(tempfile.mkdtemp(prefix="probe-data-"))
    TEMP_DIRS.append(tmp)
    code = 0
    srv = None
    try:
        log(f"starting serve on {data_dir} (postgres already running there: {full_was_running})")
        allowed = scan_layout(tmp)
        srv = Serve("main", ["--data-dir", str(data_dir), "--allow-path", str(allowed)], base_env(data_dir))
        if not srv.wait_ready(900):
            row("0. serve starts", "prints its ready line", f"did not start (exit {srv.proc.poll()}): {srv.stderr_tail()}", False)
            return 2
        row("0. serve starts (full database, no LLM)", "prints its ready line",
            f"ready after {time.monotonic() - T0:.0f} s", True)
        probes_with_main_serve(only, srv, data_dir, tmp, allowed)
        rc = srv.stop()
        guarded("17. main serve stderr", "clean", serve_log_row, srv)
        log(f"main serve stopped (exit {rc})")
        if "temp" in only:
            probes_cli_temp(tmp)
            guarded("17. import with -W error::DeprecationWarning", "exit 0", probe_import_warnings)
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); stopping everything")
        row("interrupted", "-", f"stopped by {e or 'SIGINT'}", False)
        code = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        notes = cleanup(data_dir, full_was_running)
        left_pm = [(str(d), postmasters(d)) for d in DATA_DIRS if postmasters(d)]
        if not full_was_running and postmasters(data_dir):
            left_pm.append((str(data_dir), postmasters(data_dir)))
        stray = [pid for pid, a in ps_args() if "godot-rag" in a and " serve " in f" {a} " and pid in {p.pid for p in PROCS}]
        row("cleanup: nothing left running", "no serve / postgres started here still running",
            f"left postmasters: {left_pm or 'none'}; serve: {stray or 'none'}; {'; '.join(notes) or 'nothing to stop'}",
            not left_pm and not stray and not any("had to stop" in n for n in notes))
        if not args.keep_temp:
            for d in TEMP_DIRS:
                shutil.rmtree(d, ignore_errors=True) if d.is_dir() else d.unlink(missing_ok=True)
        print_table(time.monotonic() - T0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return code


if __name__ == "__main__":
    sys.exit(main())
