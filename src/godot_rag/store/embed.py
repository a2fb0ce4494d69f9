"""Fill the embedding columns: only rows whose text or embedder changed, committed per batch."""
from __future__ import annotations

from dataclasses import dataclass, field

from tqdm import tqdm

from ..records import SCHEMA
from .db import Database
from .schema import ensure_embedding_dim, ensure_hnsw, ensure_schema, set_meta


@dataclass
class EmbedStats:
    embedded: dict[str, int] = field(default_factory=dict)
    indexed: list[str] = field(default_factory=list)


PENDING = "(embedding IS NULL OR embedding_hash IS DISTINCT FROM %s || ':' || text_hash) AND {key} LIKE %s"


def pending_count(conn, table: str, key_hash: str, only: str = "") -> int:
    cond = PENDING.format(key=SCHEMA[table]["key"])
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {cond}", (key_hash, only + "%")).fetchone()[0]


def embed_rows(db: Database, embedder, *, batch_rows: int = 128, quiet: bool = False, only: str = "") -> EmbedStats:
    """Resumable: each batch is its own transaction, so Ctrl-C loses at most one batch.
    `only` limits the work to ids starting with that prefix (e.g. a part of the docs)."""
    stats = EmbedStats()
    with db.connect(autocommit=True) as conn:
        ensure_schema(conn, db.describe())
        pending = {t: pending_count(conn, t, embedder.key_hash, only) for t in SCHEMA}
        if sum(pending.values()):
            dim = embedder.dim  # loads the model only when there is work
            ensure_embedding_dim(conn, dim)
            set_meta(conn, "embedding", {"model": embedder.model_name, "pooling": embedder.pooling, "precision": embedder.precision,
                                         "key": embedder.key, "key_hash": embedder.key_hash, "dim": dim})
        bar = tqdm(total=sum(pending.values()), desc="embed rows", disable=quiet, unit="row")
        for table, count in pending.items():
            key = SCHEMA[table]["key"]
            done = 0
            while done < count:
                rows = conn.execute(
                    f"SELECT {key}, search_text, text_hash FROM {table} WHERE {PENDING.format(key=key)} "
                    f"ORDER BY {key} LIMIT %s",
                    (embedder.key_hash, only + "%", batch_rows),
                ).fetchall()
                if not rows:
                    break
                vecs = embedder.encode([r[1] for r in rows])
                with conn.transaction():
                    with conn.cursor() as cur:
                        cur.executemany(
                            f"UPDATE {table} SET embedding = %s, embedding_hash = %s WHERE {key} = %s",
                            [(v, f"{embedder.key_hash}:{r[2]}", r[0]) for r, v in zip(rows, vecs)],
                        )
                done += len(rows)
                bar.update(len(rows))
            stats.embedded[table] = done
        bar.close()
        for table in SCHEMA:
            if ensure_hnsw(conn, table):
                stats.indexed.append(table)
    return stats
