"""What every stage reads and writes for one query: the chunk, the settings, the resources, and
the lists and facts earlier stages produced. Stages get it with the candidates and return new
candidates; the query-level trace is typed (`trace.QueryTrace`)."""
from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import RetrieveConfig
from .trace import QueryTrace, StageLog
from .types import Candidate

if TYPE_CHECKING:
    from .pipeline import Retriever

# table -> one ranked candidate list per query text (the chunk, then its segments);
# from the `merge` stage on, one list per table.
Pool = dict[str, list[list[Candidate]]]


class Fallback(Exception):
    """A stage that cannot run asks for another strategy's stages (E without its LLM runs D)."""

    def __init__(self, strategy: str, reason: str):
        super().__init__(reason)
        self.strategy, self.reason = strategy, reason


def freeze_loaded() -> None:
    """Call after loading something to keep (the records, the class reference, an index, a model):
    everything alive then is moved out of the cyclic garbage collector's sight (gc.freeze), so its
    full collections, every few queries, no longer walk the records' hundreds of thousands of objects.
    Garbage is collected first, so none is frozen; a query leaves no cyclic garbage behind."""
    gc.collect()
    gc.freeze()


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
    tokens: list[list[str]] = field(default_factory=list)  # per BM25 text
    term_weights: dict[str, float] | None = None
    vectors: Any = None
    # table -> per text -> retriever name (bm25, embedding) -> its ranked list
    lists: dict[str, list[dict[str, list[Candidate]]]] = field(default_factory=dict)
    source_prefix: str = ""  # E labels its sources `profile:...`
    facts: Any = None  # gdscript.GDScriptFacts (F)
    resolution: Any = None  # resolve.Resolution (F)
    version: Any = None  # version.VersionContext (F)
    validation: Any = None  # validate.ValidationContext (F): the judge re-checks findings with it
    context: Any = None  # project_context.RequestContext: the project around the chunk (None: the chunk alone)
    rejected: list[Candidate] = field(default_factory=list)
    cut: list[Candidate] = field(default_factory=list)  # accepted, then cut at k
    _notes: dict[str, Any] = field(default_factory=dict)
    _set_aside_ms: float = 0.0  # time inside the running stage that `log_extra` reports on its own

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
        self.trace.stages.append(StageLog(stage=stage, ms=round(ms, 3), info=info))
        self._set_aside_ms += ms

    def load_step(self, label: str, loaded: bool, load: Callable[[], Any], **info) -> None:
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

    def table_lists(self, pool: Pool, table: str) -> list[Candidate]:
        """The table's one list (after `merge`)."""
        lists = pool.get(table) or [[]]
        return lists[0]


StageFn = Callable[[QueryContext, Pool], Pool]
