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
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..retrieve.engine.fingerprint import results_version
from ..store.db import database_workers
from ..store.scan_files import check_out_dir, write_handoff
from .options import FAIL_ON, FORMATS, Retrieved, ScanError, ScanInterrupted, ScanOptions, ScanResult, ScanRun
from .outputs import finish, hide_server_paths
from .plan import plan
from .plan import symbol_tables as _symbol_tables
from .workers import Done, Item, _init_worker, _worker, run_inline, run_pool

# The names the scan's callers and tests import from here.
__all__ = [
    "FAIL_ON",
    "FORMATS",
    "ScanError",
    "ScanInterrupted",
    "ScanOptions",
    "ScanResult",
    "_init_worker",
    "_worker",
    "cache_key",
    "check_options",
    "default_out",
    "hide_server_paths",
    "run_scan",
]

SCAN_FORMAT = 2  # bump when the cached value's shape changes (2: the `check` stage's trace is kept)
POOL_MIN_CHUNKS = 16  # below this, one in-process retriever is quicker than starting workers


def default_out(root: Path) -> Path:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(root).resolve().name).strip("._") or "project"
    return Path("scan-out") / name


def cache_key(text: str, strategy: str, cfg: dict, db_digest: str) -> str:
    chunk_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    conf = hashlib.sha256(json.dumps([SCAN_FORMAT, results_version(), strategy, cfg],
                                     sort_keys=True, default=str).encode()).hexdigest()
    return f"{chunk_sha}:{db_digest}:{conf[:24]}"



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
    if opts.fail_on not in (None, *FAIL_ON):
        raise ScanError(f"--fail-on {opts.fail_on!r}: valid: {', '.join(FAIL_ON)}")
    if opts.max_chunk_chars < 200:
        raise ScanError("--max-chunk-chars must be at least 200")
    if opts.max_file_bytes < 1:
        raise ScanError("--max-file-bytes must be at least 1")
    return strategy, cfg.to_dict()



