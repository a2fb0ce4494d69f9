"""The parse and resolve stages: the chunk's GDScript facts (`gdscript.facts`, parsed once per chunk) and its
API uses resolved through the class reference (`gdscript.resolve`)."""
from __future__ import annotations

from typing import NamedTuple

from ...gdscript.facts import GDScriptFacts, parse_chunk
from ...gdscript.resolution import Resolution
from ...gdscript.resolve import extends_hint, resolve_uses
from ..engine.resources import Resources
from ..engine.stage import Stage
from ..engine.state import QueryState


class Parsed(NamedTuple):
    facts: GDScriptFacts  # the chunk's GDScript facts


def run_parse(q: QueryState[Resources]) -> Parsed:
    facts = parse_chunk(q.chunk)
    q.trace.gdscript = facts.summary()
    q.note(**q.trace.gdscript)
    return Parsed(facts)


PARSE = Stage("parse", run_parse,
              "tree-sitter GDScript: code/comment/string regions, calls, chains, declarations, version markers")


class ResolvedChunk(NamedTuple):
    """The chunk as the evidence stages read it: its facts, and its API uses resolved through the class reference."""
    facts: GDScriptFacts
    resolution: Resolution


class Resolved(NamedTuple):
    resolved: ResolvedChunk


def run_resolve(q: QueryState[Resources], facts: GDScriptFacts) -> Resolved:
    """The resolve stage: each API use of the chunk, resolved through the Godot 4 class reference."""
    context = q.context
    res = resolve_uses(facts, q.resources.class_reference(), extends_hint(facts, q.cfg.extends, context),
                       q.cfg.resolve_max_hops, project=context.index() if context is not None else None,
                       own_scope=context.own_scope() if context is not None else None)
    q.trace.resolve = res.to_trace()
    q.note(uses=len(res.uses), unresolved=len(res.unresolved), own_class=res.own_class, own_class_from=res.own_class_from)
    return Resolved(ResolvedChunk(facts, res))


RESOLVE = Stage("resolve", run_resolve, "receivers and calls resolved to Godot 4 class members (extends, locals, return types)")
