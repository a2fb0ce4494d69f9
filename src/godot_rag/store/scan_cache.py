"""The scan's result cache and the few database reads the scan needs.

One SQLite file maps a key (chunk sha256, database digest, strategy and settings) to the compact
result of one chunk. Every result is committed as soon as it arrives, in its own transaction, so a
scan stopped with Ctrl-C keeps what it did and the next run resumes from there.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import zlib
from pathlib import Path

import psycopg

from ..records import SCHEMA
from .queries import one, table_digest
from .schema import columns, get_meta

CACHE_FILE = "scan-cache.sqlite3"
TABLES = ("results", "file_symbols")  # chunk results; each script's declarations by its sha256 (the symbol table)


class ScanCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        for table in TABLES:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL, "
                               "created REAL DEFAULT (julianday('now')))")
        self._conn.commit()

    def get_many(self, keys: list[str], table: str = "results") -> dict[str, dict]:
        assert table in TABLES
        out: dict[str, dict] = {}
        keys = list(dict.fromkeys(keys))
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            rows = self._conn.execute(f"SELECT key, value FROM {table} WHERE key IN ({','.join('?' * len(part))})",
                                      part).fetchall()
            for key, blob in rows:
                try:
                    out[key] = json.loads(zlib.decompress(blob))
                except (zlib.error, json.JSONDecodeError):
                    continue  # a damaged entry is recomputed
        return out

    def put(self, key: str, value: dict, table: str = "results") -> None:
        assert table in TABLES
        blob = zlib.compress(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)
        with self._conn:  # one transaction per result: a Ctrl-C never leaves half an entry
            self._conn.execute(f"INSERT OR REPLACE INTO {table} (key, value) VALUES (?, ?)", (key, blob))

    def count(self) -> int:
        return self._conn.execute("SELECT count(*) FROM results").fetchone()[0]

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()


def database_digest(conn: psycopg.Connection) -> str:
    """Changes whenever a record, the class reference or the embeddings change."""
    h = hashlib.sha256()
    for table in SCHEMA:
        h.update(table_digest(conn, table).encode())
        n = one(conn.execute(f"SELECT count(embedding) FROM {table}"))[0]
        h.update(f"|{table}:{n}".encode())
    for key in ("loaded_digest", "embedding", "schema_version"):
        h.update(json.dumps(get_meta(conn, key), sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def fetch_payloads(conn: psycopg.Connection, table: str, ids: list[str]) -> dict[str, dict]:
    """The records (every field) for some ids of one table."""
    if not ids:
        return {}
    cols = columns(table)
    key = SCHEMA[table]["key"]
    rows = conn.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE {key} = ANY(%s)", (list(set(ids)),)).fetchall()
    return {row[cols.index(key)]: dict(zip(cols, row)) for row in rows}


def docs_links(conn: psycopg.Connection, ids: list[str]) -> dict[str, dict]:
    """chunk id -> its page URL and heading, for the report's links."""
    if not ids:
        return {}
    rows = conn.execute("SELECT chunk_id, source_url, heading FROM docs_chunks WHERE chunk_id = ANY(%s)",
                        (list(set(ids)),)).fetchall()
    return {cid: {"url": url, "heading": heading} for cid, url, heading in rows}
