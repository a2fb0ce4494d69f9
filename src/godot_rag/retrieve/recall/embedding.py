"""The embedding stages: encode the query text (MiniLM, window-mean), then one pgvector HNSW
cosine list per table."""
from __future__ import annotations

import numpy as np

from ...store import queries
from ..engine.stage import Stage
from ..engine.state import PartKey, Pool, QueryState
from ..engine.trace import SCORE_DIGITS, EmbeddingInfo, later
from ..engine.types import Candidate
from .prefilter import drop_absent

VECTORS = PartKey[np.ndarray]("vectors", "the encoded query texts")


def run_embed_query(ctx: QueryState, pool: Pool) -> Pool:
    embedder = ctx.ensure_loaded("embedder", ctx.resources.embedder, model=ctx.resources.embedder.key)
    encoded = [embedder.encode_query(t) for t in ctx.dense_texts]
    ctx[VECTORS] = np.stack([vector for vector, _ in encoded])
    ctx.note(model=embedder.key, texts=len(ctx.dense_texts), windows=[n for _, n in encoded])
    return pool


def run_embedding(ctx: QueryState, pool: Pool, min_candidates: dict[str, int] | None = None,
                  prefilter: bool = False) -> Pool:
    """Segments get BM25 lists only: a second embedding pass per segment costs more than it adds.
    `prefilter`: api_mapping rows that cannot occur in the chunk get no candidate (prefilter.py)."""
    conn = ctx.resources.conn()
    limits = {table: max(ctx.cfg.candidates, (min_candidates or {}).get(table, 0)) for table in ctx.tables}
    # The whole chunk's vector only: `dense_texts` is one text (the chunk, or E's intent); every table in one go.
    found = [queries.vector_searches(conn, limits, vector, ctx.cfg.ef_search) for vector in ctx[VECTORS][:1]]
    for table in ctx.tables:
        recs = ctx.resources.records(table)
        hits = 0
        for ti, per_table in enumerate(found):
            ranked = per_table[table]
            kept = drop_absent(ctx, table, ranked, recs, prefilter)
            out = []
            for rank, rid, cos in kept:
                c = Candidate.of_record(table, rid, recs[rid], float(cos), rank, "embedding")
                c.add_stage("embedding", later(EmbeddingInfo, cosine=round(cos, SCORE_DIGITS), rank=rank))
                out.append(c)
            ctx.put_ranked(table, ti, "embedding", ranked, out)
            hits = len(ranked)
        ctx.note(**{table: hits})
    return pool


EMBED_QUERY = Stage("embed_query", run_embed_query, "encode the chunk with all-MiniLM-L6-v2 (mean of 256-piece windows)",
                    provides=(VECTORS,))
EMBEDDING = Stage("embedding", run_embedding, "pgvector HNSW cosine search, N candidates per table",
                  requires=(VECTORS,), provides=("lists.embedding",))
