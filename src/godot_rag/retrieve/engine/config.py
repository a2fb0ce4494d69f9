"""Retrieval settings, chosen by name from flags, a request body or a TOML file."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from ...errors import ConfigError, clip
from ...records import TABLES

FUSIONS = ("maxnorm", "rrf", "minmax", "zscore")
RERANKERS = ("none", "nanoranker", "qwen", "cross-encoder")
GODOT_VERSIONS = ("auto", "3", "4")




Fusion = Literal["maxnorm", "rrf", "minmax", "zscore"]
Reranker = Literal["none", "nanoranker", "qwen", "cross-encoder"]
# strict: "0.5" and true are refused, as for the ints
Weight = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False, strict=True)]
Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]


class RetrieveConfig(BaseModel):
    """Every retrieval setting, typed and bounded. `--set`, `--config` (TOML) and the HTTP `config`
    object all go through this model; an unknown or wrong-typed name is an error listing the valid ones."""

    model_config = ConfigDict(extra="forbid", strict=False, validate_assignment=True)

    k: int = Field(10, ge=1, le=100, strict=True, description="results per table (F: the guides group of docs)")
    tables: list[str] = Field(default_factory=lambda: list(TABLES), min_length=1, max_length=10, description="tables to search")
    k1: float = Field(1.2, ge=0.0, le=10.0, allow_inf_nan=False, strict=True, description="BM25 term-frequency saturation")
    b: float = Field(0.75, ge=0.0, le=1.0, allow_inf_nan=False, strict=True, description="BM25 length normalisation")
    tokenizer_parts: StrictBool = Field(False, description="add snake/camel parts of identifiers")
    tokenizer_dotted: StrictBool = Field(False, description="add member chains (position.clamp)")
    local_weight: Weight = Field(0.0, description="BM25 weight of names the chunk declares itself")
    candidates: int = Field(50, ge=1, le=500, strict=True, description="N taken from each retriever before the union")
    fusion: Fusion = Field("maxnorm", description="how the lists are fused")
    rrf_k: int = Field(60, ge=1, le=10_000, strict=True)
    weight_bm25: Weight = Field(1.0)
    weight_embedding: Weight = Field(0.3)
    weight_api: Weight = Field(0.5, description="F: weight of the `api` source (member entries of resolved uses)")
    api_extends: StrictBool = Field(True, description="F: the class the chunk's own `extends` line names, when it is no "
                                    "hub of the hierarchy (Camera3D, not Node2D), is a use: its class description joins "
                                    "the `api` source and counts for the class-reference rules")
    api_typed: StrictBool = Field(False, description="F: a class the chunk writes as a type and uses nothing of (`var "
                                  "anim: AnimationPlayer`), when it is an engine object class and no hub of the "
                                  "hierarchy, is a use the same way (not Node2D, nor a value type such as Vector2). Off: "
                                  "on other authors' projects, 4 of 16 such descriptions were graded direct evidence")
    codematch_alpha: Weight = Field(1.0, description="D/E/F: fused * (1 + alpha * code-clone ratio); 0 turns it off")
    segments: StrictBool = Field(True, description="retrieve per function/block of the chunk and merge")
    ef_search: int = Field(100, ge=1, le=1000, strict=True)
    reranker: Reranker = Field("none", description="nanoranker and Qwen P(yes) measured no better than D's order")
    rerank_top: int = Field(30, ge=1, le=500, strict=True, description="how many fused candidates the reranker sees")
    rerank_weight: float = Field(0.3, ge=0.0, le=1.0, allow_inf_nan=False, strict=True,
                                 description="share of the reranker in F's score")
    validator_llm: StrictBool = Field(False, description="add the Qwen judge to F's validator")
    validate_top: int = Field(5, ge=1, le=100, strict=True, description="most docs accepts the judge sees")
    judge_thresholds: dict[Literal["api_mapping", "docs_chunks"],
                           Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]] | None = Field(
        None, description="override the calibrated P(yes) threshold per table (the judge then decides)")
    judge_citations: StrictBool = Field(False, description="a deciding judge also cites the literals it relies on (about 2 s "
                                        "per yes with the 1.5B on 2 cores; checked, and mostly hallucinated by the "
                                        "bundled models)")
    learned_ranker: StrictBool = Field(True, description="F: the fitted ranker (store/ranker_model.json) decides each docs "
                                       "record no contradiction rejected (P(direct) against its group's threshold) and "
                                       "orders the accepted ones by P")
    ranker_thresholds: dict[Literal["guides", "api_reference"],
                            Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False, strict=True)]] | None = Field(
        None, description="override the fitted ranker's P(direct) threshold per docs group (lower: more recall, less "
                          "precision; the curve is in store/ranker_model.json)")
    guide_model: StrictBool = Field(True, description="F: the fitted model (store/guide_model.json) decides guides; "
                                    "false: the evidence rules decide them as for class-reference records")
    min_direct_evidence: int = Field(1, ge=0, le=50, strict=True)
    mapping_confidence_sure: Share = Field(0.9, description="F: an accepted mapping's confidence is at least this when a "
                                           "sure Godot 3 use in code supports it")
    mapping_confidence_ambiguous: Share = Field(0.6, description="F: at most this when only ambiguous uses, decided by the "
                                                "chunk's version markers and the hint, support it")
    mapping_confidence_weak: Share = Field(0.5, description="F: at most this when only weak evidence (a scene node named "
                                           "after a class, a comment) supports it")
    copy_source_share: float = Field(0.5, ge=0.0, le=1.0, allow_inf_nan=False, strict=True,
                                     description="F: a guide page whose code holds this share of the chunk's code is the "
                                                 "copied page; guides that add nothing to it are rejected (0 turns it off)")
    same_evidence: StrictBool = Field(True, description="F: a guide that shows the chunk nothing (shared API, globals, "
                                      "callbacks, classes, matched code lines) that an accepted guide retrieved before it "
                                      "does not show too is rejected as the same evidence again (rule same_evidence; "
                                      "not in Godot 3 code)")
    min_guide_specificity: Share = Field(0.5, description="F: a guide whose shared API, globals, callbacks and classes are "
                                         "all less specific than this (`_ready` 0.30, `_process` 0.41, `@export` 0.41; "
                                         "`Node.get_node` 0.14) shares only generic API and is rejected (rule generic_only; "
                                         "not a copy, nor Godot 3 code); 0 turns it off")
    min_api_specificity: Share = Field(0.16, description="F: a class-reference entry whose resolved uses are all less "
                                       "specific than this (corpus use counts: Node.get_node 0.14, Node.add_child 0.13) is "
                                       "rejected as generic (rule generic_api); 0 turns it off")
    llm_optional: StrictBool = Field(False, description="fall back to the deterministic validator when the LLM is down")
    profile_keep_hallucinated: StrictBool = Field(False)
    godot_version: Literal["auto", "3", "4"] = Field("auto", description="sharpens only the ambiguous migration cases")
    extends: str | None = Field(None, max_length=100, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                description="the script's class when the chunk has no `extends` line (e.g. the file header's)")
    k_api: int = Field(15, ge=0, le=100, strict=True, description="F: member entries of the resolved API uses, after the guides")
    resolve_max_hops: int = Field(1, ge=0, le=5, strict=True, description="F: call chains followed through return types")

    def __init__(self, **data: Any) -> None:
        unknown = [k for k in data if k not in type(self).model_fields]
        if unknown:
            raise ConfigError(f"unknown setting(s) {', '.join(clip(k) for k in unknown[:5])}; "
                              f"valid: {', '.join(sorted(type(self).model_fields))}")
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise ConfigError(_describe(e)) from None
        bad = [t for t in self.tables if t not in TABLES]
        if bad:
            raise ConfigError(f"unknown table(s) {', '.join(clip(t) for t in bad[:5])}; valid tables: {', '.join(TABLES)}")

    def to_dict(self) -> dict:
        return self.model_dump()

    @classmethod
    def from_mapping(cls, data: dict) -> RetrieveConfig:
        if not isinstance(data, dict):
            raise ConfigError("settings must be an object of name -> value")
        return cls(**data)

    @classmethod
    def merged(cls, base: object = None, **named: Any) -> RetrieveConfig:
        """The one merge of settings: a table of them (a TOML file's [retrieve], a request's `config`),
        overridden by named values (flags, `--set`, a request's own fields); None leaves a name unset."""
        if base is not None and not isinstance(base, dict):
            raise ConfigError("settings must be an object of name -> value")
        return cls.from_mapping(dict(base or {}) | {k: v for k, v in named.items() if v is not None})

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> RetrieveConfig:
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{path}: not valid TOML ({e})") from None
        except OSError as e:
            raise ConfigError(f"{path}: cannot read ({e.strerror})") from None
        data = data.get("retrieve", data)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: [retrieve] must be a table of settings")
        return cls.merged(data, **overrides)


VALID = {"fusion": FUSIONS, "reranker": RERANKERS, "godot_version": GODOT_VERSIONS}


def _describe(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:5]:
        name = ".".join(str(x) for x in err["loc"]) or "settings"
        value = repr(err.get("input"))[:40]
        field = str(err["loc"][0]) if err["loc"] else ""
        hint = f"; valid: {', '.join(VALID[field])}" if field in VALID else ""
        kind = "unknown" if field in VALID else "invalid"
        parts.append(f"{kind} {field} {value}: {err['msg']}{hint}" if field in VALID
                     else f"setting '{name}' = {value}: {err['msg']}")
    return "; ".join(parts)
