"""Strategy A, today's baseline: `plainto_tsquery('simple', chunk)` -> `search_tsv @@ q` -> `ts_rank_cd`,
and, when nothing matches, why (rows per token, the largest token set any one row holds)."""
from __future__ import annotations

from typing import NamedTuple

from ...store import queries
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState
from ..engine.trace import SCORE_DIGITS, TsqueryInfo
from ..engine.types import Candidate
from .resources import RecallResources


class TsqueryFound(NamedTuple):
    """What A's query found: per table its rows, and the query's tokens (the diagnosis reads them)."""
    tokens: list[str]
    row_counts: dict[str, int]


class Searched(NamedTuple):
    pool: Pool
    tsquery: TsqueryFound


def run_tsquery(q: QueryState[RecallResources]) -> Searched:
    conn = q.resources.conn()
    q.trace.tables = {}
    out: Pool = {}
    tokens: list[str] = []
    for table in q.tables:
        recs = q.resources.records(table)
        found = queries.tsquery_search(conn, table, q.chunk, q.cfg.k)
        q.trace.tsquery, q.trace.tsquery_tokens = found["tsquery"], found["tokens"]
        tokens = found["tokens"]
        q.trace.tables[table] = {"row_count": found["row_count"]}
        q.note(**{table: {"row_count": found["row_count"]}}, tsquery=found["tsquery"], tokens=found["tokens"])
        cands = []
        for rank, (rid, score) in enumerate(found["rows"], 1):
            c = Candidate(table=table, id=rid, payload=recs[rid], score=score, rank=rank, source="tsquery")
            c.add_stage("tsquery", TsqueryInfo(ts_rank_cd=round(score, SCORE_DIGITS), rank=rank, tsquery=found["tsquery"]))
            cands.append(c)
        q.record_ids(table, "tsquery", cands)
        out[table] = [cands]
    return Searched(out, TsqueryFound(tokens, {t: info["row_count"] for t, info in q.trace.tables.items()}))


def run_diagnose(q: QueryState[RecallResources], tsquery: TsqueryFound) -> None:
    conn = q.resources.conn()
    for table, rows in tsquery.row_counts.items():
        if rows == 0:
            diag = queries.tsquery_diagnosis(conn, table, tsquery.tokens)
            (q.trace.tables or {})[table]["zero_hit_diagnosis"] = diag
            q.note(**{table: diag})


TSQUERY = Stage("tsquery", run_tsquery, "plainto_tsquery('simple', chunk) against search_tsv, ranked by ts_rank_cd")
DIAGNOSE = Stage("diagnose", run_diagnose, "on zero rows: rows per token and the largest token set one row holds")
