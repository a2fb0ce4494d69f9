"""Fill the embedding columns: only rows whose text or embedder changed, committed per batch."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from tqdm import tqdm

from ..records import SCHEMA
from .db import Database, stop_pool
from .schema import ensure_embedding_dim, ensure_hnsw, ensure_inline_embedding, ensure_schema, set_meta

if TYPE_CHECKING:
    from multiprocessing.pool import Pool


@dataclass
class EmbedStats:
    embedded: dict[str, int] = field(default_factory=dict)
    indexed: list[str] = field(default_factory=list)
    moved_inline: dict[str, int] = field(default_factory=dict)  # vectors a database made before had in TOAST


PENDING = "(embedding IS NULL OR embedding_hash IS DISTINCT FROM %s || ':' || text_hash) AND {key} LIKE %s"


def pending_count(conn, table: str, key_hash: str, only: str = "") -> int:
    cond = PENDING.format(key=SCHEMA[table]["key"])
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {cond}", (key_hash, only + "%")).fetchone()[0]


def embed_rows(db: Database, embedder, *, batch_rows: int = 128, quiet: bool = False, only: str = "",
               workers: int = 1) -> EmbedStats:
    """Resumable: each batch is its own transaction, so Ctrl-C loses at most the batches in flight.
    `only` limits the work to ids starting with that prefix (e.g. a part of the docs). Rows are
    encoded shortest first (less padding per batch), on `workers` processes (one per core)."""
    stats = EmbedStats()
    with db.connect(autocommit=True) as conn:
        ensure_schema(conn, db.describe())
        pending = {t: pending_count(conn, t, embedder.key_hash, only) for t in SCHEMA}
        if sum(pending.values()):
            dim = embedder.dim  # loads the model only when there is work
            ensure_embedding_dim(conn, dim)
            set_meta(conn, "embedding", embedder.meta | {"dim": dim})
        for table in SCHEMA:
            if moved := ensure_inline_embedding(conn, table):
                stats.moved_inline[table] = moved
        bar = tqdm(total=sum(pending.values()), desc="embed rows", disable=quiet, unit="row")
        pool = _pool(embedder, workers) if workers > 1 and sum(pending.values()) > batch_rows else None
        fill = TableFill(conn, embedder, batch_rows, only, bar, pool)
        try:
            for table, count in pending.items():
                stats.embedded[table] = _embed_table(fill, table) if count else 0
        finally:
            if pool is not None:
                stop_pool(pool)  # also on Ctrl-C, and with a worker killed mid-batch: no worker outlives the command
        bar.close()
        for table in SCHEMA:
            if ensure_hnsw(conn, table):
                stats.indexed.append(table)
    return stats


def _pool(embedder, workers: int):
    import multiprocessing

    from ..models.embedder import init_worker

    ctx = multiprocessing.get_context("spawn")
    embedder.load()  # the ONNX graph built once here, before the workers read it
    return ctx.Pool(workers, initializer=init_worker,
                    initargs=(embedder.model_name, embedder.pooling, embedder.overlap, embedder.precision, embedder.engine,
                              str(embedder.cache_dir)))


@dataclass(frozen=True)
class TableFill:
    """How `embed_rows` fills a table's pending rows: on this connection, with this embedder (in this process, or on
    `pool`'s workers), `batch_rows` rows a transaction, only ids starting with `only`, each row counted on `bar`."""
    conn: psycopg.Connection
    embedder: Any  # models.embedder.Embedder
    batch_rows: int
    only: str
    bar: tqdm
    pool: Pool | None


def _embed_table(fill: TableFill, table: str) -> int:
    conn, embedder, batch_rows, bar = fill.conn, fill.embedder, fill.batch_rows, fill.bar
    key = SCHEMA[table]["key"]
    rows = conn.execute(f"SELECT {key}, search_text, text_hash FROM {table} WHERE {PENDING.format(key=key)} ORDER BY {key}",
                        (embedder.key_hash, fill.only + "%")).fetchall()
    rows.sort(key=lambda r: len(r[1]))  # similar lengths share a batch: less padding
    batches = [rows[i:i + batch_rows] for i in range(0, len(rows), batch_rows)]
    results: Iterable[tuple[int, Any]]
    if fill.pool is None:
        results = ((n, embedder.encode([r[1] for r in b])) for n, b in enumerate(batches))
    else:
        from ..models.embedder import encode_in_worker

        results = fill.pool.imap_unordered(encode_in_worker, [(n, [r[1] for r in b]) for n, b in enumerate(batches)])
    done = 0
    for n, vecs in results:
        batch = batches[n]
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                f"UPDATE {table} SET embedding = %s, embedding_hash = %s WHERE {key} = %s",
                [(v, f"{embedder.key_hash}:{r[2]}", r[0]) for r, v in zip(batch, vecs)],
            )
        done += len(batch)
        bar.update(len(batch))
    return done
