"""What every stage reads and writes for one query: the chunk, the settings, the resources, and
the typed parts earlier stages provided. Stages get it with the candidates and return new
candidates; the query-level trace is typed (`trace.QueryTrace`).

A typed part (`facts`, `resolution`, `version`, ...) is a `PartKey[T]`, declared beside the stage that provides it,
so the engine knows no stage's types. It is set by the one stage that names it in `Stage.provides` and read by the
stages that name it in `Stage.requires`: `strategies.py` checks the order (and that two stages naming one part mean
the same key, so the same type) when a strategy is built. While a stage runs, reading or setting a part it did not
declare is an `UndeclaredPart` error, and reading a part no stage has set is a `MissingPart` error."""
from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import numpy as np

from ...gdscript.project import RequestContext
from .config import RetrieveConfig
from .resources import Resources
from .trace import MS_DIGITS, QueryTrace, StageLog
from .types import Candidate

# table -> one ranked candidate list per query text (the chunk, then its segments);
# from the `merge` stage on, one list per table.
Pool = dict[str, list[list[Candidate]]]
T = TypeVar("T")


class MissingPart(RuntimeError):
    """A stage read a part of the query state that no earlier stage provided."""


class UndeclaredPart(RuntimeError):
    """A stage read or set a part of the query state that its contract does not name."""


class PartKey(Generic[T]):
    """One typed part of the per-query state (`ctx[FACTS]`), declared once, beside the stage that provides it."""

    def __init__(self, name: str, about: str):
        self.name, self.about = name, about

    def __repr__(self) -> str:
        return f"PartKey({self.name!r})"


class RankedLists:
    """What the retrievers hand over to the union: table -> per query text -> retriever name -> its
    ranked list. Each retriever puts only its own lists (the part `lists.<retriever>`)."""

    def __init__(self) -> None:
        self._lists: dict[str, list[dict[str, list[Candidate]]]] = {}
        self._full: dict[tuple[str, int, str], np.ndarray] = {}
        self.retrievers: set[str] = set()
        self.entries: dict[tuple[str, int], dict] = {}  # (table, text) -> fuse.list_entries of its lists, once

    def put(self, table: str, text: int, retriever: str, cands: list[Candidate],
            full_scores: np.ndarray | None = None) -> None:
        """`full_scores`: every score of the list in rank order, when `cands` holds only some of its rows
        (the prefilter's); each candidate's `rank` is then its rank in the full list."""
        per_text = self._lists.setdefault(table, [])
        while len(per_text) <= text:
            per_text.append({})
        per_text[text][retriever] = cands
        self.entries.pop((table, text), None)
        if full_scores is not None:
            self._full[(table, text, retriever)] = full_scores
        self.retrievers.add(retriever)

    def full_scores(self, table: str, text: int, retriever: str) -> np.ndarray | None:
        """The list's scores before the prefilter, in rank order (None: the list is whole)."""
        return self._full.get((table, text, retriever))

    def __getitem__(self, table: str) -> list[dict[str, list[Candidate]]]:
        return self._lists[table]

    def of(self, table: str) -> list[dict[str, list[Candidate]]]:
        """The table's lists per query text (one empty text when no retriever read the table)."""
        return self._lists.get(table) or [{}]


class Fallback(Exception):
    """A stage that cannot run asks for another strategy's stages (E without its LLM runs D)."""

    def __init__(self, strategy: str, reason: str):
        super().__init__(reason)
        self.strategy, self.reason = strategy, reason


# A query keeps some thousands of objects alive (candidates, their trace entries) until it ends, and then
# frees them by reference count. Under the default threshold (700) the collector walked them several times a
# query and moved them into the older generations, whose collections they then swelled: 3 to 4 ms of a
# 65 ms F query. With room for a whole query's objects, most never meet a collection at all.
YOUNG_GC_THRESHOLD = 20_000


def freeze_loaded() -> None:
    """Call after loading something to keep (the records, the class reference, an index, a model):
    everything alive then is moved out of the cyclic garbage collector's sight (gc.freeze), so its
    full collections, every few queries, no longer walk the records' hundreds of thousands of objects.
    Garbage is collected first, so none is frozen; a query leaves no cyclic garbage behind. The youngest
    generation's threshold is raised to `YOUNG_GC_THRESHOLD` (never lowered, and 0, automatic collection
    turned off by the application, is left as it is): this process answers queries."""
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < YOUNG_GC_THRESHOLD:
        gc.set_threshold(YOUNG_GC_THRESHOLD, middle, old)


