"""What each stage records about a candidate: one typed model per stage.

A candidate's trace maps a stage name to that stage's info; `Candidate.add_stage` is the only
way in, and it refuses a second entry for a stage, so no stage overwrites an earlier one.
Field names are the JSON the CLI, the HTTP API and the web page read.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class StageInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TsqueryInfo(StageInfo):
    ts_rank_cd: float
    rank: int
    tsquery: str


class Bm25Info(StageInfo):
    score: float
    rank: int
    text: int = 0  # 0: the whole chunk; n: its n-th segment


class EmbeddingInfo(StageInfo):
    cosine: float
    rank: int


class ListEntry(StageInfo):
    rank: int
    score: float
    normalised: float | None = None


class UnionInfo(StageInfo):
    source: str  # bm25 | embedding | both (E: profile:...)
    inputs: dict[str, ListEntry]


class FuseInfo(StageInfo):
    method: str
    rrf_k: int | None = None
    weights: dict[str, float]
    inputs: dict[str, ListEntry]
    score: float
    rank: int


class CodematchInfo(StageInfo):
    ratio: float
    alpha: float
    score_before: float
    score: float
    rank: int
    matched_lines: list[str]


class MergeInfo(StageInfo):
    whole_rank: int | None
    segment_ranks: list[int | None]
    best_rank: int
    score: float
    rank: int


class RerankInfo(StageInfo):
    backend: str
    model_score: float
    score_before: float
    weight: float
    score: float
    rank_before: int | None
    rank: int
    rank_change: int


class ApiUseEntry(StageInfo):
    api: str
    line: int
    col: int
    code: str
    via: str
    entry: Literal["member", "class page"]


class ApiInfo(StageInfo):
    rank: int | None = None  # rank in the api list (absent when it joined a BM25/embedding candidate)
    weight: float
    score_before: float | None = None
    score: float
    uses: list[ApiUseEntry]


class ValidateInfo(StageInfo):
    layer: Literal["deterministic"] = "deterministic"
    verdict: Literal["accept", "reject"]
    accepted: bool
    confidence: float
    evidence: list[dict[str, Any]]
    contradictions: list[Any]
    reasons: list[str]
    occurrences: list[dict[str, Any]] | None = None  # api_mapping: each use of the old name, decided
    support: float | None = None  # docs_chunks: weighted evidence for and against
    against: float | None = None
    strong: int | None = None
    page_class: str | None = None  # docs_chunks: the class whose reference page holds the record
    clone_lines: list[int] | None = None  # docs_chunks: the chunk's lines (1-based) the record's code matches
    copy_source: bool | None = None  # docs_chunks: the record's page is one the chunk copies
    copied_from: str | None = None  # docs_chunks: the page the chunk copies, which already shows this record's evidence


class JudgeInfo(StageInfo):
    model: str
    question: Literal["docs", "occurrence", "follows_mapping"]
    occurrence: dict[str, Any] | None = None  # the ambiguous occurrence asked about (api_mapping)
    raw_answer: str = ""
    answer: str | None = None
    p_yes: float | None = None
    p_yes_source: Literal["logits", "logprobs", "answer"] | None = None
    mode: Literal["decide", "annotate"] = "decide"
    threshold: float | None = None
    rule: str = ""
    verdict_before: Literal["accept", "reject"] | None = None
    cited_verified: list[str] = []
    cited_hallucinated: list[str] = []
    cached: bool = False
    accepted: bool
    confidence: float


class ScoreInfo(StageInfo):
    score_before: float
    confidence: float
    confidence_from: Literal["validate", "judge"]
    score: float  # score_before * (0.5 + 0.5 * confidence)


class CutInfo(StageInfo):
    kept: bool
    rank: int | None  # final rank within its table (and group) when kept
    group: str | None = None
    k: int
    position: int  # 1-based place among the accepted candidates of its table/group, before the cut


class ExplainInfo(StageInfo):
    """BM25 per matched term (what Elasticsearch's _explain shows), computed only for what is shown."""
    k1: float
    b: float
    dl: int
    avgdl: float
    n_docs: int
    matched_terms: list[dict[str, Any]]
    score: float


STAGE_INFO: dict[str, type[StageInfo]] = {
    "tsquery": TsqueryInfo, "bm25": Bm25Info, "embedding": EmbeddingInfo, "union": UnionInfo, "fuse": FuseInfo,
    "codematch": CodematchInfo, "merge": MergeInfo, "rerank": RerankInfo, "api": ApiInfo, "validate": ValidateInfo,
    "judge": JudgeInfo, "score": ScoreInfo, "cut": CutInfo, "explain": ExplainInfo,
}


class StageLog(BaseModel):
    """One stage's run for the whole query: its time and a summary (counts, settings)."""
    stage: str
    ms: float
    info: dict[str, Any] = {}


class QueryTrace(StageInfo):
    """The query-level trace: what the chunk was taken to be, and each stage's log, in order."""
    stage_list: list[str] = []  # the strategy's stages, from the strategy table
    stages: list[StageLog] = []
    total_ms: float = 0.0
    chunk_chars: int = 0
    tokens: list[str] | None = None
    segments: list[str] | None = None
    gdscript: dict[str, Any] | None = None
    resolve: dict[str, Any] | None = None
    version: dict[str, Any] | None = None
    context: dict[str, Any] | None = None  # the request's project context, as given (counts for the symbols)
    # table -> stage -> ranked ids (ids only), so a record can be traced to the stage that lost it
    candidate_ids: dict[str, dict[str, list[str]]] = {}
    tsquery: str | None = None
    tsquery_tokens: list[str] | None = None
    tables: dict[str, dict[str, Any]] | None = None  # A: row count and zero-hit diagnosis per table
    profile: dict[str, Any] | None = None
    profile_checks: dict[str, Any] | None = None
    profile_queries: dict[str, str] | None = None
    profile_diff: dict[str, list[str]] | None = None
    llm_fallback: str | None = None
