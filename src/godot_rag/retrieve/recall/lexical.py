"""The BM25 stage (one list per table and query text) and its per-term explanation for the
candidates that are shown (computed after the cut: explaining all N would cost more than scoring)."""
from __future__ import annotations

from functools import partial

from ...gdscript.tokenize import TokenizerConfig, tokenizer_of
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState
from ..engine.trace import RATIO_DIGITS, Bm25Info, ExplainInfo, later
from ..engine.types import Candidate
from ..query.segment import TOKENS
from . import bm25 as bm25_mod
from .prefilter import drop_absent


def load_index(ctx: QueryState, table: str, tok: TokenizerConfig) -> bm25_mod.BM25Index:
    """The table's BM25 index; reading the cache (or building it) is its own `load:bm25` step, not query time."""
    ctx.load_step("bm25", ctx.resources.bm25.loaded(table, tok),
                  partial(ctx.resources.bm25.index, table, tok, ctx.cfg), table=table, tokenizer=tok.key())
    return ctx.resources.bm25.index(table, tok, ctx.cfg)


def run_bm25(ctx: QueryState, pool: Pool, min_candidates: dict[str, int] | None = None,
             prefilter: bool = False) -> Pool:
    """`prefilter`: api_mapping rows that cannot occur in the chunk get no candidate (prefilter.py)."""
    tok = tokenizer_of(ctx.cfg)
    for table in ctx.tables:
        n = max(ctx.cfg.candidates, (min_candidates or {}).get(table, 0))
        index = load_index(ctx, table, tok)
        recs = ctx.resources.records(table)
        # Segments only pay off for the docs; the other tables are matched on the whole chunk.
        texts = range(len(ctx.texts)) if table == "docs_chunks" else range(1)
        all_scores = bm25_mod.score_many(index, [ctx[TOKENS][ti] for ti in texts], ctx.term_weights)
        hits = []
        for ti in texts:
            scores = all_scores[:, ti]
            top = bm25_mod.top_k(scores, n)
            ranked = [(index.ids[i], float(scores[i])) for i in top]
            kept = drop_absent(ctx, table, ranked, recs, prefilter)
            out = []
            for rank, rid, score in kept:
                c = Candidate.of_record(table, rid, recs[rid], score, rank, "bm25")
                c.add_stage("bm25", later(Bm25Info, score=round(score, RATIO_DIGITS), rank=rank, text=ti))
                out.append(c)
            ctx.put_ranked(table, ti, "bm25", ranked, out)
            hits.append(len(ranked))
        ctx.note(**{table: {"hits": hits, "n": n, "n_docs": index.n_docs}})
    return pool


def run_explain(ctx: QueryState, pool: Pool) -> Pool:
    """df, tf, idf, tfn and contribution of each matched term, for every shown candidate BM25 found."""
    if not ctx.explain or not ctx[TOKENS][0]:
        ctx.note(skipped="explain is off" if not ctx.explain else "no BM25 query")
        return pool
    tok = tokenizer_of(ctx.cfg)
    shown = [c for lists in pool.values() for lst in lists for c in lst] + ctx.rejected + ctx.cut
    slices = {}
    explained = 0
    for c in shown:
        if c.info("bm25") is None or c.info("explain") is not None:
            continue
        index = ctx.resources.bm25.index(c.table, tok, ctx.cfg)
        if c.table not in slices:
            slices[c.table] = bm25_mod.query_slice(index, ctx[TOKENS][0])
        row = index.position[c.id]
        c.add_stage("explain", ExplainInfo(**bm25_mod.explain(index, ctx[TOKENS][0], row, slices[c.table],
                                                              ctx.term_weights)))
        explained += 1
    ctx.note(explained=explained)
    return pool


BM25 = Stage("bm25", run_bm25, "BM25 (Lucene formula) over the code-aware tokens, N candidates per table and text",
             requires=(TOKENS,), provides=("lists.bm25",))
EXPLAIN = Stage("explain", run_explain, "per matched term of the shown candidates: df, tf, idf, tfn, contribution",
                requires=(TOKENS, "cut"))
