"""The chunk's side of the guide features (`ChunkSide`): what they read of the chunk alone, worked out once per
chunk, the same for every guide of one query."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts
from ...gdscript.lexicon import IDENT
from ...gdscript.record_api import global_uses
from ...gdscript.resolution import Resolution
from .docs_stats import DocsApiStats, untyped_members


def chunk_classes(resolution: Resolution, facts: GDScriptFacts, ref: ClassReference) -> set[str]:
    """The classes the chunk uses: resolved owners, its `extends`, and the types it writes."""
    out = set(resolution.classes)
    out.update(t for t in [facts.extends, *facts.local_types.values()] if t and ref.has_class(t))
    out.update(i for i in facts.identifiers if ref.has_class(i) and i not in facts.declared)
    return out


def chunk_callbacks(facts: GDScriptFacts, ref: ClassReference) -> set[str]:
    """The functions the chunk defines that override a documented method (`_input`, `_draw`)."""
    return {f for f in facts.functions if f.startswith("_") and f in ref.named_owners}


@dataclass(frozen=True)
class ChunkSide:
    """What the features read of the chunk alone: the same for every guide of one query."""
    declared: frozenset[str]  # its declarations and functions
    classes: frozenset[str]  # chunk_classes
    dotted: frozenset[str]  # `.member` names it writes
    globals: frozenset[str]  # global_uses
    callbacks: frozenset[str]  # chunk_callbacks
    family: tuple[str, ...]  # its classes that are not hubs (class_fit)
    world: tuple[str | None, list[str]]  # stats.world_of(classes)
    project: frozenset[str] = frozenset()  # the engine classes the project's classes end on (foreign_section)
    migrated: Mapping[str, str] = field(default_factory=dict)  # migrated_api: Godot 4 `Class.member` -> the Godot 3 name written
    constructs: frozenset[str] = frozenset()  # the GDScript constructs its code holds (facts.constructs)


def migrated_api(ref: ClassReference, resolution: Resolution, renames: list[tuple[str, str, int, int]]) -> dict[str, str]:
    """The Godot 4 API that the chunk's Godot 3 uses become: `renames` holds (source, target, line, col) of each
    occurrence an accepted api_mapping decided is Godot 3 use in code. The target resolves like a use: on the class
    the receiver resolved to (`ResourceLoader.load_interactive` -> `ResourceLoader.load_threaded_request`), as a
    global (`deg2rad` -> `@GlobalScope.deg_to_rad`), on the script's own class (`NOTIFICATION_WM_FOCUS_IN` ->
    `Node.NOTIFICATION_APPLICATION_FOCUS_IN`), or on the one class that documents it. Godot 3 code is compared with
    Godot 4 guides through the API its names were renamed to; a class rename is `chunk_side`'s `renamed`."""
    missing = {(u.line, u.col): u.missing_on for u in resolution.unresolved if u.missing_on}
    out: dict[str, str] = {}
    for source, target, line, col in renames:
        if re.fullmatch(IDENT, target) is None or ref.has_class(target):
            continue
        found = None
        if (on := missing.get((line, col))) is not None:
            found = ref.member(on, target)
        elif (glob := ref.global_member(target)) is not None:
            found = glob
        elif resolution.own_class is not None:
            found = ref.member(resolution.own_class, target)
        if found is None and (owners := set(ref.resolver_map(target).values())) and len(owners) == 1:
            found = ref.member(next(iter(owners)), target)
        if found is not None:
            out[f"{found[0]}.{target}"] = source
    return out


def chunk_side(stats: DocsApiStats, resolution: Resolution, facts: GDScriptFacts, renamed: Mapping[str, str] | None = None,
               project: frozenset[str] = frozenset(), migrated: Mapping[str, str] | None = None) -> ChunkSide:
    """The chunk's side of the features: worked out once per chunk (the validation context keeps it).
    `renamed`: the converter's class renames (Godot 3 name -> Godot 4 name); a Godot 3 class the chunk writes
    stands for the class Godot 4 renamed it to (`SpatialMaterial` code is about `StandardMaterial3D`).
    `migrated`: `migrated_api`, the Godot 4 members its Godot 3 uses become (globals among them)."""
    mine = chunk_classes(resolution, facts, stats.ref)
    if renamed:
        mine |= {renamed[i] for i in facts.identifiers
                 if i in renamed and i not in facts.declared and stats.ref.has_class(renamed[i])}
    migrated = dict(migrated or {})
    globals_ = set(global_uses(facts, resolution, stats.ref)) | {a for a in migrated if a.startswith("@")}
    return ChunkSide(frozenset(facts.declared | facts.functions), frozenset(mine), untyped_members(facts.code, stats.ref),
                     frozenset(globals_), frozenset(chunk_callbacks(facts, stats.ref)),
                     tuple(c for c in mine if not stats.generic(c)), stats.world_of(mine), project, migrated,
                     frozenset(facts.constructs))


def uses_api(side: ChunkSide, resolution: Resolution) -> bool:
    """Whether the chunk uses any API a guide could share: a resolved member, a global, a callback, a class."""
    return bool(side.classes or side.globals or side.callbacks or any(u.member not in side.declared for u in resolution.uses))
