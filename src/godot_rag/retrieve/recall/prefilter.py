"""F's prefilter of `api_mapping` candidates, before any candidate object is built.

A mapping whose `source_api` is one identifier the chunk never writes (and that has no syntax pattern)
has no occurrence to decide, so the validator can only reject it ("source_api 'X' does not occur in the
chunk"). Most of F's 200 + 200 mapping candidates are such records. The retriever stages drop them from
their lists, keep each list's full scores (so the others' fused scores and ranks are those of the full
lists, fuse.py) and count them in the stage's log; the trace's id lists still hold them (found by the
list, absent from the union: `dropped_ids`), and "why not" gives the validator's reason on demand from the
record (why.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...gdscript.facts import GDScriptFacts
from ...gdscript.lexicon import IDENT_RE

if TYPE_CHECKING:
    from ...store.records_cache import Records
    from ..engine.trace import QueryTrace

TABLE = "api_mapping"
# The label_prototypes derived from the class reference (`api:...`, thousands) enter F only through the API check
# (stage check), which names them; the validator rejects any a list brings in. With the prefilter on, the lists
# leave them out, so that they never take the places of the hand-written prototypes.
DERIVED_TABLE = "label_prototypes"


def source_name(payload: dict) -> str | None:
    """The mapping's source when it is a single identifier and no syntax pattern (`re:` match term) can
    find it otherwise: the one name the chunk must hold for the mapping to occur."""
    if any(t.startswith("re:") for t in payload.get("match_terms") or []):
        return None
    src = payload["source_api"]
    return src if IDENT_RE.fullmatch(src) else None


def source_absent(facts: GDScriptFacts, payload: dict) -> bool:
    """True when the mapping cannot occur in the chunk: its source name (`source_name`) is one the chunk's
    text does not hold. The validator's own test (validate.py)."""
    return _absent(facts, source_name(payload))


def cannot_occur(facts: GDScriptFacts, records: Records, rid: str) -> bool:
    """`source_absent` for a stored record, its source name read once per process (`records.derived`): the
    prefilter tests 400 mappings a query, and unpacking each payload again was most of its time."""
    names = records.derived.setdefault("source_name", {})
    if rid not in names:
        names[rid] = source_name(records[rid])
    return _absent(facts, names[rid])


def _absent(facts: GDScriptFacts, src: str | None) -> bool:
    return src is not None and src not in facts.all_identifiers


def absent_reason(source_api: str) -> str:
    """The validator's rejection reason for a mapping whose source does not occur."""
    return f"source_api '{source_api}' does not occur in the chunk"


def drop_absent(facts: GDScriptFacts | None, table: str, ranked: list[tuple[str, float]],
                records: Records) -> list[tuple[int, str, float]]:
    """(rank in the full list, id, score) of the rows that go on: all of them, unless the chunk's `facts` are given
    (the prefilter is on) and the table is api_mapping, where a mapping the chunk cannot hold is left out. (The
    derived label_prototypes never reach a list here: BM25 gives them no score and the embedding list is the
    hand-written prototypes' own, DERIVED_TABLE.)"""
    if facts is None or table != TABLE:
        return [(rank, rid, score) for rank, (rid, score) in enumerate(ranked, 1)]
    return [(rank, rid, score) for rank, (rid, score) in enumerate(ranked, 1) if not cannot_occur(facts, records, rid)]


def dropped_ids(trace: QueryTrace) -> set[str]:
    """The api_mapping ids a query's prefilter dropped: found by BM25 or the embedding, absent from the union."""
    lists = trace.candidate_ids.get(TABLE, {})
    if "union" not in lists:
        return set()
    return (set(lists.get("bm25", ())) | set(lists.get("embedding", ()))) - set(lists["union"])
