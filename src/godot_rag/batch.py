"""`godot-rag retrieve --batch`: many chunks (a file, a pipe or stdin, read as they come), one process per
core, JSON lines on stdout in input order, each input line's as soon as it is done (`--format`: one line
per accepted record, or one result per chunk; formats.py). A bad line (not UTF-8,
not JSON, not an object with a usable chunkText, id and context) gets an error line,
`{"line": N, "chunk": ..., "error": ..., "status": ...}`, in its place, and the batch goes on; `strict`
refuses the whole batch instead, naming every bad line."""
from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .errors import mask_secrets
from .formats import check_chunk_id, error_line, json_lines
from .gdscript.chunk_text import ChunkTextError, check_chunk_text
from .gdscript.project import RequestContext
from .jsonlines import STDIN, read_jsonl_lines, unknown_fields
from .retrieve.engine.config import ConfigError
from .store.db import database_workers

LINE_FIELDS = ("chunkText", "chunk_text", "id", "context")  # what a batch line may hold


class BadBatch(ValueError):
    """--strict: the batch has bad lines, and none of it is run."""


@dataclass(frozen=True)
class BatchItem:
    """One line that is not blank: a good one with its chunk and context, a bad one with its error line."""
    line: int
    id: Any  # the line's `id`, or None
    chunk: str | None = None
    context: RequestContext | None = None  # the line's `"context"` object (the project around the chunk)
    error: str | None = None  # the error line, for a bad line


def _bad(n: int, cid: Any, message: str, status: int) -> BatchItem:
    extra = {"line": n} | ({"id": cid} if cid is not None else {})
    return BatchItem(n, cid, error=error_line(message, status, n if cid is None else cid, extra))


def _item(n: int, rec: Any) -> BatchItem:
    """One parsed line, each part checked once: a good line with its chunk and context, or a bad line with
    the first problem's error line. A bad id is not echoed (the line number names the line)."""
    cid, id_problem = None, None
    if isinstance(rec, dict):
        try:
            cid = check_chunk_id(rec.get("id"))
        except ValueError as e:
            id_problem = f"field 'id' {e}"
    if not isinstance(rec, dict):
        return _bad(n, cid, f"a line must be a JSON object with a chunkText field, not {type(rec).__name__}", 422)
    if "chunkText" not in rec and "chunk_text" not in rec:
        return _bad(n, cid, "field 'chunkText' (or 'chunk_text') is missing", 422)
    unknown = unknown_fields(rec, LINE_FIELDS)
    if unknown:  # as HTTP answers a misspelled key: never a silent default
        return _bad(n, cid, unknown, 400)
    if id_problem:
        return _bad(n, cid, id_problem, 422)
    try:
        context = RequestContext.parse(rec.get("context"))
    except ConfigError as e:
        return _bad(n, cid, str(e), 422)  # it names the field: `context.godot_version: ...`
    text = rec.get("chunkText", rec.get("chunk_text"))
    try:
        check_chunk_text(text)
    except ChunkTextError as e:
        return _bad(n, cid, str(e), e.status)
    return BatchItem(n, cid, text, context)


def iter_batch(path: Path) -> Iterator[BatchItem]:
    """Every line that is not blank, in order, as it is read; a bad line carries its error line."""
    for n, rec, malformed in read_jsonl_lines(path):
        yield _bad(n, None, malformed, 400) if malformed else _item(n, rec)


def count_items(path: Path) -> int | None:
    """The progress bar's total: the lines that are not blank, for a regular file; None for a pipe."""
    if path == STDIN or not path.is_file():
        return None
    with path.open("rb") as fh:
        return sum(1 for raw in fh if raw.strip())


