"""Strategy A, today's baseline: `plainto_tsquery('simple', chunk)` -> `search_tsv @@ q` -> `ts_rank_cd`,
and, when nothing matches, why (rows per token, the largest token set any one row holds)."""
from __future__ import annotations

from ...store import queries
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState
from ..engine.trace import SCORE_DIGITS, TsqueryInfo
from ..engine.types import Candidate


def run_tsquery(ctx: QueryState, pool: Pool) -> Pool:
    conn = ctx.resources.conn()
    ctx.trace.tables = {}
    out: Pool = {}
    for table in ctx.tables:
        recs = ctx.resources.records(table)
        found = queries.tsquery_search(conn, table, ctx.chunk, ctx.cfg.k)
        ctx.trace.tsquery, ctx.trace.tsquery_tokens = found["tsquery"], found["tokens"]
        ctx.trace.tables[table] = {"row_count": found["row_count"]}
        ctx.note(**{table: {"row_count": found["row_count"]}}, tsquery=found["tsquery"], tokens=found["tokens"])
        cands = []
        for rank, (rid, score) in enumerate(found["rows"], 1):
            c = Candidate(table=table, id=rid, payload=recs[rid], score=score, rank=rank, source="tsquery")
            c.add_stage("tsquery", TsqueryInfo(ts_rank_cd=round(score, SCORE_DIGITS), rank=rank, tsquery=found["tsquery"]))
            cands.append(c)
        ctx.record_ids(table, "tsquery", cands)
        out[table] = [cands]
    return out


def run_diagnose(ctx: QueryState, pool: Pool) -> Pool:
    conn = ctx.resources.conn()
    for table, info in (ctx.trace.tables or {}).items():
        if info["row_count"] == 0:
            diag = queries.tsquery_diagnosis(conn, table, ctx.trace.tsquery_tokens or [])
            info["zero_hit_diagnosis"] = diag
            ctx.note(**{table: diag})
    return pool


TSQUERY = Stage("tsquery", run_tsquery, "plainto_tsquery('simple', chunk) against search_tsv, ranked by ts_rank_cd",
                provides=("pool", "tsquery"))
DIAGNOSE = Stage("diagnose", run_diagnose, "on zero rows: rows per token and the largest token set one row holds",
                 requires=("tsquery",))
