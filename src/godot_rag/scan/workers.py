"""The scan's retrieval: a worker process's setup and work, the pool's and the in-process loop, and what the
scan keeps of one retrieve result (results are read only as JSON dicts, `result.model_dump(mode="json")`)."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from ..store.scan_files import read_handoff
from .options import ScanRun

KEEP_TRACE = ("validate", "api", "check")  # `check`: the API check's findings, each at its own line
Item = tuple[str, str, dict, tuple | None]  # (cache key, chunk text, settings, context reference)
Done = Callable[[str, dict], None]


def compact_result(d: dict) -> dict:
    """What the scan keeps of one retrieve result (a JSON dict): the records as `retrieve --json` has
    them, with only the `validate`, `api` and `check` stages of their trace; docs payloads are left out (they
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


def retrieve_compact(retriever: Any, text: str, strategy: str, cfg_dict: dict, context: Any = None) -> dict:
    from ..gdscript.chunk_text import ChunkTextError
    from ..retrieve.engine.config import RetrieveConfig
    from ..store.db import StoreError

    try:
        result = retriever.retrieve(text, strategy, RetrieveConfig.from_mapping(cfg_dict), explain=False, context=context)
    except ChunkTextError as e:
        return {"error": str(e), "cacheable": True}
    except StoreError:
        raise
    except Exception as e:
        return {"error": f"internal error: {type(e).__name__}: {str(e)[:200]}", "cacheable": False}
    return compact_result(result.model_dump(mode="json"))


# -- worker processes -----------------------------------------------------------------------------
_worker: dict[str, Any] = {}


def chunk_context(tables: dict, ref: tuple | None, memo: dict) -> Any:
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


def _init_worker(dsn: str | None, data_dir: str | None, strategy: str, quiet: bool, tables: dict | None = None,
                 tables_file: str | None = None) -> None:
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
    except Exception as e:
        _worker["error"] = e


def _work(item: Item) -> tuple[str, dict]:
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
    except Exception:
        pass

def run_pool(pool: Any, items: Iterable[Item], done: Done, cancelled: Callable[[], bool] | None) -> None:
    for key, value in pool.imap_unordered(_work, items, chunksize=1):
        done(key, value)
        if cancelled is not None and cancelled():
            raise KeyboardInterrupt


def run_inline(run: ScanRun, retriever: Any, items: Iterable[Item], done: Done, cancelled: Callable[[], bool] | None,
               symbols: dict) -> None:
    """`symbols`: each project's symbol table's symbols, as the workers get them."""
    from ..retrieve.engine.config import RetrieveConfig
    from ..retrieve.pipeline import Retriever

    strategy = run.strategy
    if run.opts.quiet:
        _quiet_models()
    retriever = retriever or Retriever(run.db)
    retriever.warm(RetrieveConfig(), embed=strategy != "B")
    memo: dict = {}
    for key, text, cfg, ref in items:
        if cancelled is not None and cancelled():
            raise KeyboardInterrupt
        done(key, retrieve_compact(retriever, text, strategy, cfg, chunk_context(symbols, ref, memo)))