def merged(base: RequestContext | None, line: RequestContext | None) -> RequestContext | None:
    """A line's context over the command's (`--project`/`--file`): the fields the line gives win, and a
    line without `project_symbols` keeps the project's (and its built lookups)."""
    if base is None or line is None:
        return line or base
    if "project_symbols" in line.model_fields_set:
        return line
    return base.model_copy(update={k: getattr(line, k) for k in line.model_fields_set})


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs: its workers and output, and what each worker needs to open the same LLM and reranker."""
    workers: int = 2
    quiet: bool = False
    llm_spec: dict | None = None  # LlmArgs.spec(): the LLM each worker opens
    cross_encoder: str | None = None
    strict: bool = False  # run nothing when a line is bad
    fmt: str = "records"
    prompt_budget: int | None = None
    context: RequestContext | None = None  # the command's context (`--project`/`--file`)


_worker: dict[str, Any] = {}


def _init_worker(dsn: str | None, data_dir: str, strategy: str, cfg_dict: dict, opts: BatchOptions,
                 judge_calibration: Any = None) -> None:
    """Each process has its own Retriever: the GIL-bound stages then run on both cores."""
    from .models.llm import make_llm
    from .retrieve.engine.config import RetrieveConfig
    from .retrieve.pipeline import ModelFiles, Retriever
    from .store.db import Database

    _answered.clear()
    try:
        cfg = RetrieveConfig.from_mapping(cfg_dict)
        llm = make_llm(**opts.llm_spec) if opts.llm_spec else None
        db = Database(dsn=dsn, data_dir=data_dir)
        db.release_at_worker_exit()
        # One process per core: the encoder inside each must not spread over both cores too.
        _worker["retriever"] = Retriever(db, llm=llm, files=ModelFiles(opts.cross_encoder, judge_calibration), embed_threads=1)
        _worker["strategy"], _worker["cfg"], _worker["format"] = strategy, cfg, (opts.fmt, opts.prompt_budget)
        _worker["context"] = opts.context
        _worker["retriever"].warm(cfg, embed=strategy != "B")
    except Exception as e:
        _worker["error"] = e  # restarted by the pool forever, a traceback each time


ANSWERED_KEEP = 64  # the latest results kept per process, by chunk text, for repeated chunks
_answered: OrderedDict[str, Any] = OrderedDict()


def _remember(key: str | None, result: Any) -> None:
    if key is None:
        return
    _answered[key] = result
    _answered.move_to_end(key)
    while len(_answered) > ANSWERED_KEEP:
        _answered.popitem(last=False)


def _retrieve_line(retriever: Any, strategy: str, cfg: Any, fmt: tuple[str, int | None], item: BatchItem,
                   base: RequestContext | None = None) -> str:
    """The output lines of one good input line (each ending in a newline); a chunk the retriever refuses
    gives an error line for that input line, and the batch goes on. Every line names its chunk: the
    input's `id`, else its line number. `base`: the command's context (`--project`/`--file`), sent to each
    worker once."""
    from .models.llm import LLMError
    from .store.db import StoreError

    n, cid = item.line, item.id
    extra = {"line": n} | ({"id": cid} if cid is not None else {})
    # A chunk seen a moment ago with the command's own context is answered from then (a corpus with repeats).
    key = item.chunk if item.context is None else None
    try:
        result = _answered.get(key) if key is not None else None
        if result is None:
            result = retriever.retrieve(item.chunk, strategy, cfg, explain=False, context=merged(base, item.context))
            _remember(key, result)
    except ChunkTextError as e:
        return error_line(str(e), e.status, n if cid is None else cid, extra)
    except (StoreError, LLMError):
        raise  # the database or the LLM is down: every line would fail
    except Exception as e:
        return error_line(f"internal error: {type(e).__name__}: {mask_secrets(str(e))[:200]}", 500,
                          n if cid is None else cid, extra)
    return json_lines(result, fmt[0], chunk=n if cid is None else cid, extra=extra, prompt_budget=fmt[1])


def _retrieve_one(item: BatchItem) -> str:
    if "error" in _worker:
        from .store.db import StoreError

        raise StoreError(f"a batch worker could not start: {type(_worker['error']).__name__}: {_worker['error']}")
    return _retrieve_line(_worker["retriever"], _worker["strategy"], _worker["cfg"], _worker["format"], item,
                          base=_worker["context"])


_END = object()  # the reader's last word: the input has ended
FEED_AHEAD = 1024  # chunks read ahead of the pool: a large input is never held whole
POLL_S = 0.1  # how often the pool's task thread looks whether the batch is stopping


class OrderedFeed:
    """Feeds a pool the good lines of an input it reads as it comes, and gives every line's output in
    input order: its error line, or the pool's next result. A thread of its own reads the input, so the
    pool's task thread never waits on a pipe (a pool can only be stopped once that thread ends): it polls,
    and `close` ends it."""

    def __init__(self, items: Iterable[BatchItem]) -> None:
        self._items = items
        self._order: queue.Queue = queue.Queue()  # every line, for the output side
        self._feed: queue.Queue = queue.Queue(maxsize=FEED_AHEAD)  # the good lines, for the pool
        self._stopping = threading.Event()
        self._failed: list[Exception] = []
        threading.Thread(target=self._read, name="batch-reader", daemon=True).start()

    def _put(self, item: object) -> bool:
        while not self._stopping.is_set():
            try:
                self._feed.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        try:
            for item in self._items:
                self._order.put(item)
                if item.error is None and not self._put(item):
                    return
        except Exception as e:
            self._failed.append(e)
        finally:
            self._order.put(_END)
            self._put(_END)

    def tasks(self) -> Iterator[BatchItem]:
        """The good lines, for `pool.imap`."""
        while not self._stopping.is_set():
            try:
                item = self._feed.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if item is _END:
                return
            yield item

    def outputs(self, results: Iterator[str]) -> Iterator[tuple[BatchItem, str]]:
        """(line, its output) in input order; `results`: the pool's results for `tasks()`, in order."""
        while (item := self._order.get()) is not _END:
            yield item, item.error if item.error is not None else next(results)
        if self._failed:
            raise self._failed[0]

    def close(self) -> None:
        self._stopping.set()


