"""The data commands: ingest, load, embed, status."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..cli_options import IngestArgs, with_db, with_ingest
from .base import DEFAULT_JSONL, fail, main, make_db


@main.command()
@click.option("--pages", required=True, type=click.Path(path_type=Path), help="Directory of converted Markdown pages.")
@click.option("--renames", type=click.Path(path_type=Path), default=None, help="renames_3_to_4.jsonl from the converter.")
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_JSONL, show_default=True)
@click.option("--chunk-chars", default=1800, show_default=True, help="Target chunk size in characters.")
@with_ingest
def ingest(pages: Path, renames: Path | None, out: Path, chunk_chars: int, flags: IngestArgs) -> None:
    """Markdown pages -> docs_chunks, api_mapping, label_prototypes and ingest_report JSONL."""
    from ..ingest.pipeline import IngestError, run_ingest
    from ..ingest.state import inputs_unchanged, save_state

    try:
        if not flags.force and inputs_unchanged(pages, renames, out, chunk_chars, flags.options):
            click.echo(json.dumps({"ingest": "unchanged", "out": str(out)}))
            return
        result = run_ingest(pages, renames, out, target_chars=chunk_chars, quiet=flags.quiet,
                            reference_findings=flags.reference_findings)
        save_state(pages, renames, out, chunk_chars, flags.options)
    except (IngestError, ValueError) as e:
        fail(str(e))
    click.echo(json.dumps({"ingest": "done", "out": str(out), **result.counts, "pages_error": result.errors,
                           "pages_warning": result.warnings, "seconds": round(result.seconds, 2)}))


@main.command()
@click.option("--jsonl", type=click.Path(path_type=Path), default=DEFAULT_JSONL, show_default=True)
@click.option("--no-prune", is_flag=True, help="Keep rows whose id is no longer in the files.")
@click.option("--prune-all", is_flag=True, help="Allow a load that deletes more than half of a table.")
@click.option("--force", is_flag=True, help="Load even when the files did not change since the last load.")
@click.option("--quiet", is_flag=True)
@with_db
def load(jsonl: Path, no_prune: bool, prune_all: bool, force: bool, quiet: bool, dsn: str | None,
         data_dir: Path | None) -> None:
    """Load the JSONL files into PostgreSQL (one transaction, upsert by id)."""
    from ..records import RecordError
    from ..store.db import StoreError
    from ..store.load import load_jsonl

    db = make_db(dsn, data_dir)
    try:
        stats = load_jsonl(db, jsonl, prune=not no_prune, force=force, quiet=quiet, prune_all=prune_all)
    except (RecordError, StoreError) as e:
        fail(str(e))
    click.echo(json.dumps({"load": "unchanged" if stats.skipped else "done", "tables": stats.tables}))


@main.command()
@click.option("--model", default="all-MiniLM-L6-v2", show_default=True, help="Model name or local directory.")
@click.option("--pooling", type=click.Choice(["window-mean", "truncate"]), default="window-mean", show_default=True)
@click.option("--precision", type=click.Choice(["int8", "fp32"]), default="int8", show_default=True)
@click.option("--engine", type=click.Choice(["onnx", "torch"]), default="onnx", show_default=True,
              help="What runs the encoder (for the rows and the queries): a change re-embeds every row.")
@click.option("--batch-rows", default=128, show_default=True)
@click.option("--only", default="", help="Only rows whose id starts with this prefix (e.g. getting_started/).")
@click.option("--workers", default=os.cpu_count() or 1, show_default=True, help="Encoding processes (one per core).")
@click.option("--quiet", is_flag=True)
@with_db
def embed(model: str, pooling: str, precision: str, engine: str, batch_rows: int, only: str, workers: int, quiet: bool,
          dsn: str | None, data_dir: Path | None) -> None:
    """Fill the embedding column; only changed rows; resumable after Ctrl-C."""
    from ..models.embedder import Embedder
    from ..store.db import StoreError
    from ..store.embed import embed_rows

    try:
        db = make_db(dsn, data_dir)
        stats = embed_rows(db, Embedder(model, pooling=pooling, precision=precision, engine=engine, cache_dir=db.cache_dir),
                           batch_rows=batch_rows, quiet=quiet, only=only, workers=workers)
    except StoreError as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted; finished batches are kept, run `godot-rag embed` again to resume", 130)
    click.echo(json.dumps({"embed": "done", "embedded": stats.embedded, "hnsw_created": stats.indexed}
                          | ({"moved_inline": stats.moved_inline} if stats.moved_inline else {})))


@main.command()
@with_db
def status(dsn: str | None, data_dir: Path | None) -> None:
    """What is loaded: rows per table, embeddings, indexes, embedding model."""
    from ..store import queries
    from ..store.db import StoreError
    from ..store.schema import ensure_schema, get_meta

    db = make_db(dsn, data_dir)
    try:
        with db.connect(autocommit=True) as conn:
            ensure_schema(conn, db.describe())
            out = {"database": db.describe(), "tables": queries.counts(conn),
                   "embedding": get_meta(conn, "embedding"), "loaded_from": get_meta(conn, "loaded_from"),
                   "schema_version": get_meta(conn, "schema_version")}
            out["database_bytes"] = (conn.execute("SELECT pg_database_size(current_database())").fetchone() or (None,))[0]
    except StoreError as e:
        fail(str(e))
    click.echo(json.dumps(out, indent=2))

