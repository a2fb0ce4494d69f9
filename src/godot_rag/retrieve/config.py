"""Retrieval settings, chosen by name from flags, a request body or a TOML file."""
from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from ..ingest.schema import TABLES

STRATEGIES = {
    "A": "PostgreSQL plainto_tsquery + ts_rank_cd (today's baseline)",
    "B": "BM25 alone",
    "C": "embedding alone",
    "D": "BM25 + embedding in parallel -> union -> fused score",
    "E": "Qwen search profile -> BM25 over its literals + embedding of its intent",
    "F": "BM25 + embedding -> union -> reranker -> direct-evidence validator (recommended)",
}
FUSIONS = ("maxnorm", "rrf", "minmax", "zscore")
RERANKERS = ("none", "nanoranker", "qwen", "cross-encoder")
GODOT_VERSIONS = ("auto", "3", "4")
MAX_CHUNK_CHARS = 20_000


class ConfigError(ValueError):
    pass


def check_strategy(name: str) -> str:
    up = (name or "").strip().upper()
    if up not in STRATEGIES:
        raise ConfigError(f"unknown strategy {name!r}; valid strategies: {', '.join(STRATEGIES)}")
    return up


@dataclass
class RetrieveConfig:
    k: int = 10  # per table
    tables: list[str] = field(default_factory=lambda: list(TABLES))
    k1: float = 1.2
    b: float = 0.75
    tokenizer_parts: bool = False
    tokenizer_dotted: bool = False
    local_weight: float = 0.0  # BM25 weight of names the chunk declares itself (see tokenize.local_names)
    candidates: int = 50  # N taken from each retriever before the union
    fusion: str = "maxnorm"
    rrf_k: int = 60
    weight_bm25: float = 1.0
    weight_embedding: float = 0.3
    codematch_alpha: float = 1.0  # D/E/F: fused * (1 + alpha * code-clone ratio); 0 turns it off
    segments: bool = True  # retrieve per function/block of the chunk and merge
    ef_search: int = 100
    reranker: str = "none"  # nanoranker and Qwen P(yes) measured no better than D's order (README)
    rerank_top: int = 30  # how many fused candidates the reranker sees
    rerank_weight: float = 0.3  # share of the reranker in the final F score
    validator_llm: bool = False
    validate_top: int = 5
    min_direct_evidence: int = 1
    llm_optional: bool = False
    profile_keep_hallucinated: bool = False
    godot_version: str = "auto"  # "3" | "4" | "auto": sharpens only the ambiguous migration cases
    extends: str | None = None  # the script's class when the chunk has no `extends` (e.g. the scan's file header)
    k_api: int = 15  # F: member entries of the resolved API uses, after the k guides
    resolve_max_hops: int = 1  # F: call chains followed through documented return types

    def __post_init__(self):
        bad = [t for t in self.tables if t not in TABLES]
        if bad:
            raise ConfigError(f"unknown table(s) {', '.join(bad)}; valid tables: {', '.join(TABLES)}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {self.fusion!r}; valid: {', '.join(FUSIONS)}")
        if self.reranker not in RERANKERS:
            raise ConfigError(f"unknown reranker {self.reranker!r}; valid: {', '.join(RERANKERS)}")
        if self.godot_version not in GODOT_VERSIONS:
            raise ConfigError(f"unknown godot_version {self.godot_version!r}; valid: {', '.join(GODOT_VERSIONS)}")
        if self.k < 1 or self.candidates < 1:
            raise ConfigError("k and candidates must be at least 1")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_mapping(cls, data: dict) -> "RetrieveConfig":
        names = {f.name for f in fields(cls)}
        unknown = [k for k in data if k not in names]
        if unknown:
            raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: Path, **overrides) -> "RetrieveConfig":
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
        data = data.get("retrieve", data)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_mapping(data)
