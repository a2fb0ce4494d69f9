"""Load the JSONL files into PostgreSQL: validated first, then one transaction, upsert by id."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from tqdm import tqdm

from ..jsonlines import iter_jsonl
from ..records import SCHEMA, RecordError, search_text, validate_record
from .db import Database, StoreError
from .schema import columns, ensure_schema, get_meta, set_meta


@dataclass
class LoadStats:
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: bool = False


def read_jsonl(path: Path, table: str) -> list[dict[str, Any]]:
    if not path.exists():
        raise StoreError(f"{path}: file not found (run `godot-rag ingest` first)")
    records: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    key = SCHEMA[table]["key"]
    for n, raw in iter_jsonl(path, lambda n, msg: RecordError(str(path), n, None, msg)):
        rec = validate_record(table, raw, str(path), n)
        if rec[key] in seen:
            raise RecordError(str(path), n, key, f"duplicate id {rec[key]!r} (first on line {seen[rec[key]]})")
        seen[rec[key]] = n
        records.append(rec)
    return records


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


CLASS_REFERENCE_FILE = "class_reference.json"  # written by ingest beside the JSONL files


def files_digest(jsonl_dir: Path) -> str:
    h = hashlib.sha256()
    for table in SCHEMA:
        h.update((jsonl_dir / SCHEMA[table]["file"]).read_bytes())
    ref = jsonl_dir / CLASS_REFERENCE_FILE
    if ref.exists():
        h.update(ref.read_bytes())
    return h.hexdigest()


def read_class_reference(jsonl_dir: Path) -> dict[str, Any] | None:
    path = jsonl_dir / CLASS_REFERENCE_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise StoreError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("classes"), dict):
        raise StoreError(f"{path}:1: field 'classes': expected an object of class entries")
    return data


def _row(table: str, rec: dict[str, Any]) -> list[Any]:
    row: list[Any] = []
    for name, kind in SCHEMA[table]["fields"]:
        value = rec[name]
        row.append(Jsonb(value) if kind == "jsonb" else value)
    text = search_text(table, rec)
    row += [text, hashlib.sha256(text.encode()).hexdigest(), _digest(rec)]
    return row


@dataclass(frozen=True)
class PruneRule:
    """Whether rows the files no longer hold are deleted, and whether more than half a table may go."""
    prune: bool
    prune_all: bool


def _upsert(conn: psycopg.Connection[Any], table: str, records: list[dict[str, Any]]) -> int:
    """The table's records copied into a temporary `incoming` table, then upserted where they changed."""
    cols = [*columns(table), "search_text", "text_hash", "record_hash"]
    key = SCHEMA[table]["key"]
    conn.execute(f"CREATE TEMP TABLE incoming (LIKE {table} INCLUDING DEFAULTS) ON COMMIT DROP")
    with conn.cursor().copy(f"COPY incoming ({', '.join(cols)}) FROM STDIN") as copy:
        for rec in records:
            copy.write_row(_row(table, rec))
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in cols if c != key)
    cur = conn.execute(
        f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(cols)} FROM incoming "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates} "
        f"WHERE {table}.record_hash IS DISTINCT FROM EXCLUDED.record_hash"
    )
    return cur.rowcount


def _prune(conn: psycopg.Connection[Any], table: str, source: Path, prune_all: bool) -> int:
    """Deletes the rows `incoming` lacks; refuses to delete more than half the table unless `prune_all`."""
    key = SCHEMA[table]["key"]
    gone = f"FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM incoming i WHERE i.{key} = t.{key})"
    n_gone = _count(conn, f"SELECT count(*) {gone}")
    n_rows = _count(conn, f"SELECT count(*) FROM {table}")
    if n_gone and n_gone * 2 > n_rows and not prune_all:
        # A truncated or wrong file must not wipe the store: the transaction is rolled back.
        sample = [r[0] for r in conn.execute(f"SELECT t.{key} {gone} ORDER BY t.{key} LIMIT 3").fetchall()]
        raise StoreError(f"{source}: loading it would delete {n_gone} of "
                         f"{n_rows} {table} rows (e.g. {', '.join(sample)}); nothing was changed. "
                         "Pass --prune-all if that is what you want, or --no-prune to keep them.")
    cur = conn.execute(f"DELETE {gone}")
    return cur.rowcount


def _count(conn: psycopg.Connection[Any], query: str) -> int:
    row = conn.execute(query).fetchone()
    assert row is not None  # a count(*) always has its row
    return int(row[0])


def _load_table(conn: psycopg.Connection[Any], table: str, records: list[dict[str, Any]], jsonl_dir: Path,
                rule: PruneRule) -> dict[str, int]:
    changed = _upsert(conn, table, records)
    deleted = _prune(conn, table, jsonl_dir / SCHEMA[table]["file"], rule.prune_all) if rule.prune else 0
    conn.execute("DROP TABLE incoming")
    return {"rows": len(records), "inserted_or_updated": changed, "deleted": deleted}


def load_jsonl(db: Database, jsonl_dir: Path, *, prune: bool = True, force: bool = False, quiet: bool = False,
               prune_all: bool = False) -> LoadStats:
    jsonl_dir = Path(jsonl_dir)
    # Validate every file before touching the database: a bad line changes nothing.
    data = {table: read_jsonl(jsonl_dir / SCHEMA[table]["file"], table) for table in SCHEMA}
    class_reference = read_class_reference(jsonl_dir)
    digest = files_digest(jsonl_dir)
    stats = LoadStats()
    with db.transaction() as conn:
        # Two loads at once on one database take turns (the second waits), instead of deadlocking.
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('godot_rag.load'))")
        ensure_schema(conn, db.describe())
        if not force and get_meta(conn, "loaded_digest") == digest:
            stats.skipped = True
            for table in SCHEMA:
                stats.tables[table] = {"rows": len(data[table]), "inserted_or_updated": 0, "deleted": 0}
            return stats
        for table in tqdm(SCHEMA, desc="load tables", disable=quiet, unit="table"):
            stats.tables[table] = _load_table(conn, table, data[table], jsonl_dir, PruneRule(prune, prune_all))
        if class_reference is not None:
            set_meta(conn, "class_reference", class_reference)
        set_meta(conn, "loaded_digest", digest)
        set_meta(conn, "loaded_from", str(jsonl_dir.resolve()))
    return stats
