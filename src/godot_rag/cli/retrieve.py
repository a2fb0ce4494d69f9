"""`retrieve`: evidence for one chunk, or a batch of them."""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from ..cli_options import with_db, with_llm, with_output, with_retrieve
from ..formats import FORMATS
from .base import by_sigterm, fail, main, make_db, open_llm

if TYPE_CHECKING:
    from ..batch import BatchOptions
    from ..cli_options import LlmArgs, OutputArgs, RetrieveArgs
    from ..gdscript.project import RequestContext

@main.command()
@click.argument("source", type=click.File("r"), required=False)
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path), default=None,
              help="JSONL file of chunks ({\"chunkText\"|\"chunk_text\": ...} per line), or - for stdin, read as it "
                   "comes: the output lines of each input line, in input order.")
@click.option("--workers", default=2, show_default=True, help="Parallel workers for --batch.")
@click.option("--strict", is_flag=True, help="With --batch: run nothing when a line is bad, and list every bad line.")
@click.option("--strategy", "-s", default="F", show_default=True, help="A-F (see `godot-rag strategies`).")
@click.option("--explain", is_flag=True, help="Show the stage list, every stage's summary, matched terms and stage scores.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="Output: records (a JSON line per accepted record; --batch's default), result (--json's default: "
                   "rejected records by id), full (everything) or prompt (the accepted evidence as text for a "
                   "model's prompt; see --prompt-budget).")
@click.option("--prompt-budget", type=click.IntRange(1, 100_000), default=None,
              help="With --format prompt: the evidence's size in (estimated) tokens [default: 600].")
@click.option("--project", "project_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="The Godot project the chunk comes from: its symbol table (built, or read from the scan cache) "
                   "and Godot version are the request's context.")
@click.option("--file", "file_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The .gd file the chunk comes from (with --project: its path there; its `extends` is used).")
@with_output
@with_retrieve
@with_llm
@with_db
def retrieve(source: TextIO | None, batch: Path | None, workers: int, strict: bool, strategy: str, explain: bool,
             fmt: str | None, prompt_budget: int | None, project_dir: Path | None, file_path: Path | None,
             output: OutputArgs, rargs: RetrieveArgs, llm: LlmArgs, dsn: str | None, data_dir: Path | None) -> None:
    """Retrieve evidence for a raw GDScript chunk (FILE, or - for stdin)."""
    from ..gdscript.chunk_text import ChunkTextError
    from ..retrieve.engine.config import ConfigError
    from ..retrieve.pipeline import ModelFiles, Retriever
    from ..retrieve.strategies import check_strategy, llm_user
    from ..store.db import StoreError

    try:
        cfg = rargs.config(llm)
        strategy = check_strategy(strategy)
        user = llm_user([strategy], cfg)
        model = open_llm(llm, user is not None and not cfg.llm_optional, user or f"strategy {strategy}")
        retriever = Retriever(make_db(dsn, data_dir), llm=model, files=ModelFiles(rargs.cross_encoder, llm.judge_calibration))
        context = cli_context(project_dir, file_path, retriever.cache_dir) if project_dir or file_path else None
        if batch:
            from ..batch import BatchOptions

            _batch(retriever, batch, strategy, cfg, BatchOptions(
                workers=workers, quiet=output.quiet, llm_spec=llm.spec() if model is not None else None,
                cross_encoder=rargs.cross_encoder, strict=strict, fmt=fmt or "records", prompt_budget=prompt_budget,
                context=context))
            return
        if source is None:
            raise click.UsageError("give a FILE, - for stdin, or --batch FILE.jsonl")
        result = retriever.retrieve(_read(source), strategy, cfg, explain=True, context=context)
    except (ConfigError, ChunkTextError, StoreError) as e:
        fail(str(e))
    except ValueError as e:  # --strict: every bad --batch line, with its file and line
        fail(str(e))
    _show(result, source.name, fmt if fmt or not output.as_json else "result", prompt_budget, explain)


def _batch(retriever: Any, batch: Path, strategy: str, cfg: Any, options: BatchOptions) -> None:
    """`--batch`: its lines go to stdout as they are done; the summary to stderr."""
    from ..batch import run_batch

    stopped = "interrupted; the output holds every input line finished before it, whole and in input order"
    try:
        summary = run_batch(retriever, batch, strategy, cfg, options)
    except KeyboardInterrupt:
        fail(stopped, 130)
    except SystemExit as e:  # SIGTERM: said as Ctrl-C is, with its own code
        if by_sigterm(e):
            fail(stopped, 128 + signal.SIGTERM)
        raise
    if summary["bad_lines"] and not summary["chunks"]:
        fail(f"no good line in the batch ({summary['bad_lines']} bad line(s); each has its error line)")


def _read(source: TextIO) -> str:
    try:
        return source.read()
    except UnicodeDecodeError as e:
        fail(f"{source.name}: not a UTF-8 text file (byte {e.start}); pass the raw GDScript chunk")


def _show(result: Any, name: str, fmt: str | None, prompt_budget: int | None, explain: bool) -> None:
    """The result on stdout: in `fmt` (formats.py), or as the table when there is none."""
    from ..formats import json_lines, result_json
    from ..render import render_table

    if fmt == "prompt":  # plain text, to paste into a prompt
        from ..formats import prompt_object

        click.echo(prompt_object(result, name, prompt_budget)["prompt"])
    elif fmt == "records":
        sys.stdout.write(json_lines(result, fmt, chunk=name))
    elif fmt:
        click.echo(result_json(result, fmt, indent=2))
    else:
        click.echo(render_table(result, explain=explain))


def cli_context(project_dir: Path | None, file_path: Path | None, cache_dir: Path) -> RequestContext:
    """`--project DIR` / `--file PATH` as the request's context."""
    from ..gdscript.facts import parse_script
    from ..scan.symbols import file_context, load_project_symbols
    from ..store.scan_cache import CACHE_FILE, ScanCache
    from ..store.scan_files import read_script

    if project_dir is None:
        assert file_path is not None  # the caller passes --project, --file or both
        text, err = read_script(file_path)
        if err is not None or text is None:
            fail(f"{file_path}: {err}")
        facts = parse_script(text)
        return file_context(None, file_path.name, extends=facts.extends or facts.extends_path)
    if not (project_dir / "project.godot").is_file():
        fail(f"{project_dir}: no project.godot there (give the folder of the Godot project)")
    rel = None
    if file_path is not None:
        try:
            rel = file_path.resolve().relative_to(project_dir.resolve()).as_posix()
        except ValueError:
            fail(f"{file_path}: not inside the project {project_dir}")
    cache = ScanCache(cache_dir / CACHE_FILE)
    try:
        table = load_project_symbols(project_dir, cache)
    finally:
        cache.close()
    return file_context(table, rel)

