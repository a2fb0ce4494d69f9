"""The parse and resolve stages: the chunk's GDScript facts (`gdscript.facts`, parsed once per chunk) and its
API uses resolved through the class reference (`gdscript.resolve`)."""
from __future__ import annotations

from ...gdscript.facts import GDScriptFacts, parse_chunk
from ...gdscript.resolution import Resolution
from ...gdscript.resolve import extends_hint, resolve_uses
from ..engine.stage import Stage
from ..engine.state import PartKey, Pool, QueryState

FACTS = PartKey[GDScriptFacts]("facts", "the chunk's GDScript facts")
RESOLUTION = PartKey[Resolution]("resolution", "the chunk's API uses, resolved through the class reference")


def run_parse(ctx: QueryState, pool: Pool) -> Pool:
    ctx[FACTS] = parse_chunk(ctx.chunk)
    ctx.trace.gdscript = ctx[FACTS].summary()
    ctx.note(**ctx.trace.gdscript)
    return pool


PARSE = Stage("parse", run_parse,
              "tree-sitter GDScript: code/comment/string regions, calls, chains, declarations, version markers",
              provides=(FACTS,))


def run_resolve(ctx: QueryState, pool: Pool) -> Pool:
    """The resolve stage: each API use of the chunk, resolved through the Godot 4 class reference."""
    context = ctx.context
    res = resolve_uses(ctx[FACTS], ctx.resources.class_reference(), extends_hint(ctx[FACTS], ctx.cfg.extends, context),
                       ctx.cfg.resolve_max_hops, project=context.index() if context is not None else None,
                       own_scope=context.own_scope() if context is not None else None)
    ctx[RESOLUTION] = res
    ctx.trace.resolve = res.to_trace()
    ctx.note(uses=len(res.uses), unresolved=len(res.unresolved), own_class=res.own_class, own_class_from=res.own_class_from)
    return pool


RESOLVE = Stage("resolve", run_resolve, "receivers and calls resolved to Godot 4 class members (extends, locals, return types)",
                requires=(FACTS,), provides=(RESOLUTION,))
