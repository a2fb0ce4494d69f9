"""`scan`: a whole project (godot_rag.scan)."""
from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..cli_options import with_db, with_output, with_settings
from .base import by_sigterm, fail, main

if TYPE_CHECKING:
    from ..cli_options import OutputArgs, RetrieveArgs

@main.command()
@click.argument("project_dir", type=click.Path(path_type=Path))
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
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
@with_settings
@click.option("--max-chunk-chars", default=4000, show_default=True, help="Longer functions are cut at statement boundaries.")
@click.option("--max-file-bytes", default=2 * 2**20, show_default=True, type=click.IntRange(1),
              help="A larger .gd file is listed as skipped, not scanned.")
@click.option("--cache", "cache_file", type=click.Path(path_type=Path), default=None,
              help="Result cache file (default: beside the database, cache/scan-cache.sqlite3).")
@click.option("--refresh", is_flag=True, help="Ignore cached results (they are rewritten).")
@click.option("--no-extends-hint", "no_extends_hint", is_flag=True,
              help="Do not pass the file's `extends` with the chunks that have none.")
@click.option("--no-project-symbols", "no_project_symbols", is_flag=True,
              help="Do not pass the project's symbol table with the chunks (each chunk is then judged alone).")
@click.option("--baseline", type=click.Path(path_type=Path), default=None, metavar="SARIF",
              help="An earlier scan's findings.sarif: report only the findings it does not hold (the summary counts "
                   "the others).")
@with_output
@with_db
def scan(project_dir: Path, files: tuple[Path, ...], out: Path | None, strategy: str, godot_version: str | None,
         workers: int, formats: str, changed_since: str | None, include_addons: bool, fail_on: str, rargs: RetrieveArgs,
         max_chunk_chars: int, max_file_bytes: int, cache_file: Path | None, refresh: bool, no_extends_hint: bool,
         no_project_symbols: bool, baseline: Path | None, output: OutputArgs, dsn: str | None,
         data_dir: Path | None) -> None:
    """Scan a Godot project (or a folder of projects): every .gd file, chunked, through the retriever;
    writes chunks.jsonl, findings.jsonl, findings.sarif, report.html and report.md. FILES, when given,
    limit the scan to those scripts of the project (what a pre-commit hook passes).
    Exit 0: no finding at --fail-on or above; 1: there is one; 2: usage or database error."""
    from ..retrieve.engine.config import ConfigError
    from ..scan.run import ScanError, ScanInterrupted, ScanOptions, run_scan
    from ..scan.summary import summary_text

    try:  # SIGTERM unwinds like Ctrl-C (`main`): the pool and the database are stopped
        cfg = rargs.config()
        overrides = {k: v for k, v in cfg.to_dict().items() if k != "godot_version"}
        opts = ScanOptions(root=project_dir, out=out, strategy=strategy, godot_version=godot_version, workers=workers,
                           formats=tuple(f.strip() for f in formats.split(",") if f.strip()), changed_since=changed_since,
                           files=tuple(files),
                           include_addons=include_addons, fail_on=fail_on, quiet=output.quiet, settings=overrides,
                           cache=cache_file, refresh=refresh, max_chunk_chars=max_chunk_chars,
                           max_file_bytes=max_file_bytes,
                           extends_hint=not no_extends_hint, project_symbols=not no_project_symbols,
                           baseline=baseline, dsn=dsn, data_dir=data_dir)
        result = run_scan(opts)
    except (ConfigError, click.BadParameter, ScanError) as e:
        fail(str(e).splitlines()[0] if str(e) else "scan failed", 2)
    except ScanInterrupted as e:
        fail(str(e), 130)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except SystemExit as e:
        if by_sigterm(e):
            fail("interrupted; finished chunks are cached, run the same command again to resume", 128 + signal.SIGTERM)
        raise
    click.echo(json.dumps(result.summary, indent=2) if output.as_json else summary_text(result.summary))
    sys.exit(1 if result.failed else 0)