@dataclass
class QueryState:
    chunk: str
    strategy: str
    cfg: RetrieveConfig
    resources: Resources
    explain: bool = True
    trace: QueryTrace = field(default_factory=QueryTrace)
    texts: list[str] = field(default_factory=list)  # BM25 query texts: the whole chunk, then segments
    dense_texts: list[str] = field(default_factory=list)  # what the embedding stage encodes
    term_weights: dict[str, float] | None = None  # set with `tokens`: BM25 weights of the chunk's own names
    lists: RankedLists = field(default_factory=RankedLists)  # parts `lists.bm25`, `lists.embedding`
    source_prefix: str = ""  # E labels its sources `profile:...`
    context: RequestContext | None = None  # the project around the chunk (gdscript/project.py); None: the chunk alone
    rejected: list[Candidate] = field(default_factory=list)
    cut: list[Candidate] = field(default_factory=list)  # accepted, then cut at k
    _notes: dict[str, object] = field(default_factory=dict)
    _set_aside_ms: float = 0.0  # time inside the running stage that `log_extra` reports on its own

    _parts: dict[str, Any] = field(default_factory=dict)  # PartKey name -> value
    _allowed: frozenset[str] | None = None  # while a stage runs: the parts its contract names
    _running: str = ""  # the stage that runs

    def __getitem__(self, key: PartKey[T]) -> T:
        self._check_declared(key, "reads")
        try:
            return cast(T, self._parts[key.name])
        except KeyError:
            raise MissingPart(f"the query state has no '{key.name}': no earlier stage provided it") from None

    def get(self, key: PartKey[T]) -> T | None:
        """The part, or None when no earlier stage provided it (a part the stage names as optional)."""
        self._check_declared(key, "reads")
        return cast("T | None", self._parts.get(key.name))

    def __setitem__(self, key: PartKey[T], value: T) -> None:
        self._check_declared(key, "sets")
        self._parts[key.name] = value

    def _check_declared(self, key: PartKey[Any], verb: str) -> None:
        if self._allowed is not None and key.name not in self._allowed:
            raise UndeclaredPart(f"stage '{self._running}' {verb} the part '{key.name}', which its contract does not name "
                                 f"(it names: {', '.join(sorted(self._allowed)) or 'nothing'})")

    def provided(self, part: str) -> bool:
        """Whether a part named in a stage contract is set (`lists.<retriever>` included)."""
        if part.startswith("lists."):
            return part.split(".", 1)[1] in self.lists.retrievers
        return part in self._parts if part in KEYED_PARTS else True

    def __post_init__(self) -> None:
        if not self.texts:
            self.texts = [self.chunk]
        if not self.dense_texts:
            self.dense_texts = [self.chunk]

    @property
    def tables(self) -> list[str]:
        return self.cfg.tables

    def note(self, **info: Any) -> None:
        """Adds to the running stage's log (counts, settings): the summary `--explain` prints."""
        self._notes.update(info)

    def log_extra(self, stage: str, ms: float, **info: Any) -> None:
        """A step timed on its own inside a stage (loading a model is never a query stage's time)."""
        self.trace.stages.append(StageLog(stage=stage, ms=round(ms, MS_DIGITS), info=info))
        self._set_aside_ms += ms

    def load_step(self, label: str, loaded: bool, load: Callable[[], object], **info: Any) -> None:
        """Run `load` (a model, an index) as its own trace step `load:<label>`, never inside the
        query stage that first needs it; nothing when it is already loaded."""
        if not loaded:
            t = time.perf_counter()
            load()
            freeze_loaded()
            self.log_extra(f"load:{label}", (time.perf_counter() - t) * 1000, **info)

    def ensure_loaded(self, label: str, lazy: T, **info: Any) -> T:
        """`load_step` for a lazy model with `loaded` and `load()` (a remote LLM has neither)."""
        if lazy is not None and hasattr(lazy, "load"):
            self.load_step(label, getattr(lazy, "loaded", True), lazy.load, **info)
        return lazy

    def record_ids(self, table: str, stage: str, cands: list[Candidate]) -> None:
        self.trace.candidate_ids.setdefault(table, {})[stage] = [c.id for c in cands]

    def put_ranked(self, table: str, text: int, retriever: str, ranked: list[tuple[str, float]],
                   cands: list[Candidate]) -> None:
        """A retriever's list: `cands` for the rows that go on, `ranked` every (id, score) it found in rank
        order. When the prefilter left rows out, the full scores are kept (fusion normalises over them), and
        the trace lists every id found, the prefiltered ones too ("why not" starts there)."""
        whole = len(cands) == len(ranked)
        self.lists.put(table, text, retriever, cands, None if whole else np.asarray([s for _, s in ranked], dtype=float))
        if text == 0:
            self.trace.candidate_ids.setdefault(table, {})[retriever] = [rid for rid, _ in ranked]

    def table_lists(self, pool: Pool, table: str) -> list[Candidate]:
        """The table's one list (after `merge`)."""
        lists = pool.get(table) or [[]]
        return lists[0]


StageFn = Callable[[QueryState, Pool], Pool]

# Every part a stage contract may name: the typed parts above, and the parts that travel in the pool or
# the query trace (`pool`: the candidates; `verdicts`: accept/reject on them; `cut`: the final cut;
# `tsquery`: A's query and row counts; `texts`: the BM25 query texts, the chunk when no stage sets them).
# The typed parts are named by their keys; these are the names the keys may take.
KEYED_PARTS = ("tokens", "vectors", "facts", "resolution", "version", "occurrences", "class_uses", "validation")
PARTS = (*KEYED_PARTS, "texts", "lists.bm25", "lists.embedding", "pool", "verdicts", "cut", "tsquery")
