"""The query a stage gets first: the chunk, the settings, the resources and the tracer (its stage log, the
query-level trace). The parts the stages hand each other are not here: a stage takes them as typed parameters
and returns them (`stage.py`). Also the parts every strategy shares: the candidate pool and the verdicts."""
from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from ...gdscript.project import RequestContext
from .config import RetrieveConfig
from .resources import Resources
from .trace import MS_DIGITS, QueryTrace, StageLog
from .types import Candidate

# table -> one ranked candidate list per query text (the chunk, then its segments);
# from the `merge` stage on, one list per table.
Pool = dict[str, list[list[Candidate]]]


class Pooled(NamedTuple):
    """The output of a stage that makes or changes the candidate pool."""
    pool: Pool


@dataclass(frozen=True)
class Verdicts:
    """The candidates of each table after the validator, each with its verdict: what the judge, the final score and
    the cut read and hand on."""

    tables: dict[str, list[Candidate]]

    def of(self, table: str) -> list[Candidate]:
        return self.tables.get(table, [])

    def every(self) -> list[Candidate]:
        return [c for cands in self.tables.values() for c in cands]
T = TypeVar("T")
R = TypeVar("R", bound=Resources, covariant=True)  # the resources a stage's layer may reach (`Resources` or a narrower protocol)


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
class QueryState(Generic[R]):
    chunk: str
    strategy: str
    cfg: RetrieveConfig
    resources: R
    explain: bool = True
    trace: QueryTrace = field(default_factory=QueryTrace)
    context: RequestContext | None = None  # the project around the chunk (gdscript/project.py); None: the chunk alone
    stage_notes: dict[str, object] = field(default_factory=dict)  # the running stage's summary
    set_aside_ms: float = 0.0  # time inside the running stage that `log_extra` reports on its own

    @property
    def tables(self) -> list[str]:
        return self.cfg.tables

    def begin_stage(self, stage: str) -> None:
        """A new stage runs: its own summary and set-aside time."""
        self.stage_notes, self.set_aside_ms = {}, 0.0

    def note(self, **info: Any) -> None:
        """Adds to the running stage's log (counts, settings): the summary `--explain` prints."""
        self.stage_notes.update(info)

    def log_extra(self, stage: str, ms: float, **info: Any) -> None:
        """A step timed on its own inside a stage (loading a model is never a query stage's time)."""
        self.trace.stages.append(StageLog(stage=stage, ms=round(ms, MS_DIGITS), info=info))
        self.set_aside_ms += ms

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

    def record_found(self, table: str, retriever: str, ranked: list[tuple[str, float]]) -> None:
        """Every id a retriever found for the whole chunk, the prefiltered ones too ("why not" starts there)."""
        self.trace.candidate_ids.setdefault(table, {})[retriever] = [rid for rid, _ in ranked]


def table_list(pool: Pool, table: str) -> list[Candidate]:
    """The table's one list (after `merge`)."""
    lists = pool.get(table) or [[]]
    return lists[0]
