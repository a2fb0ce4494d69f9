"""What each stage records about a candidate: one typed model per stage.

A candidate's trace maps a stage name to that stage's info; `Candidate.add_stage` is the only
way in, and it refuses a second entry for a stage, so no stage overwrites an earlier one.
An info every retrieved candidate gets may be handed over unbuilt (`later`, `built_by`): it is built
when read, and every candidate of a result is settled before the result leaves the runner.
Field names are the JSON the CLI, the HTTP API and the web page read.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Generic, Literal, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .columns import STAGE_COLUMNS as STAGE_COLUMNS  # re-exported: the page's stage columns
from .columns import Column as Column

# The digits the trace keeps (F's api_reference order compares scores at SCORE_DIGITS too).
SCORE_DIGITS = 6  # scores and cosines
RATIO_DIGITS = 4  # ratios, shares, confidences, probabilities, BM25's terms
MS_DIGITS = 3  # milliseconds


class StageInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")


_Info = TypeVar("_Info", bound=StageInfo)


def per_candidate(cls: type[_Info]) -> type[_Info]:
    """For an info that every candidate of every list gets (over a thousand per F query): built only by a
    stage, from values it computed, with the keyword arguments that mypy checks against the fields, so
    pydantic's run-time check is skipped (with the copies, a tenth of F's time). Its defaults must be
    immutable. Parsing (`model_validate`: a cached or remote result) still checks everything."""
    defaults = {name: f.default for name, f in cls.model_fields.items() if not f.is_required()}
    names = tuple(cls.model_fields)  # the JSON's key order

    def __init__(self: _Info, **data: Any) -> None:
        object.__setattr__(self, "__dict__", {n: data[n] if n in data else defaults[n] for n in names})
        object.__setattr__(self, "__pydantic_fields_set__", set(data))
        object.__setattr__(self, "__pydantic_extra__", None)
        object.__setattr__(self, "__pydantic_private__", None)

    cls.__init__ = __init__  # type: ignore[method-assign,assignment]
    return cls


_P = ParamSpec("_P")


class Pending(Generic[_Info]):
    """A per-candidate info that is built when it is first read (`Candidate.info`) or when the candidate
    leaves in a result (`Candidate.settle`). Most of a query's candidates stop at the shortlist, and nothing
    reads their list, union, fuse, codematch or merge infos, so they are never built."""
    __slots__ = ("args", "cls", "make")

    def __init__(self, cls: type[_Info], make: Callable[..., _Info], args: tuple):
        self.cls, self.make, self.args = cls, make, args

    def build(self) -> _Info:
        return self.make(*self.args)


def _of_keywords(cls: type[_Info], data: dict[str, Any]) -> _Info:
    return cls(**data)


def later(cls: Callable[_P, _Info], *args: _P.args, **data: _P.kwargs) -> Pending[_Info]:
    """`cls(**data)`, built when read; mypy checks the keyword arguments against the fields, as for `cls(...)`."""
    if args:
        raise TypeError("stage infos take keyword arguments only")
    return Pending(cls, _of_keywords, (cls, data))  # type: ignore[arg-type]


def built_by(cls: type[_Info], make: Callable[_P, _Info], *args: _P.args, **kwargs: _P.kwargs) -> Pending[_Info]:
    """`make(*args)`, built when read: an info whose nested parts are made from raw values only if it is read
    (the union's and the fuse's per-list entries)."""
    if kwargs:
        raise TypeError("built_by takes positional arguments only")
    return Pending(cls, make, args)


class Compact(StageInfo):
    """A verdict item whose optional fields (default None) are left out of the JSON while unset, so that
    each kind of item carries only its own fields."""

    @model_serializer(mode="wrap")
    def _drop_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields = type(self).model_fields
        return {k: v for k, v in handler(self).items() if v is not None or k not in fields or fields[k].default is not None
                or fields[k].is_required()}


# Where an occurrence of a name is in the chunk, and what the version decisions made of it (version_rules.py):
# the first three statuses are Godot 3 use (the last two weak evidence), the others are not.
Region = Literal["code", "comment", "string", "node_path"]
OccurrenceStatus = Literal["godot3", "godot3_node", "godot3_comment", "valid_godot4", "ambiguous", "ignored"]


class Occurrence(Compact):
    """One literal occurrence of a mapping's source_api in the chunk, decided."""
    line: int
    col: int
    region: Region
    status: OccurrenceStatus
    why: str
    start: int
    end: int
    ambiguous: bool = False  # decided by the chunk's version markers and the hint
    literal: str | None = None  # a syntax change: the text its pattern matched
    rule: str | None = None  # the named version rule that decided (version_rules.py, validate.py)


DocsEvidenceKind = Literal["resolved_api", "api_symbol", "call", "method_call", "code_line", "string", "identifier"]


class DocsEvidence(Compact):
    """A literal a docs record shares with the chunk's code, weighted (evidence/docs_evidence.py)."""
    literal: str
    kind: DocsEvidenceKind
    weight: float
    chunk_line: int | None


class MappingEvidence(Compact):
    """An api_mapping's evidence: its strongest occurrence of Godot 3 use."""
    literal: str
    kind: Literal["source_api"]
    chunk_line: int
    col: int
    region: Region
    occurrences: int  # how many occurrences are Godot 3 use


