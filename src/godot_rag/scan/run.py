"""`godot-rag scan`: every script of a project (or a folder of projects) through a strategy.

find projects and scripts (project.py) -> chunk each file (chunking.py) -> look each chunk up in
the cache by (chunk sha256, database digest, strategy and settings) -> retrieve the rest, one
process per core, each result cached the moment it arrives -> findings (findings.py) -> chunks.jsonl,
findings.jsonl, findings.sarif, report.html, report.md and scan.json in the output directory.

Results are read only as JSON dicts (`result.model_dump(mode="json")`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

from ..retrieve.engine.fingerprint import results_version
from ..store.db import database_workers
from ..store.scan_files import (
    DEFAULT_MAX_FILE_BYTES,
    check_out_dir,
    git_changed_files,
    read_handoff,
    read_script,
    write_handoff,
    write_json,
    write_jsonl,
    write_text,
)
from .chunking import DEFAULT_MAX_CHARS, EXTENDS_RE, chunk_text
from .findings import SEVERITIES, chunk_findings, fails, summarize
from .project import Discovery, Script, discover, inside

SCAN_FORMAT = 1  # bump when the cached value's shape changes
FORMATS = ("jsonl", "sarif", "html", "md")
FAIL_ON = ("none",) + SEVERITIES
POOL_MIN_CHUNKS = 16  # below this, one in-process retriever is quicker than starting workers
KEEP_TRACE = ("validate", "api")


class ScanError(Exception):
    """A usage or database problem: one line for the user, exit code 2."""


class ScanInterrupted(Exception):
    def __init__(self, done: int, total: int):
        super().__init__(f"interrupted after {done} of {total} chunks; finished chunks are cached, "
                         "run the same command again to resume")
        self.done, self.total = done, total


@dataclass
class ScanOptions:
    root: Path
    out: Path | None = None
    strategy: str = "F"
    godot_version: str | None = None  # None: each project's own (project.godot), else for every chunk
    workers: int = 0  # 0: one per core
    formats: tuple[str, ...] = FORMATS
    changed_since: str | None = None
    files: tuple[Path, ...] = ()  # only these scripts (a pre-commit hook passes the changed ones)
    include_addons: bool = False
    fail_on: str | None = None
    quiet: bool = False
    settings: dict = field(default_factory=dict)  # RetrieveConfig settings by name
    cache: Path | None = None
    refresh: bool = False
    max_chunk_chars: int = DEFAULT_MAX_CHARS
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # a larger .gd file is listed as skipped (--max-file-bytes)
    extends_hint: bool = True  # pass the file's `extends` with the chunks that lack one
    shown_root: str | None = None  # a scan for a client (HTTP): the root's name in the outputs, which show no server path
    project_symbols: bool = True  # pass each chunk its project's symbol table, file and Godot version (the context)


@dataclass
class ScanResult:
    summary: dict
    files: list[dict]  # per file: its chunks (text, lines, accepted record ids, findings)
    findings: list[dict]
    out: Path

    @property
    def failed(self) -> bool:
        return bool(self.summary.get("failed"))


def default_out(root: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(root).resolve().name).strip("._") or "project"
    return Path("scan-out") / name


def cache_key(text: str, strategy: str, cfg: dict, db_digest: str) -> str:
    chunk_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    conf = hashlib.sha256(json.dumps([SCAN_FORMAT, results_version(), strategy, cfg], sort_keys=True, default=str).encode()).hexdigest()
    return f"{chunk_sha}:{db_digest}:{conf[:24]}"


def compact_result(d: dict) -> dict:
    """What the scan keeps of one retrieve result (a JSON dict): the records as `retrieve --json` has
    them, with only the `validate` and `api` stages of their trace; docs payloads are left out (they
    are read back from the database by id when the outputs are written)."""
    results = []
    for c in d.get("results") or []:
        trace = c.get("trace") or {}
        results.append({"table": c["table"], "id": c["id"], "score": c.get("score"), "rank": c.get("rank"),
                        "source": c.get("source"), "group": c.get("group"), "verdict": c.get("verdict"),
                        "reason": c.get("reason"),
                        "payload": None if c["table"] == "docs_chunks" else c.get("payload"),
                        "trace": {k: trace[k] for k in KEEP_TRACE if k in trace}})
    trace = d.get("trace") or {}
    return {"strategy": d.get("strategy"), "chunk_sha256": d.get("chunk_sha256"), "k": d.get("k"),
            "results": results, "parser": (trace.get("gdscript") or {}).get("parser"),
            "total_ms": trace.get("total_ms")}


def retrieve_compact(retriever, text: str, strategy: str, cfg_dict: dict, context=None) -> dict:
    from ..gdscript.chunk_text import ChunkTextError
    from ..retrieve.engine.config import RetrieveConfig
    from ..store.db import StoreError

    try:
        result = retriever.retrieve(text, strategy, RetrieveConfig.from_mapping(cfg_dict), explain=False, context=context)
    except ChunkTextError as e:
        return {"error": str(e), "cacheable": True}
    except StoreError:
        raise
    except Exception as e:  # noqa: BLE001 - one bad chunk is reported, the scan goes on
        return {"error": f"internal error: {type(e).__name__}: {str(e)[:200]}", "cacheable": False}
    return compact_result(result.model_dump(mode="json"))


# -- worker processes -----------------------------------------------------------------------------
_worker: dict = {}


def chunk_context(tables: dict, ref: tuple | None, memo: dict):
    """The RequestContext of a chunk from its (project, file, extends, godot_version) and the projects'
    symbol tables; one validated context (and its lookups) per project, copied per file."""
    if ref is None:
        return None
    from ..gdscript.project import RequestContext

    project, file_rel, extends, godot_version = ref
    base = memo.get(project)
    if base is None:
        base = RequestContext(project_symbols=tables.get(project))
        base.index()
        memo[project] = base
    return base.model_copy(update={"file_path": file_rel, "extends": extends, "godot_version": godot_version})


def _init_worker(dsn, data_dir, strategy, quiet, tables=None, tables_file=None):
    """One Retriever per process; the worker lets go of the embedded server when the pool closes it.
    `tables_file`: where the symbol tables will be (`write_handoff`), read with the first chunk."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    if quiet:
        _quiet_models()
    try:
        from ..retrieve.engine.config import RetrieveConfig
        from ..retrieve.pipeline import Retriever
        from ..store.db import Database

        db = Database(dsn=dsn, data_dir=data_dir)
        db.release_at_worker_exit()
        # One process per core: the query encoder inside each stays on one thread, as in a batch's workers
        # (two workers with an encoder on two threads each put four threads on two cores).
        retriever = Retriever(db, embed_threads=1)
        retriever.warm(RetrieveConfig(), embed=strategy != "B")
        _worker.update(retriever=retriever, strategy=strategy, tables=tables or {}, tables_file=tables_file, contexts={})
    except Exception as e:  # noqa: BLE001 - raised again with the first chunk (an initializer that raises loops forever)
        _worker["error"] = e


