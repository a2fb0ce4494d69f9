"""What the validator knows about one chunk, computed once per request (`ValidationScope`, the part `validation`),
and how rare a shared name must be to count (`MIN_IDF`, `MIN_NAME_CHARS`)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from ...gdscript.facts import GDScriptFacts
from ...gdscript.lexicon import IDENT_RE
from ..engine.config import RetrieveConfig
from ..migration.version import VersionMarkers
from ..migration.version_occurrence import ChunkScope
from .api_source import ClassUse
from .chunk_side import ChunkSide, chunk_side, migrated_api
from .docs_stats import DocsApiStats
from .guide_model import GuideModel

MIN_IDF = 5.0  # a shared name is evidence when its idf in the docs index is at least this (rare enough)
MIN_NAME_CHARS = 3  # shorter strings and identifiers are no evidence


@dataclass(frozen=True)
class MappingConfidence:
    """An accepted mapping's confidence from the occurrences that support it (the settings mapping_confidence_*)."""
    sure: float  # the least, with a sure Godot 3 use in code
    ambiguous: float  # the most, with only ambiguous uses the version markers decided
    weak: float  # the most, with only weak evidence (a node name, a comment)

    @classmethod
    def of(cls, cfg: RetrieveConfig) -> MappingConfidence:
        return cls(cfg.mapping_confidence_sure, cfg.mapping_confidence_ambiguous, cfg.mapping_confidence_weak)


@dataclass(kw_only=True)
class ValidationScope(ChunkScope):
    """What the validator knows about the chunk, computed once per request."""
    version: VersionMarkers  # final: the mappings' Godot 3 uses included (the version stage)
    idf: Callable[[str], float]
    class_of_page: dict[str, str]  # classes/class_scenetree -> SceneTree
    renameable: frozenset[str] = frozenset()
    code_renames: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the converter's, Godot 3 -> Godot 4 names
    min_direct_evidence: int = 1
    copy_source_share: float = 0.5
    min_guide_specificity: float = 0.0  # a guide sharing only less specific API is generic (guide_decision.decide_guide)
    # a guide showing nothing a guide retrieved before it does not is rejected (same_evidence_overrules)
    same_evidence: bool = True
    # a class-reference entry of only less specific uses is generic (0: off; the setting's default is RetrieveConfig's)
    min_api_specificity: float = 0.0
    mapping_confidence: MappingConfidence = field(default_factory=lambda: MappingConfidence.of(RetrieveConfig()))
    guide_model: tuple[GuideModel, DocsApiStats] | None = None  # the fitted decision for guides (guide_decision.py)
    cosines: dict[str, float] = field(default_factory=dict)  # docs records only BM25 found -> their cosine
    class_uses: Mapping[str, ClassUse] = field(default_factory=dict)  # the classes it uses as a whole (api_source.class_uses)
    # (source, target, line, col) of each Godot 3 use in code an accepted api_mapping stands on (`validate` fills it
    # before the docs: a Godot 3 chunk shares with a guide the API its names become, chunk_side.migrated_api)
    migrated: list[tuple[str, str, int, int]] = field(default_factory=list)

    @property
    def godot3(self) -> bool:
        """The chunk has Godot 3 markers (the mappings' Godot 3 uses among them)."""
        return self.version is not None and bool(self.version.godot3)

    @cached_property
    def long_rare_identifiers(self) -> tuple[str, ...]:
        return long_rare_names(self)

    @cached_property
    def long_rare_strings(self) -> tuple[str, ...]:
        return long_rare_names(self, strings=True)

    @cached_property
    def alone(self) -> ValidationScope:
        """This context with the chunk's own resolution (`Resolution.chunk_alone`): what the mapping, finding and
        guide decisions read. The guide model's features were fitted on chunks alone, and a Godot 3 use is the
        chunk's to show; only the class-reference entries read what the project's declarations typed."""
        alone = self.resolution.chunk_alone()
        return self if alone is self.resolution else replace(self, resolution=alone)

    @cached_property
    def guide_side(self) -> ChunkSide | None:
        """The chunk's side of the guide features (None without the guide model)."""
        if self.guide_model is None:
            return None
        index = self.context.index() if self.context is not None else None
        return chunk_side(self.guide_model[1], self.resolution, self.facts, self.renamed_classes,
                          index.engine_classes if index is not None else frozenset(),
                          migrated_api(self.ref, self.resolution, self.migrated))

    @cached_property
    def chain_haystack(self) -> str:
        return chain_haystack(self.facts)

    @cached_property
    def call_pairs(self) -> set[str]:
        """`Owner.member` tails of the chunk's call chains (`Input.is_action_pressed`, `position.clamp`)."""
        out = set()
        for ch in self.facts.chains:
            names = ([ch.root] if ch.root_kind in ("identifier", "call") and ch.root else []) + [p.name for p in ch.parts]
            calls = [False] * (len(names) - len(ch.parts)) + [p.call for p in ch.parts]
            for i in range(1, len(names)):
                if calls[i]:
                    out.add(f"{names[i - 1]}.{names[i]}")
        return out


def chain_haystack(facts: GDScriptFacts) -> str:
    """The chunk's call chains, each after a dot, one a line: a dotted symbol is in a chain (the whole chain, its
    tail, its head, or a run inside it) when ".symbol" is in the chain's line, so one search over this text
    tests every chain (for a symbol without a line break: no match then runs across two)."""
    return "\n".join("." + ch for ch in sorted(facts.chain_texts))


def long_rare_names(v: ValidationScope, strings: bool = False) -> tuple[str, ...]:
    """The chunk's identifiers (`strings`: its identifier-like string values) long and rare enough to be evidence
    where a record holds them too, in order: the same for every record, so the validation context keeps them."""
    names = {s for s in v.facts.string_values if IDENT_RE.fullmatch(s)} if strings else v.facts.identifiers
    return tuple(n for n in sorted(names) if len(n) >= MIN_NAME_CHARS and v.idf(n.lower()) >= MIN_IDF)
