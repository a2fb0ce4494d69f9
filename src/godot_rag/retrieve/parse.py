"""The parse stage: the chunk's GDScript facts (`godot_rag.gdscript`, parsed once per chunk)."""
from __future__ import annotations

from ..gdscript import parse_chunk
from .context import Pool, QueryContext
from .stage import Stage


def run_parse(ctx: QueryContext, pool: Pool) -> Pool:
    ctx.facts = parse_chunk(ctx.chunk)
    ctx.trace.gdscript = ctx.facts.summary()
    ctx.note(**ctx.trace.gdscript)
    return pool


PARSE = Stage("parse", run_parse, "tree-sitter GDScript: code/comment/string regions, calls, chains, declarations, version markers",
              provides=("facts",))
