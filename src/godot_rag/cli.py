"""Thin click CLI over the library: every command maps to one library call."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_JSONL = Path("work/godot_rag/jsonl")

db_options = [
    click.option("--dsn", envvar="GODOT_RAG_DSN", default=None,
                 help="PostgreSQL DSN of your own server (env GODOT_RAG_DSN). Default: the embedded server."),
    click.option("--data-dir", envvar="GODOT_RAG_DATA", default=None, type=click.Path(path_type=Path),
                 help="Data directory of the embedded server (env GODOT_RAG_DATA; default: the user data directory, "
                      "e.g. ~/.local/share/godot-rag/pgdata; `status` prints it)."),
]


def with_db(f):
    for opt in reversed(db_options):
        f = opt(f)
    return f


def make_db(dsn, data_dir):
    from .store.db import Database

    return Database(dsn=dsn, data_dir=data_dir)


def fail(message: str, code: int = 1):
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@click.group()
@click.version_option(package_name="godot-rag")
def main():
    """Evidence retrieval for raw GDScript chunks over the Godot 4 docs."""


@main.command()
@click.option("--pages", required=True, type=click.Path(path_type=Path), help="Directory of converted Markdown pages.")
@click.option("--renames", type=click.Path(path_type=Path), default=None, help="renames_3_to_4.jsonl from the converter.")
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_JSONL, show_default=True)
@click.option("--chunk-chars", default=1800, show_default=True, help="Target chunk size in characters.")
@click.option("--force", is_flag=True, help="Rebuild even when the inputs did not change.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def ingest(pages, renames, out, chunk_chars, force, quiet):
    """Markdown pages -> docs_chunks, api_mapping, label_prototypes and ingest_report JSONL."""
    from .ingest.pipeline import IngestError, run_ingest
    from .ingest.state import inputs_unchanged, save_state

    try:
        if not force and inputs_unchanged(pages, renames, out, chunk_chars):
            click.echo(json.dumps({"ingest": "unchanged", "out": str(out)}))
            return
        result = run_ingest(pages, renames, out, target_chars=chunk_chars, quiet=quiet)
        save_state(pages, renames, out, chunk_chars)
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
def load(jsonl, no_prune, prune_all, force, quiet, dsn, data_dir):
    """Load the JSONL files into PostgreSQL (one transaction, upsert by id)."""
    from .ingest.schema import RecordError
    from .store.db import StoreError
    from .store.load import load_jsonl

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
@click.option("--batch-rows", default=128, show_default=True)
@click.option("--only", default="", help="Only rows whose id starts with this prefix (e.g. getting_started/).")
@click.option("--quiet", is_flag=True)
@with_db
def embed(model, pooling, precision, batch_rows, only, quiet, dsn, data_dir):
    """Fill the embedding column; only changed rows; resumable after Ctrl-C."""
    from .models.embedder import Embedder
    from .store.db import StoreError
    from .store.embed import embed_rows

    try:
        stats = embed_rows(make_db(dsn, data_dir), Embedder(model, pooling=pooling, precision=precision), batch_rows=batch_rows, quiet=quiet, only=only)
    except StoreError as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted; finished batches are kept, run `godot-rag embed` again to resume", 130)
    click.echo(json.dumps({"embed": "done", "embedded": stats.embedded, "hnsw_created": stats.indexed}))


@main.command()
@with_db
def status(dsn, data_dir):
    """What is loaded: rows per table, embeddings, indexes, embedding model."""
    from .store import queries
    from .store.db import StoreError
    from .store.schema import ensure_schema, get_meta

    db = make_db(dsn, data_dir)
    try:
        with db.connect(autocommit=True) as conn:
            ensure_schema(conn, db.describe())
            out = {"database": db.describe(), "tables": queries.counts(conn),
                   "embedding": get_meta(conn, "embedding"), "loaded_from": get_meta(conn, "loaded_from"),
                   "schema_version": get_meta(conn, "schema_version")}
            out["database_bytes"] = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    except StoreError as e:
        fail(str(e))
    click.echo(json.dumps(out, indent=2))


def retrieve_options(f):
    opts = [
        click.option("--strategy", "-s", default="F", show_default=True, help="A-F (see `godot-rag strategies`)."),
        click.option("--k", default=None, type=int, help="Results per table (default 10)."),
        click.option("--tables", default=None, help="Comma-separated tables (default all three)."),
        click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path), default=None,
                     help="TOML file with [retrieve] settings."),
        click.option("--set", "settings", multiple=True, help="Override one setting: --set fusion=minmax."),
        click.option("--reranker", default=None, help="none, nanoranker, qwen or cross-encoder."),
        click.option("--cross-encoder", "cross_encoder", default=None, help="Local CrossEncoder directory."),
        click.option("--godot-version", "godot_version", type=click.Choice(["auto", "3", "4"]), default=None,
                     help="Hint for the ambiguous migration cases (default auto)."),
        click.option("--extends", "extends", default=None,
                     help="The script's class when the chunk has no `extends` line (resolves bare calls)."),
    ] + llm_options
    for opt in reversed(opts):
        f = opt(f)
    return with_db(f)


llm_options = [
    click.option("--llm-gguf", default=None, help="GGUF file for the in-process Qwen (default: the bundled 1.5B)."),
    click.option("--llm-bundled", type=click.Choice(["1.5b", "0.5b"]), default=None, help="Use a bundled Qwen."),
    click.option("--llm-url", default=None, help="OpenAI-compatible chat endpoint base URL (llama.cpp server, vLLM, Ollama)."),
    click.option("--llm-model", default=None, help="Model name to send to --llm-url."),
    click.option("--llm-timeout", default=60.0, show_default=True),
    click.option("--llm-retries", default=2, show_default=True),
    click.option("--llm-optional", is_flag=True, help="If the LLM is down, fall back to the deterministic validator."),
    click.option("--validator-llm", is_flag=True, help="Add the Qwen judge to F's validator."),
]


def _parse_value(raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def build_config(k, tables, config_file, settings, reranker, llm_optional=False, validator_llm=False,
                 godot_version=None, extends=None):
    from .retrieve.config import RetrieveConfig

    overrides = {}
    for item in settings:
        if "=" not in item:
            raise click.BadParameter(f"--set expects name=value, got {item!r}")
        name, raw = item.split("=", 1)
        overrides[name.strip()] = _parse_value(raw)
    if k is not None:
        overrides["k"] = k
    if tables:
        overrides["tables"] = [t.strip() for t in tables.split(",") if t.strip()]
    if reranker:
        overrides["reranker"] = reranker
    if llm_optional:
        overrides["llm_optional"] = True
    if validator_llm:
        overrides["validator_llm"] = True
    if godot_version:
        overrides["godot_version"] = godot_version
    if extends:
        overrides["extends"] = extends
    if config_file:
        return RetrieveConfig.from_file(config_file, **overrides)
    return RetrieveConfig.from_mapping(overrides)


def make_llm(llm_gguf, llm_bundled, llm_url, llm_model, llm_timeout, llm_retries, needed: bool):
    if not (llm_gguf or llm_bundled or llm_url or needed):
        return None
    from .models.llm import make_llm as _make

    return _make(gguf=llm_gguf, bundled=llm_bundled, url=llm_url, model=llm_model, timeout=llm_timeout, retries=llm_retries)


@main.command()
@click.argument("source", type=click.File("r"), required=False)
@click.option("--batch", type=click.Path(exists=True, path_type=Path), default=None,
              help="JSONL file of chunks ({\"chunkText\"|\"chunk_text\": ...} per line): one JSON result per line.")
@click.option("--workers", default=2, show_default=True, help="Parallel workers for --batch.")
@click.option("--explain", is_flag=True, help="Show every matched term and stage score.")
@click.option("--json", "as_json", is_flag=True, help="Print the result JSON.")
@click.option("--quiet", is_flag=True)
@retrieve_options
def retrieve(source, batch, workers, explain, as_json, quiet, strategy, k, tables, config_file, settings, reranker,
             cross_encoder, godot_version, extends, llm_gguf, llm_bundled, llm_url, llm_model, llm_timeout, llm_retries, llm_optional,
             validator_llm, dsn, data_dir):
    """Retrieve evidence for a raw GDScript chunk (FILE, or - for stdin)."""
    from .render import render_table
    from .retrieve.config import ConfigError
    from .retrieve.pipeline import ChunkError, Retriever
    from .store.db import StoreError

    try:
        cfg = build_config(k, tables, config_file, settings, reranker, llm_optional, validator_llm, godot_version, extends)
        from .retrieve.config import check_strategy

        strategy = check_strategy(strategy)
        llm = make_llm(llm_gguf, llm_bundled, llm_url, llm_model, llm_timeout, llm_retries,
                       needed=strategy == "E" or cfg.validator_llm or cfg.reranker == "qwen")
        retriever = Retriever(make_db(dsn, data_dir), llm=llm, cross_encoder_path=cross_encoder)
        if batch:
            from .batch import run_batch

            spec = ({"gguf": llm_gguf, "bundled": llm_bundled, "url": llm_url, "model": llm_model, "timeout": llm_timeout,
                     "retries": llm_retries} if llm is not None else None)
            run_batch(retriever, batch, strategy, cfg, workers=workers, quiet=quiet, llm_spec=spec)
            return
        if source is None:
            raise click.UsageError("give a FILE, - for stdin, or --batch FILE.jsonl")
        try:
            text = source.read()
        except UnicodeDecodeError as e:
            fail(f"{source.name}: not a UTF-8 text file (byte {e.start}); pass the raw GDScript chunk")
        result = retriever.retrieve(text, strategy, cfg, explain=True)
    except (ConfigError, ChunkError, StoreError) as e:
        fail(str(e))
    except ValueError as e:  # a malformed --batch line names its file, line and field
        fail(str(e))
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        click.echo(render_table(result, explain=explain))


@main.command()
def strategies():
    """List the strategies."""
    from .retrieve.config import STRATEGIES

    for name, desc in STRATEGIES.items():
        click.echo(f"{name}  {desc}")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
@click.option("--no-warm", is_flag=True, help="Do not load the indexes and the embedder at start.")
@click.option("--cross-encoder", "cross_encoder", default=None)
@with_db
def serve(host, port, no_warm, cross_encoder, dsn, data_dir, **llm_kwargs):
    """Serve POST /api/retrieve, GET /api/strategies, the OpenAPI docs and the debugger page at /."""
    import uvicorn

    from .api.app import create_app
    from .retrieve.pipeline import Retriever

    llm = make_llm(**{k: llm_kwargs.get(k) for k in ("llm_gguf", "llm_bundled", "llm_url", "llm_model")},
                   llm_timeout=llm_kwargs.get("llm_timeout", 60.0), llm_retries=llm_kwargs.get("llm_retries", 2), needed=False)
    retriever = Retriever(make_db(dsn, data_dir), llm=llm, cross_encoder_path=cross_encoder)
    app = create_app(retriever, warm=not no_warm, llm_optional=llm_kwargs.get("llm_optional", False))
    import signal

    def _exit(signum, frame):
        raise SystemExit(128 + signum)

    # uvicorn shuts down cleanly on SIGINT/SIGTERM, then re-raises the signal to the handler that was
    # there before it: this one, so the `finally` below runs instead of the process dying on the spot.
    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGINT, _exit)
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        retriever.db.stop()  # the embedded PostgreSQL this process started goes with it


for _opt in reversed(llm_options):
    serve = _opt(serve)


@main.command(name="eval")
@click.argument("more_queries", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--queries", "query_files", required=True, multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Query files (JSON Lines, ../shared/eval format). Repeat, or list several after one flag.")
@click.option("--strategies", "strategy_list", default="A,B,C,D,F", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write metrics, report, TREC runs, failures, plots.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--limit", type=int, default=None, help="First N queries of each file.")
@click.option("--quiet", is_flag=True)
@click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path), default=None)
@click.option("--set", "settings", multiple=True)
@click.option("--reranker", default=None)
@with_db
def eval_cmd(more_queries, query_files, strategy_list, out, as_json, limit, quiet, config_file, settings, reranker, dsn, data_dir,
             **llm_kwargs):
    """Compare strategies on the same queries: recall@k, MRR, nDCG@10, mapping P/R, latency."""
    from .eval.queries import QueryFileError
    from .eval.runner import run_eval
    from .retrieve.config import ConfigError, check_strategy
    from .retrieve.pipeline import Retriever
    from .store.db import StoreError

    try:
        names = [check_strategy(s) for s in strategy_list.split(",") if s.strip()]
        cfg = build_config(None, None, config_file, settings, reranker, llm_kwargs.get("llm_optional"),
                           llm_kwargs.get("validator_llm"))
        llm = make_llm(**{k: llm_kwargs.get(k) for k in ("llm_gguf", "llm_bundled", "llm_url", "llm_model")},
                       llm_timeout=llm_kwargs.get("llm_timeout", 60.0), llm_retries=llm_kwargs.get("llm_retries", 2),
                       needed="E" in names or cfg.validator_llm or cfg.reranker == "qwen")
        retriever = Retriever(make_db(dsn, data_dir), llm=llm)
        report = run_eval(retriever, list(query_files) + list(more_queries), names, cfg, out_dir=out, limit=limit, quiet=quiet)
    except (QueryFileError, ConfigError, StoreError) as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps({"runs": report["runs"]}))
    else:
        click.echo(report["markdown"])


for _opt in reversed(llm_options):
    eval_cmd = _opt(eval_cmd)



# -- scan: a whole project (godot_rag.scan) -----------------------------------------------------------
@main.command()
@click.argument("project_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Output directory (default scan-out/<project folder name>/).")
@click.option("--strategy", "-s", default="F", show_default=True, help="A-D or F (no LLM).")
@click.option("--godot-version", "godot_version", type=click.Choice(["auto", "3", "4"]), default=None,
              help="Override the version read from each project.godot (config_version 4: Godot 3, 5: Godot 4).")
@click.option("--workers", default=0, type=click.IntRange(0, 64), help="Worker processes (default: one per core).")
@click.option("--format", "formats", default="jsonl,sarif,html,md", show_default=True,
              help="Comma-separated outputs: jsonl (chunks.jsonl, findings.jsonl), sarif, html, md.")
@click.option("--changed-since", "changed_since", default=None, metavar="GIT_REF",
              help="Only the .gd files changed since this git ref (and untracked ones).")
@click.option("--include-addons", is_flag=True, help="Also scan addons/ (skipped by default).")
@click.option("--fail-on", "fail_on", type=click.Choice(["none", "info", "warning", "error"]), default="none",
              show_default=True, help="Exit 1 when a finding has this severity or higher.")
@click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path), default=None,
              help="TOML file with [retrieve] settings.")
@click.option("--set", "settings", multiple=True, help="Override one retrieval setting: --set k=5.")
@click.option("--max-chunk-chars", default=4000, show_default=True, help="Longer functions are cut at statement boundaries.")
@click.option("--cache", "cache_file", type=click.Path(path_type=Path), default=None,
              help="Result cache file (default: beside the database, cache/scan-cache.sqlite3).")
@click.option("--refresh", is_flag=True, help="Ignore cached results (they are rewritten).")
@click.option("--no-extends-hint", "no_extends_hint", is_flag=True,
              help="Do not pass the file's `extends` with the chunks that have none.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@with_db
def scan(project_dir, out, strategy, godot_version, workers, formats, changed_since, include_addons, fail_on,
         config_file, settings, max_chunk_chars, cache_file, refresh, no_extends_hint, as_json, quiet, dsn, data_dir):
    """Scan a Godot project (or a folder of projects): every .gd file, chunked, through the retriever;
    writes chunks.jsonl, findings.jsonl, findings.sarif, report.html and report.md.
    Exit 0: no finding at --fail-on or above; 1: there is one; 2: usage or database error."""
    import signal

    from .retrieve.config import ConfigError
    from .scan.run import ScanError, ScanInterrupted, ScanOptions, run_scan
    from .scan.summary import summary_text

    def _terminated(signum, frame):  # SIGTERM unwinds like Ctrl-C: the pool and the database are stopped
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminated)
    try:
        cfg = build_config(None, None, config_file, settings, None)
        overrides = {k: v for k, v in cfg.to_dict().items() if k != "godot_version"}
        opts = ScanOptions(root=project_dir, out=out, strategy=strategy, godot_version=godot_version, workers=workers,
                           formats=tuple(f.strip() for f in formats.split(",") if f.strip()), changed_since=changed_since,
                           include_addons=include_addons, fail_on=fail_on, quiet=quiet, settings=overrides,
                           cache=cache_file, refresh=refresh, max_chunk_chars=max_chunk_chars,
                           extends_hint=not no_extends_hint)
        result = run_scan(opts, dsn=dsn, data_dir=data_dir)
    except (ConfigError, click.BadParameter, ScanError) as e:
        fail(str(e).splitlines()[0] if str(e) else "scan failed", 2)
    except ScanInterrupted as e:
        fail(str(e), 130)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    click.echo(json.dumps(result.summary, indent=2) if as_json else summary_text(result.summary))
    sys.exit(1 if result.failed else 0)


def _serve_allow_path(command) -> None:
    """`serve --allow-path DIR`: POST /api/scan may read server-side folders under DIR (repeatable;
    env GODOT_RAG_SCAN_ALLOW_PATH). Added to `serve` here so the scan feature stays in one block."""
    import functools

    command.params.append(click.Option(
        ["--allow-path", "allow_paths"], multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
        help="Let POST /api/scan read project folders under DIR on this machine (repeatable)."))
    inner = command.callback

    @functools.wraps(inner)
    def callback(*args, allow_paths=(), **kwargs):
        if allow_paths:
            os.environ["GODOT_RAG_SCAN_ALLOW_PATH"] = os.pathsep.join(str(p.resolve()) for p in allow_paths)
        return inner(*args, **kwargs)

    command.callback = callback


_serve_allow_path(serve)


if __name__ == "__main__":  # pragma: no cover
    main()