def _work(item: tuple[str, str, dict, tuple | None]) -> tuple[str, dict]:
    if "error" in _worker:
        raise _worker["error"]
    key, text, cfg_dict, ref = item
    if _worker.get("tables_file"):
        _worker["tables"] = read_handoff(_worker.pop("tables_file"))
    context = chunk_context(_worker["tables"], ref, _worker["contexts"])
    return key, retrieve_compact(_worker["retriever"], text, _worker["strategy"], cfg_dict, context)


def _quiet_models() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers.utils import logging as tlog

        tlog.disable_progress_bar()
    except Exception:  # noqa: BLE001
        pass


# -- the scan -------------------------------------------------------------------------------------
def check_options(opts: ScanOptions) -> tuple[str, dict]:
    from ..retrieve.engine.config import ConfigError, RetrieveConfig
    from ..retrieve.strategies import check_strategy, llm_user

    try:
        strategy = check_strategy(opts.strategy)
        cfg = RetrieveConfig.from_mapping(dict(opts.settings or {}))
    except ConfigError as e:
        raise ScanError(str(e)) from None
    if llm_user([strategy], cfg) is not None:
        raise ScanError("scan runs without an LLM: strategy E, validator_llm and the qwen reranker are not available here")
    bad = [f for f in opts.formats if f not in FORMATS]
    if bad:
        raise ScanError(f"unknown format(s) {', '.join(bad)}; valid: {', '.join(FORMATS)}")
    if opts.godot_version not in (None, "auto", "3", "4"):
        raise ScanError(f"--godot-version {opts.godot_version!r}: valid: auto, 3, 4")
    if opts.fail_on not in (None,) + FAIL_ON:
        raise ScanError(f"--fail-on {opts.fail_on!r}: valid: {', '.join(FAIL_ON)}")
    if opts.max_chunk_chars < 200:
        raise ScanError("--max-chunk-chars must be at least 200")
    if opts.max_file_bytes < 1:
        raise ScanError("--max-file-bytes must be at least 1")
    return strategy, cfg.to_dict()


