"""F's prefilter of `api_mapping` candidates, before any candidate object is built.

A mapping whose `source_api` is one identifier the chunk never writes (and that has no syntax pattern)
has no occurrence to decide, so the validator can only reject it ("source_api 'X' does not occur in the
chunk"). Most of F's 200 + 200 mapping candidates are such records. The retriever stages drop them from
their lists, keep each list's full scores (so the others' fused scores and ranks are those of the full
lists, fuse.py), and name them in the trace (`QueryTrace.prefiltered`: id -> source_api), from which "why
not" gives the validator's reason on demand (why.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..gdscript import IDENT_RE, GDScriptFacts

if TYPE_CHECKING:
    from .context import QueryContext

TABLE = "api_mapping"


def source_absent(facts: GDScriptFacts, payload: dict) -> bool:
    """True when the mapping cannot occur in the chunk: no syntax pattern (`re:` match term), and its source
    is a single identifier that the chunk's text does not hold. The validator's own test (validate.py)."""
    if any(t.startswith("re:") for t in payload.get("match_terms") or []):
        return False
    src = payload["source_api"]
    return bool(IDENT_RE.fullmatch(src)) and src not in facts.all_identifiers


def absent_reason(source_api: str) -> str:
    """The validator's rejection reason for a mapping whose source does not occur."""
    return f"source_api '{source_api}' does not occur in the chunk"


def drop_absent(ctx: QueryContext, table: str, ranked: list[tuple[str, float]], records: dict[str, dict],
                on: bool) -> list[tuple[int, str, float]]:
    """(rank in the full list, id, score) of the rows that go on: all of them, unless `on` and the table is
    api_mapping, where a mapping the chunk cannot hold is left out and named in the trace."""
    if not on or table != TABLE:
        return [(rank, rid, score) for rank, (rid, score) in enumerate(ranked, 1)]
    dropped = ctx.trace.prefiltered if ctx.trace.prefiltered is not None else {}
    kept = []
    for rank, (rid, score) in enumerate(ranked, 1):
        payload = records[rid]
        if source_absent(ctx.facts, payload):
            dropped[rid] = payload["source_api"]
        else:
            kept.append((rank, rid, score))
    ctx.trace.prefiltered = dropped
    return kept
