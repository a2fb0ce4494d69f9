"""The cold start of a query: what the strategy needs loaded, loaded side by side. The embedder (torch's
import and the model: the larger part of a first answer) loads on a thread while this thread reads the
records and BM25 indexes; the embed_query stage then finds it loaded, or waits for the rest of it. Each
load is its own `load:<what>` trace step, never a query stage's time."""
from __future__ import annotations

import atexit
import threading
from typing import TYPE_CHECKING

from ...gdscript.tokenize import tokenizer_of
from ..engine.resources import Resources
from ..engine.state import QueryState
from .lexical import load_index
from .resources import RecallResources

if TYPE_CHECKING:
    from ...models.embedder import Embedder



EXIT_WAIT_S = 120  # how long an exiting process waits for an embedder load still under way
_LOADING: set[threading.Thread] = set()  # the embedder loads still under way


@atexit.register
def _wait_for_loads() -> None:
    """A process that exits while ONNX Runtime builds its session on a load thread is aborted (std::terminate,
    "terminate called without an active exception"): the exit waits for the loads still under way instead."""
    for thread in list(_LOADING):
        thread.join(EXIT_WAIT_S)


def _load_quietly(embedder: Embedder) -> None:
    try:
        embedder.load()
    except Exception:  # any: the embed_query stage loads it again and reports the error there
        pass
    finally:
        _LOADING.discard(threading.current_thread())


def start_embedder(retriever: Resources) -> threading.Thread | None:
    """Loads the embedder on a daemon thread (None when it is loaded already)."""
    if retriever.embedder_loaded and retriever.embedder.loaded:
        return None
    embedder = retriever.embedder  # its settings come from the database: read on this thread's connection
    thread = threading.Thread(target=_load_quietly, args=(embedder,), name="godot-rag-embedder-load", daemon=True)
    _LOADING.add(thread)  # before it starts, so that it cannot end first
    thread.start()
    return thread


def preload(ctx: QueryState[RecallResources], stage_names: list[str]) -> None:
    """Before the stages run: the embedder on a thread (if a stage encodes the query), the BM25 indexes here."""
    r = ctx.resources
    if "embed_query" in stage_names:
        start_embedder(r)
    if "bm25" in stage_names:
        tok = tokenizer_of(ctx.cfg)
        for table in ctx.tables:
            load_index(ctx, table, tok)
