"""What every stage reads and writes for one query: the chunk, the settings, the resources, and
the typed parts earlier stages provided. Stages get it with the candidates and return new
candidates; the query-level trace is typed (`trace.QueryTrace`).

A part (`facts`, `resolution`, `version`, ...) is set by the one stage that declares it in
`Stage.provides` and read by the stages that declare it in `Stage.requires`; `strategies.py` checks
the order when a strategy is built, and reading a part no stage has set is a `MissingPart` error."""
from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar, overload

import numpy as np

from .config import RetrieveConfig
from .trace import MS_DIGITS, QueryTrace, StageLog
from .types import Candidate

if TYPE_CHECKING:
    from collections.abc import Mapping  # noqa: F401

    from ..gdscript import GDScriptFacts  # noqa: F401  (the parts' types, named in strings)
    from .api_source import ClassUse  # noqa: F401
    from .pipeline import Retriever
    from .project_context import RequestContext
    from .resolve import Resolution  # noqa: F401
    from .validate import Occurrences, ValidationContext  # noqa: F401
    from .version import VersionContext  # noqa: F401

# table -> one ranked candidate list per query text (the chunk, then its segments);
# from the `merge` stage on, one list per table.
Pool = dict[str, list[list[Candidate]]]
T = TypeVar("T")


class MissingPart(RuntimeError):
    """A stage read a part of the query state that no earlier stage provided."""


class Part(Generic[T]):
    """One typed part of the per-query state: set once by the stage that provides it."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.slot = name, f"_part_{name}"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> "Part[T]": ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> "T | Part[T]":
        if obj is None:
            return self
        try:
            return obj.__dict__[self.slot]
        except KeyError:
            raise MissingPart(f"the query state has no '{self.name}': no earlier stage provided it") from None

    def __set__(self, obj: object, value: T) -> None:
        obj.__dict__[self.slot] = value

    def is_set(self, obj: object) -> bool:
        return self.slot in obj.__dict__


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
class QueryContext:
    chunk: str
    strategy: str
    cfg: RetrieveConfig
    retriever: "Retriever"
    explain: bool = True
    trace: QueryTrace = field(default_factory=QueryTrace)
    texts: list[str] = field(default_factory=list)  # BM25 query texts: the whole chunk, then segments
    dense_texts: list[str] = field(default_factory=list)  # what the embedding stage encodes
    term_weights: dict[str, float] | None = None  # set with `tokens`: BM25 weights of the chunk's own names
    lists: RankedLists = field(default_factory=RankedLists)  # parts `lists.bm25`, `lists.embedding`
    source_prefix: str = ""  # E labels its sources `profile:...`
    context: RequestContext | None = None  # the project around the chunk (project_context.py); None: the chunk alone
    rejected: list[Candidate] = field(default_factory=list)
    cut: list[Candidate] = field(default_factory=list)  # accepted, then cut at k
    _notes: dict[str, object] = field(default_factory=dict)
    _set_aside_ms: float = 0.0  # time inside the running stage that `log_extra` reports on its own

    # The typed parts (not dataclass fields): each set by the one stage that provides it.
    tokens = Part[list[list[str]]]()  # per BM25 text
    vectors = Part[np.ndarray]()  # the encoded `dense_texts`
    facts = Part["GDScriptFacts"]()  # parse (F)
    resolution = Part["Resolution"]()  # resolve (F)
    version = Part["VersionContext"]()  # version (F): final markers, the mappings' Godot 3 uses included
    occurrences = Part["Occurrences"]()  # version (F): each api_mapping candidate's occurrences, decided
    class_uses = Part["Mapping[str, ClassUse]"]()  # api (F): the classes the chunk uses as a whole (api_source.class_uses)
    validation = Part["ValidationContext"]()  # validate (F): the judge re-checks findings with it

    def provided(self, part: str) -> bool:
        """Whether a part named in a stage contract is set (`lists.<retriever>` included)."""
        if part.startswith("lists."):
            return part.split(".", 1)[1] in self.lists.retrievers
        attr = getattr(type(self), part, None)
        return attr.is_set(self) if isinstance(attr, Part) else True

    def __post_init__(self):
        if not self.texts:
            self.texts = [self.chunk]
        if not self.dense_texts:
            self.dense_texts = [self.chunk]

    @property
    def tables(self) -> list[str]:
        return self.cfg.tables

    def note(self, **info) -> None:
        """Adds to the running stage's log (counts, settings): the summary `--explain` prints."""
        self._notes.update(info)

    def log_extra(self, stage: str, ms: float, **info) -> None:
        """A step timed on its own inside a stage (loading a model is never a query stage's time)."""
        self.trace.stages.append(StageLog(stage=stage, ms=round(ms, MS_DIGITS), info=info))
        self._set_aside_ms += ms

    def load_step(self, label: str, loaded: bool, load: Callable[[], object], **info) -> None:
        """Run `load` (a model, an index) as its own trace step `load:<label>`, never inside the
        query stage that first needs it; nothing when it is already loaded."""
        if not loaded:
            t = time.perf_counter()
            load()
            freeze_loaded()
            self.log_extra(f"load:{label}", (time.perf_counter() - t) * 1000, **info)

    def ensure_loaded(self, label: str, lazy, **info):
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


StageFn = Callable[[QueryContext, Pool], Pool]

# Every part a stage contract may name: the typed parts above, and the parts that travel in the pool or
# the query trace (`pool`: the candidates; `verdicts`: accept/reject on them; `cut`: the final cut;
# `tsquery`: A's query and row counts; `texts`: the BM25 query texts, the chunk when no stage sets them).
PARTS = tuple(n for n, v in vars(QueryContext).items() if isinstance(v, Part)) + (
    "texts", "lists.bm25", "lists.embedding", "pool", "verdicts", "cut", "tsquery")
