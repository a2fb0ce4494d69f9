"""Reads for retrieval: the records, PostgreSQL full-text search (strategy A) and pgvector search."""
from __future__ import annotations

import re
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import psycopg

from ..records import SCHEMA
from .schema import columns


def one(cur: psycopg.Cursor) -> tuple:
    """The one row an aggregate query returns."""
    row = cur.fetchone()
    if row is None:
        raise psycopg.DataError("an aggregate query returned no row")
    return row


def fetch_records(conn: psycopg.Connection, table: str) -> list[tuple[str, dict, str, str, str]]:
    """(id, payload, search_text, text_hash, record_hash) for every row, ordered by id."""
    cols = columns(table)
    key = SCHEMA[table]["key"]
    rows = conn.execute(f"SELECT {', '.join(cols)}, search_text, text_hash, record_hash FROM {table} ORDER BY {key}").fetchall()
    out = []
    for row in rows:
        payload = dict(zip(cols, row[: len(cols)]))
        out.append((payload[key], payload, row[len(cols)], row[len(cols) + 1], row[len(cols) + 2]))
    return out


def table_digest(conn: psycopg.Connection, table: str) -> str:
    """The table's ids and search texts (what BM25 counts depend on)."""
    key = SCHEMA[table]["key"]
    row = one(conn.execute(f"SELECT md5(string_agg({key} || ':' || text_hash, ',' ORDER BY {key})), count(*) FROM {table}"))
    return f"{row[0]}:{row[1]}"


def records_digest(conn: psycopg.Connection, table: str) -> str:
    """The table's whole records: ids, record hashes (every field) and text hashes (the search text);
    `records_cache.rows_digest` computes the same from fetched rows."""
    key = SCHEMA[table]["key"]
    row = one(conn.execute(f"SELECT md5(string_agg({key} || ':' || record_hash || ':' || text_hash, ',' ORDER BY {key})), "
                           f"count(*) FROM {table}"))
    return f"{row[0]}:{row[1]}"


def tsquery_search(conn: psycopg.Connection, table: str, chunk: str, limit: int) -> dict:
    """Today's method, faithfully: plainto_tsquery('simple', chunk) -> @@ -> ts_rank_cd."""
    key = SCHEMA[table]["key"]
    tsq = one(conn.execute("SELECT plainto_tsquery('simple', %s)::text", (chunk,)))[0]
    rows = conn.execute(
        f"SELECT {key}, ts_rank_cd(search_tsv, q) AS rank FROM {table}, plainto_tsquery('simple', %s) q "
        f"WHERE search_tsv @@ q ORDER BY rank DESC, {key} LIMIT %s",
        (chunk, limit),
    ).fetchall()
    total = one(conn.execute(f"SELECT count(*) FROM {table}, plainto_tsquery('simple', %s) q WHERE search_tsv @@ q", (chunk,)))[0]
    return {"tsquery": tsq, "tokens": tsquery_tokens(tsq), "rows": [(r[0], float(r[1])) for r in rows], "row_count": total}


def tsquery_tokens(tsq: str) -> list[str]:
    return list(dict.fromkeys(re.findall(r"'((?:[^']|'')*)'", tsq)))


def tsquery_diagnosis(conn: psycopg.Connection, table: str, tokens: list[str]) -> dict:
    """Why an AND of every token found nothing: rows per token, and the best any one row can do."""
    from collections import Counter

    if not tokens:
        return {"token_rows": [], "best_row": None, "best_subset": [], "missing_from_best": []}
    key = SCHEMA[table]["key"]
    holders: dict[str, list[str]] = {}
    for tok in tokens:
        rows = conn.execute(
            f"SELECT {key} FROM {table} WHERE search_tsv @@ to_tsquery('simple', quote_literal(%s))", (tok,)
        ).fetchall()
        holders[tok] = [r[0] for r in rows]
    per_row = Counter(rid for ids in holders.values() for rid in ids)
    best_row = min(per_row, key=lambda rid: (-per_row[rid], rid)) if per_row else None
    best = [t for t in tokens if best_row is not None and best_row in set(holders[t])]
    return {
        "token_rows": [{"token": t, "rows": len(holders[t])} for t in tokens],
        "best_row": best_row,
        "best_subset": best,
        "missing_from_best": [t for t in tokens if t not in best],
    }