class RuleEvidence(Compact):
    """A label prototype's evidence: where its must_match rule matched (a migration finding: at its mapping)."""
    literal: str
    kind: Literal["must_match"]
    chunk_line: int
    col: int | None = None
    mapping_id: str | None = None


class CheckEvidence(Compact):
    """A finding of the API check: the code it points at, its place and its message (evidence/check.py)."""
    literal: str
    kind: Literal["api_check"]
    chunk_line: int
    col: int
    message: str


EvidenceItem = Annotated[DocsEvidence | MappingEvidence | RuleEvidence | CheckEvidence, Field(discriminator="kind")]


class Contradiction(Compact):
    """A name of the record that the chunk writes with other digits (`Vector3` where the chunk has `Vector2`)."""
    literal: str
    near_miss_of: str
    weight: float
    api: bool  # both names are Godot 4 classes
    in_code: bool  # in the record's code, not only its prose


class TsqueryInfo(StageInfo):
    ts_rank_cd: float
    rank: int
    tsquery: str


@per_candidate
class Bm25Info(StageInfo):
    score: float
    rank: int
    text: int = 0  # 0: the whole chunk; n: its n-th segment


@per_candidate
class EmbeddingInfo(StageInfo):
    cosine: float
    rank: int


@per_candidate
class ListEntry(StageInfo):
    rank: int
    score: float
    normalised: float | None = None


@per_candidate
class UnionInfo(StageInfo):
    source: str  # bm25 | embedding | both (E: profile:...)
    inputs: dict[str, ListEntry]


@per_candidate
class FuseInfo(StageInfo):
    method: str
    rrf_k: int | None = None
    weights: dict[str, float]
    inputs: dict[str, ListEntry]
    score: float
    rank: int


@per_candidate
class CodematchInfo(StageInfo):
    ratio: float
    alpha: float
    score_before: float
    score: float
    rank: int
    matched_lines: list[str]


@per_candidate
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


class CheckFinding(StageInfo):
    """One finding of the API check (gdscript/api_check.py) at one place: its rule, the receiver and how it was
    resolved, and the reference entry (page, anchor, url, docs record) that says so."""
    kind: Literal["deprecated_api", "experimental_api", "missing_engine_member", "wrong_argument_count"]
    rule: str
    line: int
    col: int
    api: str
    code: str
    receiver: str  # how the receiver's class is known (the resolver's `via`: local_type, class, constructor, ...)
    message: str
    action: str
    entry: dict[str, str | None]  # page, anchor, url, record_id
    note: str = ""
    suggestions: list[str] = []
    signature: str = ""
    arguments: int | None = None


class CheckInfo(StageInfo):
    """A derived label_prototypes record accepted by the API check (only the check decides them)."""
    findings: list[CheckFinding]
    checked: int  # the chunk's engine uses the check decided
    undecided: int  # uses it could not decide (summarised in the stage's note)
    version: str  # the Godot version of the class reference


class ValidateInfo(StageInfo):
    layer: Literal["deterministic"] = "deterministic"
    verdict: Literal["accept", "reject"]
    accepted: bool
    confidence: float
    evidence: list[EvidenceItem]
    contradictions: list[Contradiction]
    reasons: list[str]
    rules: list[str] | None = None  # docs_chunks: the named rules that rejected it (evidence/docs_evidence.py, docs_overrules.py)
    occurrences: list[Occurrence] | None = None  # api_mapping: each use of the old name, decided
    support: float | None = None  # docs_chunks: weighted evidence for and against
    against: float | None = None
    strong: int | None = None
    page_class: str | None = None  # docs_chunks: the class whose reference page holds the record
    clone_lines: list[int] | None = None  # docs_chunks: the chunk's lines (1-based) the record's code matches
    copy_source: bool | None = None  # docs_chunks: the record's page is one the chunk copies
    copied_from: str | None = None  # docs_chunks: the page the chunk copies, which already shows this record's evidence
    # guides: the page (or record of its page) retrieved before it that shows all it shows (same_evidence)
    repeats: str | None = None
    model: dict[str, Any] | None = None  # guides: the fitted model's features, contributions, P(direct) and threshold
    cosine: float | None = None  # docs_chunks: the chunk's and the record's cosine (read for a record only BM25 found)


class JudgeInfo(StageInfo):
    model: str
    question: Literal["docs", "occurrence", "follows_mapping"]
    occurrence: Occurrence | None = None  # the ambiguous occurrence asked about (api_mapping)
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


class RankInfo(StageInfo):
    """The learned ranker's decision of a docs record (evidence/ranker.py): P(direct) from its features."""
    group: str
    p: float
    threshold: float
    accepted: bool
    verdict_before: Literal["accept", "reject"]
    bias: float
    logit: float
    features: dict[str, float]
    contributions: dict[str, float]  # weight x value, per feature
    kept_out_by: str | None = None  # a reject's most negative contribution


class ScoreInfo(StageInfo):
    score_before: float
    confidence: float
    confidence_from: Literal["validate", "judge", "check"]
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
    "check": CheckInfo, "judge": JudgeInfo, "rank": RankInfo, "score": ScoreInfo, "cut": CutInfo, "explain": ExplainInfo,
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
