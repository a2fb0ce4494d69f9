"""Tables: one column per JSONL field, plus search_text/search_tsv, embedding and bookkeeping."""
from __future__ import annotations

import json

import psycopg

from ..records import SCHEMA
from .db import require_vector_extension

SCHEMA_VERSION = 1
SQL_TYPES = {"text": "text", "text[]": "text[]", "int": "integer", "float": "double precision", "jsonb": "jsonb"}
EXTRA_COLUMNS = ["search_text", "text_hash", "record_hash", "embedding_hash"]


def columns(table: str) -> list[str]:
    return [name for name, _ in SCHEMA[table]["fields"]]


def _table_sql(table: str, dim: int) -> str:
    spec = SCHEMA[table]
    cols = []
    for name, kind in spec["fields"]:
        null = "" if kind.endswith("?") else " NOT NULL"
        pk = " PRIMARY KEY" if name == spec["key"] else ""
        cols.append(f"{name} {SQL_TYPES[kind.rstrip('?')]}{null}{pk}")
    cols += [
        "search_text text NOT NULL",
        "search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED",
        "text_hash text NOT NULL",
        "record_hash text NOT NULL",
        f"embedding vector({dim})",
        "embedding_hash text",
    ]
    return f"CREATE TABLE IF NOT EXISTS {table} (\n  " + ",\n  ".join(cols) + "\n)"


def get_meta(conn: psycopg.Connection, key: str, default=None):
    try:
        row = conn.execute("SELECT value FROM godot_rag_meta WHERE key = %s", (key,)).fetchone()
    except psycopg.errors.UndefinedTable:
        conn.rollback()
        return default
    return default if row is None else row[0]


def set_meta(conn: psycopg.Connection, key: str, value) -> None:
    conn.execute(
        "INSERT INTO godot_rag_meta (key, value) VALUES (%s, %s::jsonb) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        (key, json.dumps(value)),
    )


def ensure_schema(conn: psycopg.Connection, where: str, dim: int = 384) -> None:
    require_vector_extension(conn, where)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.execute("CREATE TABLE IF NOT EXISTS godot_rag_meta (key text PRIMARY KEY, value jsonb NOT NULL)")
    version = get_meta(conn, "schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise RuntimeError(f"database schema version {version}, this godot-rag expects {SCHEMA_VERSION}")
    for table in SCHEMA:
        conn.execute(_table_sql(table, dim))
        conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_search_tsv_idx ON {table} USING gin (search_tsv)")
    set_meta(conn, "schema_version", SCHEMA_VERSION)


def embedding_column(conn: psycopg.Connection, table: str) -> tuple[int, str] | None:
    """(dimension, storage) of the table's embedding column, None without one."""
    return conn.execute("SELECT atttypmod, attstorage FROM pg_attribute WHERE attrelid = %s::regclass "
                        "AND attname = 'embedding' AND NOT attisdropped", (table,)).fetchone()


def ensure_inline_embedding(conn: psycopg.Connection, table: str) -> int:
    """Keep each embedding in its row (storage PLAIN): pgvector's EXTERNAL moves the vector to TOAST
    once a row passes 2 kB, as most api_mapping rows do, and a search of that small table (an exact
    scan) then fetched every vector from TOAST. Vectors stored before are rewritten once, same values;
    the cast makes a new value, as `SET embedding = embedding` would keep the TOAST pointer.
    Returns how many rows were rewritten."""
    column = embedding_column(conn, table)
    if column is None or column[1] == "p":
        return 0
    with conn.transaction():
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE PLAIN")
        return conn.execute(f"UPDATE {table} SET embedding = embedding::real[]::vector WHERE embedding IS NOT NULL").rowcount


def ensure_embedding_dim(conn: psycopg.Connection, dim: int) -> None:
    """A model of another dimension replaces the embedding columns (and their indexes)."""
    for table in SCHEMA:
        column = embedding_column(conn, table)
        if column and column[0] != dim:
            conn.execute(f"DROP INDEX IF EXISTS {table}_embedding_hnsw_idx")
            conn.execute(f"ALTER TABLE {table} DROP COLUMN embedding")
            conn.execute(f"ALTER TABLE {table} ADD COLUMN embedding vector({dim})")
            conn.execute(f"UPDATE {table} SET embedding_hash = NULL")


def ensure_hnsw(conn: psycopg.Connection, table: str) -> bool:
    """Create the HNSW index once the column is filled; True when it was created now."""
    exists = conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", (f"{table}_embedding_hnsw_idx",)).fetchone()
    if exists:
        return False
    conn.execute(
        f"CREATE INDEX {table}_embedding_hnsw_idx ON {table} USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 16, ef_construction = 64)"
    )
    return True