def _real(path: Path) -> Path:
    """`path` with its links resolved, or as given when they cannot be (a loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def plan(opts: ScanOptions, strategy: str, base_cfg: dict) -> tuple[Discovery, list[dict], list[Script]]:
    """Projects, scripts and chunks: every file entry with its chunks and their settings."""
    root = Path(opts.root)
    if not root.exists():
        raise ScanError(f"{root}: no such directory")
    if not root.is_dir():
        raise ScanError(f"{root}: not a directory (give the project's folder)")
    disc = discover(root, include_addons=opts.include_addons)
    if not disc.scripts:
        skipped = ", ".join(f"{k} x{v}" for k, v in sorted(disc.skipped_dirs.items()))
        raise ScanError(f"{root}: no .gd files found" + (f" (skipped: {skipped})" if skipped else "")
                        + (f" ({disc.ignored_files} excluded by .gitignore)" if disc.ignored_files else ""))
    scripts = disc.scripts
    if opts.changed_since:
        try:
            changed = git_changed_files(disc.root, opts.changed_since)
        except ValueError as e:
            raise ScanError(str(e)) from None
        scripts = [s for s in scripts if _real(s.path) in changed]
    if opts.files:
        chosen = {_real(Path(f)) for f in opts.files}
        scripts = [s for s in scripts if _real(s.path) in chosen]
    files = []
    for s in scripts:
        version = opts.godot_version or s.project.godot_version
        entry: dict[str, Any] = {"file": s.rel, "project": s.project.rel, "godot_version": version,
                 "version_source": "--godot-version" if opts.godot_version else s.project.source,
                 "chunker": None, "parse_error_lines": [], "error": None, "extends": None, "chunks": []}
        text: str | None
        err: str | None
        if s.problem is not None:
            text, err = None, s.problem
        elif s.outside or not inside(disc.root, s.path):  # checked again just before the read: it may have changed
            text, err = None, "a link to a file outside the scanned folder: not read"
        else:
            text, err = read_script(s.path, opts.max_file_bytes)
        if err is not None or text is None:
            entry["error"] = err
            files.append(entry)
            continue
        fc = chunk_text(text, opts.max_chunk_chars)
        entry.update(chunker=fc.chunker, parse_error_lines=fc.parse_error_lines[:20], extends=fc.extends)
        for c in fc.chunks:
            cfg = dict(base_cfg, godot_version=version)
            if (opts.extends_hint and fc.extends and not base_cfg.get("extends") and c.kind != "class"
                    and not EXTENDS_RE.search(c.text)):
                cfg["extends"] = fc.extends
            entry["chunks"].append({**c.to_dict(), "text": c.text, "cfg": cfg})
        files.append(entry)
    return disc, files, scripts


def run_scan(opts: ScanOptions, *, db=None, retriever=None, dsn: str | None = None, data_dir=None,
             progress: Callable[[str, int, int], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> ScanResult:
    """The whole scan. Raises ScanError (usage or database; exit 2) or ScanInterrupted (Ctrl-C, or
    `cancelled()` turned true; what was done is cached). A database this call opens itself is stopped
    again on every way out."""
    from ..store.db import Database, StoreError

    t0 = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    progress = progress or (lambda phase, done, total: None)
    strategy, base_cfg = check_options(opts)
    progress("discover", 0, 0)
    disc, files, scripts = plan(opts, strategy, base_cfg)
    out_dir = Path(opts.out) if opts.out else default_out(disc.root)
    problem = check_out_dir(out_dir)
    if problem:
        raise ScanError(problem)
    own_db = retriever is None and db is None
    if retriever is not None:
        db = retriever.db
    elif db is None:
        db = Database(dsn=dsn, data_dir=data_dir)
    try:
        return _scan(opts, strategy, base_cfg, disc, files, out_dir, db, retriever, progress, cancelled, t0, started)
    except StoreError as e:
        raise ScanError(str(e)) from None
    finally:
        if own_db:
            db.stop()  # the embedded server this call started (a shared one keeps running for its other users)


def hide_server_paths(text: str, db, places: dict[Path, str]) -> str:
    """A message for a client: the database's paths and each of `places` (a path -> what it is) replaced."""
    text = db.hide_paths(text)
    for path, shown in sorted(places.items(), key=lambda p: -len(str(p[0]))):
        for form in {str(Path(path).resolve()), str(Path(path).absolute())} - {"/"}:
            text = text.replace(form, shown)
    return text


