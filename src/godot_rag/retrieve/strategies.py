"""The six strategies, as data: each is a list of stages, run in order by `Retriever.retrieve`, and
checked when it is built: each stage's required parts come from an earlier stage, no part from two
(`stage.check_contract`). The web page, `retrieve --explain` and `godot-rag strategies` take their stage
columns from here."""
from __future__ import annotations

from dataclasses import dataclass

from .engine.config import ConfigError, RetrieveConfig, clip
from .engine.stage import Stage, check_contract
from .engine.trace import STAGE_COLUMNS
from .evidence.api_source import API, SHORTLIST
from .evidence.check import CHECK
from .evidence.final import CUT, CUT_VALIDATED, SCORE
from .evidence.judge import JUDGE
from .evidence.ranker import RANK
from .evidence.validate import VALIDATE
from .migration.version_stage import VERSION
from .query.parse import PARSE, RESOLVE
from .query.segment import SEGMENT, TOKENIZE
from .recall.codematch import CODEMATCH
from .recall.embedding import EMBED_QUERY, EMBEDDING
from .recall.fuse import FUSE, MERGE, UNION
from .recall.lexical import BM25, EXPLAIN
from .recall.profile import PROFILE, PROFILE_DIFF
from .recall.rerank import RERANK
from .recall.tsquery import DIAGNOSE, TSQUERY

# F reads more api_mapping candidates from both lists: a chunk can use several renamed names, each with its own record;
# the mappings whose source the chunk does not hold are dropped before any candidate is built (prefilter.py).
F_MIN_CANDIDATES = {"api_mapping": 200}
BM25_WIDE = BM25.with_options(requires=("facts",), min_candidates=F_MIN_CANDIDATES, prefilter=True)
EMBEDDING_WIDE = EMBEDDING.with_options(requires=("facts",), min_candidates=F_MIN_CANDIDATES, prefilter=True)


@dataclass(frozen=True)
class Strategy:
    name: str
    about: str
    stages: list[Stage]
    needs: str | None = None  # what must be configured for it to run (an LLM)
    api_group: bool = False  # its docs come as guides, then the `api_reference` group of k_api member entries

    def __post_init__(self) -> None:
        check_contract(self.name, self.stages)

    @property
    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]

    @property
    def needs_llm(self) -> bool:
        return self.needs is not None

    def k_of(self, cfg: RetrieveConfig) -> dict[str, int]:
        """How many records each table (and group) returns at most."""
        return {t: cfg.k for t in cfg.tables} | ({"api_reference": cfg.k_api} if self.api_group else {})


STRATEGIES: dict[str, Strategy] = {s.name: s for s in [
    Strategy("A", "PostgreSQL plainto_tsquery + ts_rank_cd (today's baseline)",
             [TSQUERY, DIAGNOSE, CUT]),
    Strategy("B", "BM25 alone",
             [SEGMENT, TOKENIZE, BM25, UNION, MERGE, CUT, EXPLAIN]),
    Strategy("C", "embedding alone",
             [EMBED_QUERY, EMBEDDING, UNION, CUT]),
    Strategy("D", "BM25 + embedding in parallel -> union -> fused score -> code-clone bonus",
             [SEGMENT, TOKENIZE, EMBED_QUERY, BM25, EMBEDDING, UNION, FUSE, CODEMATCH, MERGE, CUT, EXPLAIN]),
    Strategy("E", "Qwen search profile -> BM25 over its literals + embedding of its intent",
             [PROFILE, TOKENIZE, EMBED_QUERY, BM25, EMBEDDING, UNION, FUSE, CUT, PROFILE_DIFF],
             needs="an LLM: godot-rag serve --llm-bundled 0.5b (or --llm-gguf FILE, --llm-url URL)"),
    Strategy("F", "parse + resolve API uses -> BM25 + embedding + api member entries -> reranker -> "
                  "version-aware direct-evidence validator -> API check against the class reference -> learned ranker "
                  "(optional Qwen judge) (recommended)",
             [PARSE, RESOLVE, SEGMENT, TOKENIZE, EMBED_QUERY, BM25_WIDE, EMBEDDING_WIDE, UNION, FUSE, CODEMATCH, MERGE,
              RERANK, SHORTLIST, API, VERSION, VALIDATE, CHECK, RANK, JUDGE, SCORE, CUT_VALIDATED, EXPLAIN], api_group=True),
]}


def check_strategy(name: str) -> str:
    up = (name or "").strip().upper()
    if up not in STRATEGIES:
        raise ConfigError(f"unknown strategy {clip(repr(name))}; valid strategies: {', '.join(STRATEGIES)}")
    return up


def llm_user(names: list[str], cfg: RetrieveConfig) -> str | None:
    """What needs an LLM among these strategies with these settings (None: nothing does), as a message names it."""
    for name in names:
        if STRATEGIES[name].needs_llm:
            return f"strategy {name}"
    if cfg.validator_llm:
        return "the Qwen judge"
    return "the qwen reranker" if cfg.reranker == "qwen" else None


def _column(stage: str) -> dict | None:
    column = STAGE_COLUMNS.get(stage)
    return column.model_dump() if column is not None else None


def describe() -> dict[str, dict]:
    """Each strategy's description and stage list, for `godot-rag strategies` and GET /api/strategies: each
    stage with its contract and, for a stage that says something about each record, the page's column."""
    return {name: {"about": s.about, "needs": s.needs,
                   "stages": [{"name": st.name, "about": st.about, "requires": st.requires_names,
                               "optional": st.optional_names, "provides": st.provides_names,
                               "inputs": [p.shown() for p in st.inputs], "outputs": [p.shown() for p in st.outputs],
                               "column": _column(st.name)} for st in s.stages]}
            for name, s in STRATEGIES.items()}
