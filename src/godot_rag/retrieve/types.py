"""The one result model shared by the CLI, the HTTP JSON and the web page."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


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
    # stage name -> that stage's own score, rank and explanation; stages only add keys
    trace: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def derive(self) -> "Candidate":
        """A copy for the next stage: its own trace dict, the (read-only) payload shared."""
        c = self.model_copy()
        c.trace = dict(self.trace)
        return c

    def add_stage(self, stage: str, info: dict[str, Any]) -> None:
        if stage in self.trace:
            raise ValueError(f"stage {stage!r} already explained candidate {self.id}")
        self.trace[stage] = info

    @property
    def page(self) -> str | None:
        meta = self.payload.get("metadata") or {}
        return meta.get("page_path")


def sort_and_rank(cands: list["Candidate"], stage: str) -> list["Candidate"]:
    """Order by the current score (ties by id) and record each candidate's new rank in `stage`."""
    cands.sort(key=lambda c: (-c.score, c.id))
    for i, c in enumerate(cands):
        c.rank = i + 1
        c.trace[stage]["rank"] = i + 1
    return cands


class StageLog(BaseModel):
    stage: str
    ms: float
    info: dict[str, Any] = Field(default_factory=dict)


class RetrieveResult(BaseModel):
    strategy: str
    chunk_text: str
    chunk_sha256: str
    k: dict[str, int]
    config: dict[str, Any]
    results: list[Candidate]
    rejected: list[Candidate] = Field(default_factory=list)
    trace: dict[str, Any] = Field(default_factory=dict)  # query level: tokens, stage logs, timings

    def by_table(self, table: str) -> list[Candidate]:
        return [c for c in self.results if c.table == table]