def _strings(value, fn):
    """`value` (JSON-like) with `fn` applied to every string in it."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, fn) for v in value]
    return value


def _database_state(db) -> str:
    import psycopg

    from ..errors import mask_secrets
    from ..store.db import StoreError
    from ..store.queries import require_records
    from ..store.scan_cache import database_digest

    try:
        with db.connect(autocommit=True) as conn:
            require_records(conn, db.describe())
            return database_digest(conn)
    except psycopg.Error as e:
        raise StoreError(f"database error ({db.describe()}): {mask_secrets(str(e).strip().splitlines()[0])}") from None


def _scan(opts, strategy, base_cfg, disc, files, out_dir, db, retriever, progress, cancelled, t0, started) -> ScanResult:
    from ..store.scan_cache import CACHE_FILE, ScanCache

    digest = _database_state(db)
    cache_path = Path(opts.cache) if opts.cache else db.cache_dir / CACHE_FILE
    try:
        cache = ScanCache(cache_path)
    except Exception as e:  # noqa: BLE001 - sqlite errors, permissions
        raise ScanError(f"{cache_path}: cannot open the scan cache ({e})") from None
    workers = opts.workers or os.cpu_count() or 1
    with ExitStack() as stack:  # the workers, stopped on every way out
        stack.callback(cache.close)
        # The workers and their tables' file: closed inside the `try` below, so that a Ctrl-C while they end is an
        # interrupted scan too; on any other way out the outer stack ends them.
        pools = stack.enter_context(ExitStack())
        early = _early_pool(pools, opts, db, strategy, files, cache, workers)
        tables = _symbol_tables(opts, disc, files, cache)
        symbols = {rel: t.symbols for rel, t in tables.items()}
        if early is not None:
            write_handoff(early[1], symbols)
        jobs: dict[str, tuple[str, dict, tuple | None]] = {}
        for entry in files:
            for c in entry["chunks"]:
                ref = c.get("context")
                c["key"] = cache_key(c["text"], strategy, c["cfg"] if ref is None else {**c["cfg"], "context": c["context_key"]}, digest)
                jobs.setdefault(c["key"], (c["text"], c["cfg"], ref))
        t_retrieve = time.perf_counter()
        results = {} if opts.refresh else cache.get_many(list(jobs))
        results = {k: v for k, v in results.items() if "error" not in v or v.get("cacheable")}
        todo = [k for k in jobs if k not in results]
        from_cache = len(jobs) - len(todo)
        total = len(jobs)
        bar = tqdm(total=total, initial=from_cache, desc="scan", unit="chunk", disable=opts.quiet, file=sys.stderr,
                   dynamic_ncols=True)
        stack.callback(bar.close)
        progress("retrieve", from_cache, total)

        def done(key: str, value: dict) -> None:
            if "error" not in value or value.get("cacheable"):
                cache.put(key, value)  # committed now: a Ctrl-C later keeps it
            results[key] = value
            bar.update(1)
            progress("retrieve", len(results), total)

        try:
            todo.sort(key=lambda k: -len(jobs[k][0]))  # longest first: the pool's tail is short
            items = [(k, *jobs[k]) for k in todo]
            if todo and (early is not None or (workers > 1 and len(todo) >= POOL_MIN_CHUNKS)):
                if early is not None:
                    pool, used = early[0], early[2]
                else:
                    used = min(workers, len(todo))
                    pool = pools.enter_context(database_workers(db, used, _init_worker,
                                                                (db.dsn, str(db.data_dir), strategy, opts.quiet, symbols)))
                _run_pool(pool, items, done, cancelled)
                pools.close()  # the workers end and let go of the database
            elif todo:
                used = 1
                _run_inline(db, retriever, strategy, items, done, cancelled, opts.quiet, symbols)
            else:
                used = 0
        except KeyboardInterrupt:
            raise ScanInterrupted(len(results), total) from None
    retrieve_s = time.perf_counter() - t_retrieve
    progress("write", total, total)
    return _finish(opts, strategy, disc, files, out_dir, db, results, from_cache, len(todo), used, retrieve_s,
                   cache_path, t0, started, tables)


def _early_pool(stack: ExitStack, opts, db, strategy: str, files: list[dict], cache, workers: int):
    """(pool, the file its symbol tables will be in, its size) for a scan with an empty cache, else None. Its
    workers load the models while this process builds the projects' symbol tables (1.5 s of the Godot 4 demos,
    about what a worker's start takes); they read the tables with their first chunk. With results cached,
    the pool waits until the chunks left to compute are known (there may be none)."""
    # Distinct chunks: the same text with the same settings is one job (at least; its context may split it).
    chunks = len({(c["text"], json.dumps(c["cfg"], sort_keys=True, default=str)) for e in files for c in e["chunks"]})
    if workers <= 1 or chunks < POOL_MIN_CHUNKS or not (opts.refresh or cache.count() == 0):
        return None
    handoff = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="godot-rag-symbols-"))) / "symbols.pickle"
    n = min(workers, chunks)
    pool = stack.enter_context(database_workers(db, n, _init_worker, (db.dsn, str(db.data_dir), strategy, opts.quiet,
                                                                    None, str(handoff))))
    return pool, handoff, n


def _symbol_tables(opts, disc, files, cache) -> dict:
    """Each project's symbol table (through the cache), and each chunk's context reference
    (project, file, extends, Godot version): the scan passes them with every chunk."""
    from ..gdscript.project import RES, RequestContext
    from .symbols import build_project_symbols, chunk_symbols_key

    if not opts.project_symbols:
        return {}
    built = {}
    wanted = {e["project"] for e in files if e["chunks"]}
    for p in disc.projects:
        if p.rel in wanted:
            built[p.rel] = build_project_symbols(p, cache, opts.max_file_bytes)
    t0 = time.perf_counter()
    indexes = {rel: RequestContext(project_symbols=t.symbols).index() for rel, t in built.items()}
    by_rel = {p.rel: p for p in disc.projects}
    memos: dict[str, dict] = {rel: {} for rel in indexes}  # each name's part of the keys, once per project
    for entry in files:
        table = built.get(entry["project"])
        if table is None:
            continue
        project = by_rel[entry["project"]]
        file_rel = (disc.root / entry["file"]).relative_to(project.dir).as_posix()
        script = next((s for s in table.symbols if s.kind == "script" and s.file == file_rel), None)
        version = opts.godot_version if opts.godot_version not in (None, "auto") else table.godot_version
        if opts.godot_version == "auto":
            version = None
        ref = (entry["project"], file_rel, script.extends if script is not None else None, version)
        for c in entry["chunks"]:
            c["context"] = ref
            scopes = [RES + file_rel] + ([ref[2]] if ref[2] else [])
            c["context_key"] = [chunk_symbols_key(indexes[entry["project"]], c["text"], scopes, memos[entry["project"]]),
                                *ref[1:]]
    if built:  # the keys' time is the symbol table's too
        first = next(iter(built.values()))
        first.seconds += time.perf_counter() - t0
    return built


def _run_pool(pool, items, done, cancelled) -> None:
    for key, value in pool.imap_unordered(_work, items, chunksize=1):
        done(key, value)
        if cancelled is not None and cancelled():
            raise KeyboardInterrupt


def _run_inline(db, retriever, strategy, items, done, cancelled, quiet, symbols: dict) -> None:
    """`symbols`: each project's symbol table's symbols, as the workers get them."""
    from ..retrieve.engine.config import RetrieveConfig
    from ..retrieve.pipeline import Retriever

    if quiet:
        _quiet_models()
    retriever = retriever or Retriever(db)
    retriever.warm(RetrieveConfig(), embed=strategy != "B")
    memo: dict = {}
    for key, text, cfg, ref in items:
        if cancelled is not None and cancelled():
            raise KeyboardInterrupt
        done(key, retrieve_compact(retriever, text, strategy, cfg, chunk_context(symbols, ref, memo)))


def _finish(opts, strategy, disc, files, out_dir, db, results, from_cache, computed, workers, retrieve_s, cache_path,
            t0, started, tables=None) -> ScanResult:
    from ..store.scan_cache import docs_links, fetch_payloads
    from . import report as report_mod
    from .sarif import build_sarif

    all_findings: list[dict] = []
    chunk_errors = []
    docs_ids: set[str] = set()
    for entry in files:
        counts = {s: 0 for s in SEVERITIES}
        for c in entry["chunks"]:
            value = results.get(c["key"]) or {"error": "no result"}
            c["error"] = value.get("error")
            recs = [r for r in value.get("results") or [] if r.get("verdict") in (None, "accept")]
            c["records"] = recs
            c["parser"] = value.get("parser")
            c["findings"] = chunk_findings(entry["file"], c, recs) if strategy == "F" else []
            for f in c["findings"]:
                f["godot_version"] = entry["godot_version"]
                f["project"] = entry["project"]
                counts[f["severity"]] += 1
                docs_ids.update(f["docs_chunk_ids"])
            all_findings.extend(c["findings"])
            docs_ids.update(r["id"] for r in recs if r["table"] == "docs_chunks")
            if c["error"]:
                chunk_errors.append({"file": entry["file"], "start_line": c["start_line"], "end_line": c["end_line"],
                                     "error": c["error"]})
        entry["findings"] = counts
    with db.connect(autocommit=True) as conn:
        links = docs_links(conn, sorted(docs_ids))
        payloads = fetch_payloads(conn, "docs_chunks", sorted(
            {r["id"] for e in files for c in e["chunks"] for r in c["records"] if r["table"] == "docs_chunks"}))
    n_chunks = sum(len(e["chunks"]) for e in files)
    scanned = [e for e in files if e["error"] is None]
    projects = []
    for p in disc.projects:
        mine = [e for e in files if e["project"] == p.rel]
        table = (tables or {}).get(p.rel)
        projects.append({**p.to_dict(), "godot_version_used": opts.godot_version or p.godot_version,
                         "files": len(mine), "chunks": sum(len(e["chunks"]) for e in mine),
                         "symbol_table": table.summary() if table is not None else None})
    fsum = summarize(all_findings)
    seconds = time.perf_counter() - t0
    summary = {
        "root": str(disc.root), "out": str(out_dir), "strategy": strategy, "started": started,
        "godot_version_override": opts.godot_version, "projects": projects,
        "no_project_godot": any(p.config_version is None and p.source.startswith("no project.godot") for p in disc.projects),
        "files_found": len(disc.scripts), "files_selected": len(files), "files_scanned": len(scanned),
        "changed_since": opts.changed_since,
        "unreadable": [{"file": e["file"], "error": e["error"]} for e in files if e["error"]],
        "line_fallback": [e["file"] for e in scanned if e["chunker"] == "line-fallback"],
        "skipped_dirs": disc.skipped_dirs, "gitignored_files": disc.ignored_files,
        "include_addons": opts.include_addons,
        "chunks": n_chunks, "unique_chunks": len({c["key"] for e in files for c in e["chunks"]}),
        "computed": computed, "cached": from_cache, "workers": workers,
        "retrieve_seconds": round(retrieve_s, 2),
        "symbols_seconds": round(sum(t.seconds for t in (tables or {}).values()), 3),
        "chunks_per_second": round(computed / retrieve_s, 2) if computed and retrieve_s > 0 else None,
        "chunk_errors": chunk_errors, "findings": fsum, "fail_on": opts.fail_on or "none",
        "failed": fails(all_findings, opts.fail_on), "database": db.describe(), "cache": str(cache_path),
        "seconds": round(seconds, 2),
    }
    if opts.shown_root is not None:  # for a client: paths relative to the scanned root, no server path
        def hide(text: str) -> str:
            return hide_server_paths(text, db, {disc.root: opts.shown_root, out_dir: "(output)", cache_path: "(scan cache)"})

        summary = _strings(summary, hide) | {"root": opts.shown_root, "out": None, "cache": None,
                                             "database": db.describe_public()}
        for entry in files:
            entry["error"] = entry["error"] and hide(entry["error"])
            for c in entry["chunks"]:
                c["error"] = c["error"] and hide(c["error"])
    out_dir.mkdir(parents=True, exist_ok=True)
    if "jsonl" in opts.formats:
        write_jsonl(out_dir / "chunks.jsonl", _chunk_rows(files, strategy, payloads))
        write_jsonl(out_dir / "findings.jsonl", all_findings)
    if "sarif" in opts.formats:
        write_json(out_dir / "findings.sarif", build_sarif(all_findings, None if opts.shown_root is not None else disc.root,
                                                              summary, links))
    if "html" in opts.formats:
        write_text(out_dir / "report.html", report_mod.render_html(summary, files, all_findings, links))
    if "md" in opts.formats:
        write_text(out_dir / "report.md", report_mod.render_md(summary, files, all_findings, links))
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    write_json(out_dir / "scan.json", summary)
    return ScanResult(summary, files, all_findings, out_dir)


def _chunk_rows(files: list[dict], strategy: str, payloads: dict[str, dict]):
    for entry in files:
        for c in entry["chunks"]:
            records = []
            for r in c["records"]:
                r = dict(r)
                if r["table"] == "docs_chunks":
                    r["payload"] = payloads.get(r["id"], {})
                records.append(r)
            row = {"file": entry["file"], "project": entry["project"], "chunk": c["index"],
                   "start_line": c["start_line"], "end_line": c["end_line"], "kind": c["kind"], "name": c["name"],
                   "chunkText": c["text"], "chunk_sha256": c["key"].split(":", 1)[0], "strategy": strategy,
                   "config": {"godot_version": c["cfg"].get("godot_version"), "extends": c["cfg"].get("extends")},
                   "results": records, "findings": len(c["findings"])}
            if c.get("context"):  # what `retrieve --batch` needs beside the project's symbols to repeat this chunk
                _, file_rel, extends, version = c["context"]
                row["context"] = {"file_path": file_rel, "extends": extends, "godot_version": version}
            if c.get("parts"):
                row.update(part=c["part"], parts=c["parts"])
            if c["error"]:
                row["error"] = c["error"]
            yield row
