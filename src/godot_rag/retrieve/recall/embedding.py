"""The embedding stages: encode the query text (MiniLM, window-mean), then one pgvector HNSW
cosine list per table."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...gdscript.api_check import REFERENCE_PROTOTYPE_PREFIX as DERIVED_PREFIX
from ...gdscript.facts import GDScriptFacts
from ...gdscript.tokenize import tokenizer_of
from ...store import queries
from ..engine.stage import Stage
from ..engine.state import QueryState
from ..engine.trace import SCORE_DIGITS, EmbeddingInfo, later
from ..engine.types import Candidate
from .lexical import Found, load_index
from .prefilter import DERIVED_TABLE, drop_absent
from .ranked_lists import RankedLists
from .resources import RecallResources


class Encoded(NamedTuple):
    vectors: np.ndarray  # the encoded query texts


def run_embed_query(q: QueryState[RecallResources], dense_texts: list[str] | None = None) -> Encoded:
    """`dense_texts`: what to encode (E's intent); the chunk when no stage set them."""
    texts = dense_texts if dense_texts is not None else [q.chunk]
    embedder = q.ensure_loaded("embedder", q.resources.embedder, model=q.resources.embedder.key)
    encoded = [embedder.encode_query(t) for t in texts]
    q.note(model=embedder.key, texts=len(texts), windows=[n for _, n in encoded])
    return Encoded(np.stack([vector for vector, _ in encoded]))


def run_embedding(q: QueryState[RecallResources], vectors: np.ndarray, lists: RankedLists | None = None,
                  facts: GDScriptFacts | None = None, *, min_candidates: dict[str, int] | None = None,
                  prefilter: bool = False) -> Found:
    """Segments get BM25 lists only: a second embedding pass per segment costs more than it adds.
    `prefilter`: api_mapping rows that cannot occur in the chunk (its `facts`) get no candidate (prefilter.py)."""
    conn = q.resources.conn()
    found_lists = lists if lists is not None else RankedLists()
    limits = {table: max(q.cfg.candidates, (min_candidates or {}).get(table, 0)) for table in q.tables}
    # The hand-written prototypes are few: with the prefilter their list is their exact cosines (the derived ones,
    # thousands, would fill the index's nearest rows and leave them none; prefilter.DERIVED_TABLE).
    exact = limits.pop(DERIVED_TABLE, None) if prefilter else None
    # The whole chunk's vector only: `dense_texts` is one text (the chunk, or E's intent); every table in one go.
    found = [queries.vector_searches(conn, limits, vector, q.cfg.ef_search) for vector in vectors[:1]]
    if exact is not None:
        found[0][DERIVED_TABLE] = hand_written_nearest(q, vectors[0], exact)
    for table in q.tables:
        recs = q.resources.records(table)
        hits = 0
        for ti, per_table in enumerate(found):
            ranked = per_table[table]
            kept = drop_absent(facts if prefilter else None, table, ranked, recs)
            if prefilter and table == "api_mapping":
                q.note(prefiltered=len(ranked) - len(kept))
            out = []
            for rank, rid, cos in kept:
                c = Candidate.of_record(table, rid, recs[rid], float(cos), rank, "embedding")
                c.add_stage("embedding", later(EmbeddingInfo, cosine=round(cos, SCORE_DIGITS), rank=rank))
                out.append(c)
            found_lists.put_ranked(table, ti, "embedding", ranked, out)
            if ti == 0:
                q.record_found(table, "embedding", ranked)
            hits = len(ranked)
        q.note(**{table: hits})
    return Found(found_lists)


def hand_written_nearest(q: QueryState[RecallResources], vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
    """The hand-written label_prototypes nearest the vector, by exact cosine, at most `limit`."""
    ids = load_index(q, DERIVED_TABLE, tokenizer_of(q.cfg)).ids_without_prefix(DERIVED_PREFIX)
    cos = queries.cosines(q.resources.conn(), DERIVED_TABLE, vector, ids)
    return sorted(cos.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


EMBED_QUERY = Stage("embed_query", run_embed_query, "encode the chunk with all-MiniLM-L6-v2 (mean of 256-piece windows)")
EMBEDDING = Stage("embedding", run_embedding, "pgvector HNSW cosine search, N candidates per table")
