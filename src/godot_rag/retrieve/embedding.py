"""The embedding stages: encode the query text (MiniLM, window-mean), then one pgvector HNSW
cosine list per table."""
from __future__ import annotations

from ..store import queries
from .context import Pool, QueryContext
from .stage import Stage
from .trace import SCORE_DIGITS, EmbeddingInfo
from .types import Candidate


def run_embed_query(ctx: QueryContext, pool: Pool) -> Pool:
    embedder = ctx.ensure_loaded("embedder", ctx.retriever.embedder, model=ctx.retriever.embedder.key)
    ctx.vectors = embedder.encode(ctx.dense_texts)
    ctx.note(model=embedder.key, texts=len(ctx.dense_texts), windows=[embedder.window_count(t) for t in ctx.dense_texts])
    return pool


def run_embedding(ctx: QueryContext, pool: Pool, min_candidates: dict[str, int] | None = None) -> Pool:
    """Segments get BM25 lists only: a second embedding pass per segment costs more than it adds."""
    conn = ctx.retriever.conn()
    for table in ctx.tables:
        n = max(ctx.cfg.candidates, (min_candidates or {}).get(table, 0))
        recs = ctx.retriever.records(table)
        # The whole chunk's vector only: `dense_texts` is one text (the chunk, or E's intent).
        for ti, vector in enumerate(ctx.vectors[:1]):
            out = []
            for rank, (rid, cos) in enumerate(queries.vector_search(conn, table, vector, n,
                                                                    ctx.cfg.ef_search), 1):
                c = Candidate.of_record(table, rid, recs[rid], float(cos), rank, "embedding")
                c.add_stage("embedding", EmbeddingInfo(cosine=round(cos, SCORE_DIGITS), rank=rank))
                out.append(c)
            ctx.lists.put(table, ti, "embedding", out)
            if ti == 0:
                ctx.record_ids(table, "embedding", out)
        ctx.note(**{table: len(ctx.lists.of(table)[0].get("embedding", []))})
    return pool


EMBED_QUERY = Stage("embed_query", run_embed_query, "encode the chunk with all-MiniLM-L6-v2 (mean of 256-piece windows)",
                    provides=("vectors",))
EMBEDDING = Stage("embedding", run_embedding, "pgvector HNSW cosine search, N candidates per table",
                  requires=("vectors",), provides=("lists.embedding",))
