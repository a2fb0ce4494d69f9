"""The BM25 stage (one list per table and query text) and its per-term explanation for the
candidates that are shown (computed after the cut: explaining all N would cost more than scoring)."""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from ...gdscript.api_check import REFERENCE_PROTOTYPE_PREFIX as DERIVED_PREFIX
from ...gdscript.facts import GDScriptFacts
from ...gdscript.tokenize import TokenizerConfig, tokenizer_of
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState
from ..engine.trace import RATIO_DIGITS, Bm25Info, ExplainInfo, later
from ..engine.types import Candidate
from ..query.segment import QueryTerms
from . import bm25 as bm25_mod
from .prefilter import DERIVED_TABLE, drop_absent
from .ranked_lists import RankedLists
from .resources import RecallResources


class Found(NamedTuple):
    lists: RankedLists  # each retriever's ranked lists, per table and query text


def load_index(q: QueryState[RecallResources], table: str, tok: TokenizerConfig) -> bm25_mod.BM25Index:
    """The table's BM25 index; reading the cache (or building it) is its own `load:bm25` step, not query time."""
    q.load_step("bm25", q.resources.bm25.loaded(table, tok),
                partial(q.resources.bm25.index, table, tok, q.cfg), table=table, tokenizer=tok.key())
    return q.resources.bm25.index(table, tok, q.cfg)


def run_bm25(q: QueryState[RecallResources], terms: QueryTerms, lists: RankedLists | None = None,
             facts: GDScriptFacts | None = None, *, min_candidates: dict[str, int] | None = None,
             prefilter: bool = False) -> Found:
    """`prefilter`: api_mapping rows that cannot occur in the chunk (its `facts`) get no candidate (prefilter.py)."""
    tok = tokenizer_of(q.cfg)
    found = lists if lists is not None else RankedLists()
    for table in q.tables:
        n = max(q.cfg.candidates, (min_candidates or {}).get(table, 0))
        index = load_index(q, table, tok)
        recs = q.resources.records(table)
        # Segments only pay off for the docs; the other tables are matched on the whole chunk.
        text_ids = range(len(terms.tokens)) if table == "docs_chunks" else range(1)
        all_scores = bm25_mod.score_many(index, [terms.tokens[ti] for ti in text_ids], terms.weights)
        hits, dropped = [], 0
        for ti in text_ids:
            scores = all_scores[:, ti]
            if prefilter and table == DERIVED_TABLE:  # derived prototypes take no place in F's list
                scores = np.where(index.rows_with_prefix(DERIVED_PREFIX), 0.0, scores)
            top = bm25_mod.top_k(scores, n)
            ranked = [(index.ids[i], float(scores[i])) for i in top]
            kept = drop_absent(facts if prefilter else None, table, ranked, recs)
            dropped += len(ranked) - len(kept)
            out = []
            for rank, rid, score in kept:
                c = Candidate.of_record(table, rid, recs[rid], score, rank, "bm25")
                c.add_stage("bm25", later(Bm25Info, score=round(score, RATIO_DIGITS), rank=rank, text=ti))
                out.append(c)
            found.put_ranked(table, ti, "bm25", ranked, out)
            if ti == 0:
                q.record_found(table, "bm25", ranked)
            hits.append(len(ranked))
        if prefilter and table == "api_mapping":
            q.note(prefiltered=dropped)
        q.note(**{table: {"hits": hits, "n": n, "n_docs": index.n_docs}})
    return Found(found)


BM25 = Stage("bm25", run_bm25, "BM25 (Lucene formula) over the code-aware tokens, N candidates per table and text")


def run_explain(q: QueryState[RecallResources], terms: QueryTerms, results: Pool, cut: list[Candidate],
                rejected: list[Candidate]) -> None:
    """df, tf, idf, tfn and contribution of each matched term, for every shown candidate BM25 found."""
    tokens = terms.tokens
    if not q.explain or not tokens[0]:
        q.note(skipped="explain is off" if not q.explain else "no BM25 query")
        return
    tok = tokenizer_of(q.cfg)
    shown = [c for lists in results.values() for lst in lists for c in lst] + rejected + cut
    slices = {}
    explained = 0
    for c in shown:
        if c.info("bm25") is None or c.info("explain") is not None:
            continue
        index = q.resources.bm25.index(c.table, tok, q.cfg)
        if c.table not in slices:
            slices[c.table] = bm25_mod.query_slice(index, tokens[0])
        row = index.position[c.id]
        c.add_stage("explain", ExplainInfo(**bm25_mod.explain(index, tokens[0], row, slices[c.table], terms.weights)))
        explained += 1
    q.note(explained=explained)


EXPLAIN = Stage("explain", run_explain, "per matched term of the shown candidates: df, tf, idf, tfn, contribution")