def _in_process(retriever: Any, strategy: str, cfg: Any, fmt: tuple[str, int | None], items: Iterable[BatchItem],
                context: RequestContext | None) -> Iterator[tuple[BatchItem, str]]:
    """One worker: this process answers each line as it is read (warming the retriever on the first chunk)."""
    warm = False
    for item in items:
        if item.error is not None:
            yield item, item.error
            continue
        if not warm:
            retriever.warm(cfg, embed=strategy != "B")
            warm = True
        yield item, _retrieve_line(retriever, strategy, cfg, fmt, item, context)


def run_batch(retriever: Any, path: Path, strategy: str, cfg: Any, opts: BatchOptions | None = None) -> dict:
    """`path` (a file, a pipe, or `-` for stdin) is read as it comes, except with `strict`, which reads it
    whole first: no line runs when any is bad."""
    opts = opts or BatchOptions()
    _answered.clear()  # results of another batch in this process (other settings) are not this one's
    items = _checked(path) if opts.strict else iter_batch(path)
    counts = {"lines": 0, "bad_lines": 0}
    total = None if opts.quiet else count_items(path)
    t0 = time.perf_counter()

    def write(outputs: Iterator[tuple[BatchItem, str]]) -> None:
        for item, text in tqdm(outputs, total=total, desc="retrieve", disable=opts.quiet, file=sys.stderr):
            counts["lines"] += 1
            counts["bad_lines"] += item.error is not None
            sys.stdout.write(text)
            sys.stdout.flush()  # a reader at the other end of a pipe gets each chunk's lines when they are done

    if opts.workers <= 1:
        write(_in_process(retriever, strategy, cfg, (opts.fmt, opts.prompt_budget), items, opts.context))
    else:
        _pooled(retriever, (strategy, cfg), items, opts, write)
    seconds = time.perf_counter() - t0
    chunks = counts["lines"] - counts["bad_lines"]
    summary = {"lines": counts["lines"], "chunks": chunks, "bad_lines": counts["bad_lines"], "seconds": round(seconds, 2),
               "chunks_per_second": round(chunks / seconds, 2) if seconds > 0 else None, "workers": opts.workers,
               "format": opts.fmt}
    print(json.dumps({"batch_summary": summary}), file=sys.stderr)
    return summary


def _checked(path: Path) -> list[BatchItem]:
    """`strict`: every line, read whole; BadBatch naming every bad line when there is one."""
    items = list(iter_batch(path))
    bad = [item for item in items if item.error is not None]
    if bad:
        name = "stdin" if path == STDIN else str(path)
        raise BadBatch(f"{name}: {len(bad)} bad line(s); --strict runs none of the batch: "
                       + "; ".join(f"{name}:{b.line}: {json.loads(b.error or '{}')['error']}" for b in bad))
    return items


def _pooled(retriever: Any, run: tuple[str, Any], items: Iterable[BatchItem], opts: BatchOptions,
            write: Callable[[Iterator[tuple[BatchItem, str]]], None]) -> None:
    """`opts.workers` processes answer the lines; `run`: (strategy, settings)."""
    strategy, cfg = run
    db = retriever.db
    try:
        with database_workers(db, opts.workers, _init_worker,
                              (db.dsn, str(db.data_dir), strategy, cfg.to_dict(), opts, retriever.judge_calibration)) as pool:
            feed = OrderedFeed(items)
            try:
                write(feed.outputs(pool.imap(_retrieve_one, feed.tasks(), chunksize=4)))
            finally:
                feed.close()  # before the pool is stopped: its task thread must end first
    finally:
        db.stop()  # the last handle: the embedded server goes when the batch ends, however it ends
