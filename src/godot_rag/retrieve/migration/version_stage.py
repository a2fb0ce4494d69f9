"""The version stage (F): which Godot version the chunk is written for, and what each occurrence of
an api_mapping candidate's source name is (`version_rules.classify_in_context`). Both are final here: the
validator reads them and changes neither.

The chunk's markers (`version.version_context`) gain the mappings' unambiguous Godot 3 uses: one
mapping's sure Godot 3 use is a marker for the ambiguous occurrences of the others."""
from __future__ import annotations

from typing import NamedTuple

from ..engine.stage import Stage
from ..engine.state import Pool, QueryState, table_list
from ..engine.trace import Occurrence
from ..engine.types import Candidate
from ..query.parse import ResolvedChunk
from .occurrences import Occurrences, mapping_occurrences
from .resources import MigrationResources
from .version import VersionMarkers, effective_hint, version_context
from .version_occurrence import ChunkScope


class VersionDecisions(NamedTuple):
    markers: VersionMarkers  # the chunk's version markers, the mappings' Godot 3 uses included
    occurrences: Occurrences  # each api_mapping candidate's occurrences, decided


class Versioned(NamedTuple):
    version: VersionDecisions


def decide_occurrences(scope: ChunkScope, mappings: list[Candidate]) -> Occurrences:
    """Each mapping's occurrences with their version decision (before the markers weigh the ambiguous ones)."""
    return {c.id: [Occurrence(**d) for d in mapping_occurrences(scope, c)["occurrences"]] for c in mappings}


def mapping_markers(mappings: list[Candidate], occurrences: Occurrences) -> list[str]:
    """A marker for each mapping with an unambiguous Godot 3 use in the chunk (C#-only changes say nothing
    of GDScript)."""
    out = []
    for c in mappings:
        hits = [d for d in occurrences[c.id] if d.status == "godot3"]
        if hits and not c.payload["change_type"].startswith("csharp"):
            out.append(f"line {hits[0].line}: {c.payload['source_api']} ({hits[0].why.split(': ', 1)[-1]})")
    return out


def run_version(q: QueryState[MigrationResources], pool: Pool, resolved: ResolvedChunk) -> Versioned:
    """The chunk's Godot 3 / Godot 4 markers and the occurrence decisions of the api_mapping candidates."""
    r = q.resources
    renames = r.renames()
    # The chunk's own resolution: a Godot 3 or Godot 4 use is the chunk's to show, not what the project's
    # declarations typed (`Resolution.chunk_alone`).
    facts, alone = resolved.facts, resolved.resolution.chunk_alone()
    version = version_context(facts, alone, renames.new, renames.old, effective_hint(q.cfg.godot_version, q.context))
    scope = ChunkScope(facts, alone, r.class_reference(), renames.classes, version=version, context=q.context)
    mappings = table_list(pool, "api_mapping")
    occurrences = decide_occurrences(scope, mappings)
    version.godot3 += mapping_markers(mappings, occurrences)
    q.trace.version = version.to_trace()
    q.note(**q.trace.version)
    return Versioned(VersionDecisions(version, occurrences))


VERSION = Stage("version", run_version, "Godot 3 / Godot 4 markers of the chunk (its own, and the candidate mappings' "
                "sure Godot 3 uses); the godot_version hint decides only ambiguous cases")
