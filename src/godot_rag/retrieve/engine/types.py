"""The one result model shared by the CLI, the HTTP JSON and the web page."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializeAsAny, field_validator

from .decision import Decision
from .trace import STAGE_INFO, Pending, QueryTrace, StageInfo
from .trace import StageLog as StageLog  # re-exported: the result's stage log


class Candidate(BaseModel):
    table: str
    id: str
    payload: dict[str, Any]
    score: float = 0.0  # the score of the latest stage that ranked it
    rank: int | None = None  # 1-based, per table
    source: str | None = None  # bm25 | embedding | both | tsquery | profile
    group: str | None = None  # docs_chunks in F: "guides" or "api_reference" (member entries of resolved calls)
    verdict: Literal["accept", "reject"] | None = None
    reason: str | None = None
    # the decision the verdict and reason are derived from (evidence/decision.py), the overruled ones inside it
    decision: Decision | None = None
    # stage name -> that stage's typed info (retrieve/trace.py); stages only add entries, via add_stage
    trace: dict[str, SerializeAsAny[StageInfo]] = Field(default_factory=dict)

    @field_validator("trace", mode="before")
    @classmethod
    def _typed(cls, value: Any) -> Any:  # raw input: a parsed JSON dict, or infos already typed
        """Parsed JSON (a cached or remote result) comes back as the same typed infos."""
        if isinstance(value, dict):
            return {k: STAGE_INFO[k].model_validate(v) if isinstance(v, dict) and k in STAGE_INFO else v
                    for k, v in value.items()}
        return value

    @classmethod
    def _unvalidated(cls, fields: dict[str, Any], fields_set: set[str]) -> Candidate:
        """An instance set up as pydantic sets one, from fields already known to be valid: candidates are
        made and copied hundreds of times per query, and validating them was a third of strategy B's time."""
        c = cls.__new__(cls)
        object.__setattr__(c, "__dict__", fields)
        object.__setattr__(c, "__pydantic_fields_set__", fields_set)
        object.__setattr__(c, "__pydantic_extra__", None)
        object.__setattr__(c, "__pydantic_private__", None)
        return c

    @classmethod
    def of_record(cls, table: str, id: str, payload: dict, score: float, rank: int, source: str) -> Candidate:
        """A candidate for a stored record (its payload was checked at load), as a retriever's list holds it."""
        return cls._unvalidated({"table": table, "id": id, "payload": payload, "score": score, "rank": rank, "source": source,
                                 "group": None, "verdict": None, "reason": None, "decision": None,
                                 "trace": {}},
                                {"table", "id", "payload", "score", "rank", "source"})

    def __setattr__(self, name: str, value: Any) -> None:
        # Stages set score, rank, source and verdict over a thousand times per query: a plain field is stored as
        # pydantic's own setter stores it (no assignment validation is configured), without its dispatch.
        if name in _PLAIN_FIELDS:
            self.__dict__[name] = value
            self.__pydantic_fields_set__.add(name)
        else:
            super().__setattr__(name, value)

    def derive(self) -> Candidate:
        """A copy for the next stage: its own trace dict, the (read-only) payload and infos shared. What
        model_copy does, minus its per-field bookkeeping."""
        return Candidate._unvalidated({**self.__dict__, "trace": dict(self.trace)}, set(self.__pydantic_fields_set__))

    def add_stage(self, stage: str, info: StageInfo | Pending) -> None:
        """`info`: the stage's info, or `trace.later(Info, ...)` for one built only if it is read."""
        kind = info.cls if type(info) is Pending else type(info)
        if (stage, kind) not in _CHECKED:  # over a thousand entries a query, of a dozen (stage, kind) pairs
            expected = STAGE_INFO[stage]
            if not issubclass(kind, expected):
                raise TypeError(f"stage {stage!r} records a {expected.__name__}, not {kind.__name__}")
            _CHECKED.add((stage, kind))
        if stage in self.trace:
            raise ValueError(f"stage {stage!r} already explained candidate {self.id}")
        self.trace[stage] = info  # type: ignore[assignment]  # a Pending is built before anything reads it

    def absorb(self, other: Candidate) -> None:
        """The same record from another list: its stage infos join this candidate's (none replaced)."""
        for stage, info in other.trace.items():
            self.trace.setdefault(stage, info)

    def info(self, stage: str) -> Any:  # the info's class depends on the stage (STAGE_INFO)
        """This candidate's info from `stage`, or None when that stage did not see it."""
        got = self.trace.get(stage)
        if type(got) is Pending:
            got = self.trace[stage] = got.build()  # this candidate's own trace dict: its copies build their own
        return got

    def has_info(self, stage: str) -> bool:
        return stage in self.trace

    def settle(self) -> Candidate:
        """Every info built: before the candidate leaves in a result (serialised, compared, shown)."""
        for stage, info in self.trace.items():
            if type(info) is Pending:
                self.trace[stage] = info.build()
        return self

    @property
    def page(self) -> str | None:
        meta = self.payload.get("metadata") or {}
        return meta.get("page_path")


_CHECKED: set[tuple[str, type]] = set()  # (stage, info class) pairs add_stage has found to agree with STAGE_INFO
_PLAIN_FIELDS = frozenset(Candidate.model_fields) - {"trace"}  # `trace` keeps pydantic's path (its validator)


def sort_and_rank(cands: list[Candidate]) -> list[Candidate]:
    """Order by the current score (ties by id) and set each candidate's rank."""
    cands.sort(key=lambda c: (-c.score, c.id))
    for i, c in enumerate(cands):
        c.rank = i + 1
    return cands


class RetrieveResult(BaseModel):
    strategy: str
    chunk_text: str
    chunk_sha256: str
    k: dict[str, int]
    config: dict[str, Any]
    results: list[Candidate]
    rejected: list[Candidate] = Field(default_factory=list)
    cut: list[Candidate] = Field(default_factory=list)  # accepted, then cut at k (only with explain)
    trace: QueryTrace = Field(default_factory=QueryTrace)  # query level: stage list and logs, parse, resolve

    def by_table(self, table: str) -> list[Candidate]:
        return [c for c in self.results if c.table == table]