def run_scan(opts: ScanOptions, *, db: Any = None, retriever: Any = None,
             progress: Callable[[str, int, int], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> ScanResult:
    """The whole scan. Raises ScanError (usage or database; exit 2) or ScanInterrupted (Ctrl-C, or
    `cancelled()` turned true; what was done is cached). A database this call opens itself (`opts.dsn`,
    `opts.data_dir`) is stopped again on every way out."""
    from ..store.db import Database, StoreError

    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    progress = progress or (lambda phase, done, total: None)
    strategy, base_cfg = check_options(opts)
    baseline = _baseline(opts)
    progress("discover", 0, 0)
    disc, files, _ = plan(opts, strategy, base_cfg)
    out_dir = Path(opts.out) if opts.out else default_out(disc.root)
    problem = check_out_dir(out_dir)
    if problem:
        raise ScanError(problem)
    own_db = retriever is None and db is None
    if retriever is not None:
        db = retriever.db
    elif db is None:
        db = Database(dsn=opts.dsn, data_dir=opts.data_dir)
    try:
        return _scan(ScanRun(opts, strategy, base_cfg, disc, files, out_dir, db, t0, started, baseline), retriever,
                     progress, cancelled)
    except StoreError as e:
        raise ScanError(str(e)) from None
    finally:
        if own_db:
            db.stop()  # the embedded server this call started (a shared one keeps running for its other users)


def _baseline(opts: ScanOptions) -> frozenset[str]:
    """The fingerprints of `--baseline`, read before anything is scanned (a bad file is a usage error)."""
    from .triage import BaselineError, read_baseline

    if opts.baseline is None:
        return frozenset()
    try:
        return read_baseline(opts.baseline)
    except BaselineError as e:
        raise ScanError(str(e)) from None


def _database_state(db: Any) -> str:
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


@dataclass
class _Compute:
    """How the chunks not in the cache are computed, and where each result goes."""
    pools: ExitStack  # the workers' stack: closed once they are done, so a Ctrl-C while they end interrupts the scan
    early: tuple | None  # what `_early_pool` started, if it did
    workers: int  # the most worker processes allowed
    symbols: dict  # each project's symbol table's symbols, as the workers get them
    done: Done
    cancelled: Callable[[], bool] | None


def _scan(run: ScanRun, retriever: Any, progress: Callable[[str, int, int], None],
          cancelled: Callable[[], bool] | None) -> ScanResult:
    digest = _database_state(run.db)
    cache, cache_path = _open_cache(run)
    workers = run.opts.workers or os.cpu_count() or 1
    with ExitStack() as stack:  # the workers, stopped on every way out
        stack.callback(cache.close)
        # The workers and their tables' file: closed inside the `try` below, so that a Ctrl-C while they end is an
        # interrupted scan too; on any other way out the outer stack ends them.
        pools = stack.enter_context(ExitStack())
        early = _early_pool(pools, run, cache, workers)
        tables = _symbol_tables(run.opts, run.disc, run.files, cache)
        symbols = {rel: t.symbols for rel, t in tables.items()}
        if early is not None:
            write_handoff(early[1], symbols)
        jobs = _jobs(run, digest)
        t_retrieve = time.perf_counter()
        results = {} if run.opts.refresh else cache.get_many(list(jobs))
        results = {k: v for k, v in results.items() if "error" not in v or v.get("cacheable")}
        todo = [k for k in jobs if k not in results]
        from_cache, total = len(jobs) - len(todo), len(jobs)
        done = _recorder(run, stack, cache, results, (from_cache, total), progress)
        progress("retrieve", from_cache, total)
        try:
            todo.sort(key=lambda k: -len(jobs[k][0]))  # longest first: the pool's tail is short
            used = _compute(run, _Compute(pools, early, workers, symbols, done, cancelled), retriever,
                            [(k, *jobs[k]) for k in todo])
        except KeyboardInterrupt:
            raise ScanInterrupted(len(results), total) from None
    retrieve_s = time.perf_counter() - t_retrieve
    progress("write", total, total)
    return finish(run, Retrieved(results, from_cache, len(todo), used, retrieve_s, cache_path, tables))


def _open_cache(run: ScanRun) -> tuple[Any, Path]:
    from ..store.scan_cache import CACHE_FILE, ScanCache

    cache_path = Path(run.opts.cache) if run.opts.cache else run.db.cache_dir / CACHE_FILE
    try:
        return ScanCache(cache_path), cache_path
    except Exception as e:
        raise ScanError(f"{cache_path}: cannot open the scan cache ({e})") from None


def _jobs(run: ScanRun, digest: str) -> dict[str, tuple[str, dict, tuple | None]]:
    """The distinct chunks to look up by cache key; each chunk gets its key."""
    jobs: dict[str, tuple[str, dict, tuple | None]] = {}
    for entry in run.files:
        for c in entry["chunks"]:
            ref = c.get("context")
            c["key"] = cache_key(c["text"], run.strategy, c["cfg"] if ref is None else {**c["cfg"], "context": c["context_key"]},
                                 digest)
            jobs.setdefault(c["key"], (c["text"], c["cfg"], ref))
    return jobs


def _recorder(run: ScanRun, stack: ExitStack, cache: Any, results: dict[str, dict], counts: tuple[int, int],
              progress: Callable[[str, int, int], None]) -> Done:
    """What takes each result as it arrives: cached (when it may be), kept, counted on the bar. `counts`: (from
    the cache, in all)."""
    from_cache, total = counts
    bar = tqdm(total=total, initial=from_cache, desc="scan", unit="chunk", disable=run.opts.quiet, file=sys.stderr,
               dynamic_ncols=True)
    stack.callback(bar.close)

    def done(key: str, value: dict) -> None:
        if "error" not in value or value.get("cacheable"):
            cache.put(key, value)  # committed now: a Ctrl-C later keeps it
        results[key] = value
        bar.update(1)
        progress("retrieve", len(results), total)

    return done


def _compute(run: ScanRun, how: _Compute, retriever: Any, items: list[Item]) -> int:
    """Every item through the pool (the early one, or one started now) or in this process; the workers used."""
    if items and (how.early is not None or (how.workers > 1 and len(items) >= POOL_MIN_CHUNKS)):
        if how.early is not None:
            pool, used = how.early[0], how.early[2]
        else:
            used = min(how.workers, len(items))
            pool = how.pools.enter_context(database_workers(
                run.db, used, _init_worker, (run.db.dsn, str(run.db.data_dir), run.strategy, run.opts.quiet, how.symbols)))
        run_pool(pool, items, how.done, how.cancelled)
        how.pools.close()  # the workers end and let go of the database
        return used
    if items:
        run_inline(run, retriever, items, how.done, how.cancelled, how.symbols)
        return 1
    return 0


def _early_pool(stack: ExitStack, run: ScanRun, cache: Any, workers: int) -> tuple[Any, Path, int] | None:
    """(pool, the file its symbol tables will be in, its size) for a scan with an empty cache, else None. Its
    workers load the models while this process builds the projects' symbol tables (1.5 s of the Godot 4 demos,
    about what a worker's start takes); they read the tables with their first chunk. With results cached,
    the pool waits until the chunks left to compute are known (there may be none)."""
    # Distinct chunks: the same text with the same settings is one job (at least; its context may split it).
    chunks = len({(c["text"], json.dumps(c["cfg"], sort_keys=True, default=str)) for e in run.files for c in e["chunks"]})
    if workers <= 1 or chunks < POOL_MIN_CHUNKS or not (run.opts.refresh or cache.count() == 0):
        return None
    handoff = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="godot-rag-symbols-"))) / "symbols.pickle"
    n = min(workers, chunks)
    pool = stack.enter_context(database_workers(run.db, n, _init_worker, (run.db.dsn, str(run.db.data_dir), run.strategy,
                                                                        run.opts.quiet, None, str(handoff))))
    return pool, handoff, n