def vector_search(
    conn: psycopg.Connection, table: str, vector: np.ndarray, limit: int, ef_search: int = 100
) -> list[tuple[str, float]]:
    return vector_searches(conn, {table: limit}, vector, ef_search)[table]


# hnsw.ef_search set for a connection's session (an autocommit one, between transactions), by connection.
_SESSION_EF_SEARCH: weakref.WeakKeyDictionary[psycopg.Connection, int] = weakref.WeakKeyDictionary()


@contextmanager
def _ef_search(conn: psycopg.Connection, ef_search: int) -> Iterator[None]:
    """hnsw.ef_search for the statements inside. An idle autocommit connection (the retriever's) gets it for
    its session, once per value; a SET and a transaction around every search cost three round trips a query.
    Parallel plans are off there too, so a UNION ALL of ordered lists keeps each list's order. Any other
    connection gets it for one transaction."""
    ef = int(ef_search)
    if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        if _SESSION_EF_SEARCH.get(conn) != ef:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            conn.execute("SET max_parallel_workers_per_gather = 0")
            _SESSION_EF_SEARCH[conn] = ef
        yield
        return
    with conn.transaction():
        conn.execute(f"SET LOCAL hnsw.ef_search = {ef}")
        conn.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        yield


def vector_searches(conn: psycopg.Connection, limits: dict[str, int], vector: np.ndarray,
                    ef_search: int = 100) -> dict[str, list[tuple[str, float]]]:
    """`vector_search` over several tables (table -> limit) in one statement: one round trip, the vector
    sent once. Each table's rows come nearest first."""
    tables = list(limits)
    if not tables:
        return {}
    sql = " UNION ALL ".join(
        f"(SELECT {i} AS t, {SCHEMA[table]['key']} AS id, 1 - (embedding <=> %(v)s) AS cos FROM {table} "
        f"WHERE embedding IS NOT NULL ORDER BY embedding <=> %(v)s LIMIT {int(limits[table])})"
        for i, table in enumerate(tables))
    with _ef_search(conn, ef_search):
        rows = conn.execute(sql, {"v": vector}).fetchall()
    out: dict[str, list[tuple[str, float]]] = {table: [] for table in tables}
    for t, rid, cos in rows:
        out[tables[t]].append((rid, float(cos)))
    return out


def cosines(conn: psycopg.Connection, table: str, vector: np.ndarray, ids: list[str]) -> dict[str, float]:
    """The cosine of `vector` with each of these records' embeddings (those that have one)."""
    if not ids:
        return {}
    key = SCHEMA[table]["key"]
    rows = conn.execute(f"SELECT {key}, 1 - (embedding <=> %s) FROM {table} WHERE {key} = ANY(%s) AND embedding IS NOT NULL",
                        (vector, list(ids))).fetchall()
    return {r[0]: float(r[1]) for r in rows}


def counts(conn: psycopg.Connection) -> dict:
    out = {}
    for table in SCHEMA:
        row = one(conn.execute(f"SELECT count(*), count(embedding), pg_total_relation_size('{table}') FROM {table}"))
        idx = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY 1", (table,))]
        out[table] = {"rows": row[0], "embedded": row[1], "bytes": row[2], "indexes": idx}
    return out


def require_records(conn: psycopg.Connection, where: str) -> None:
    """Raise StoreError unless some table holds a record: the one check of an empty or unloaded database
    (`where`: the database, as the message names it)."""
    from .db import StoreError

    try:
        n = one(conn.execute("SELECT " + " + ".join(f"(SELECT count(*) FROM {t})" for t in SCHEMA)))[0]
    except psycopg.errors.UndefinedTable:
        raise StoreError(f"the database has no godot-rag tables: run `godot-rag ingest` and `load`; it is the {where}") from None
    if not n:
        raise StoreError(f"the database is empty: run `godot-rag ingest` and `load` (or `scripts/main.sh`); it is the {where}")
