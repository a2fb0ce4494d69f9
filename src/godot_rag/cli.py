"""Thin click CLI over the library: every command maps to one library call."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

import click

from .cli_options import with_db, with_llm, with_output, with_retrieve, with_settings
from .formats import FORMATS

DEFAULT_JSONL = Path("work/godot_rag/jsonl")


def make_db(dsn, data_dir):
    from .store.db import Database

    return Database(dsn=dsn, data_dir=data_dir)


def fail(message: str, code: int = 1) -> NoReturn:
    # One line: drivers (psycopg) add hint lines of their own. No password: a driver's message may quote the DSN.
    from .errors import mask_secrets

    text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    click.echo("error: " + mask_secrets(text), err=True)
    sys.exit(code)


class Commands(click.Group):
    """No Python traceback reaches the user: an unexpected error is one line naming what failed."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # The reader went away (`... | head`): stop quietly, as a pipeline's other tools do. Python's own
            # flush at exit would fail again on the closed pipe, so stdout now goes nowhere.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a tool the closed pipe stopped
        except Exception as e:  # noqa: BLE001 - the last line of defence
            if _ENDING:
                _end_quietly()
            if os.environ.get("GODOT_RAG_DEBUG"):
                raise
            fail(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no message'} "
                 "(GODOT_RAG_DEBUG=1 shows the traceback)")


@click.group(cls=Commands)
@click.version_option(package_name="godot-rag")
def main():
    """Evidence retrieval for raw GDScript chunks over the Godot 4 docs."""
    # Models come from installed packages: never reach for the network at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # SIGTERM (`kill`, `timeout`, a job runner) unwinds like Ctrl-C, in every command: `finally` blocks and atexit
    # run, so the embedded server this process started and its worker pools are stopped. (`serve` and `mcp`
    # give SIGINT the same handler.)
    _ENDING.clear()
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _interrupted)
    sys.unraisablehook = _unraisable


# The signals that are ending this process, as they arrived. A signal's exception raised inside a C library's
# callback (numba compiling for ranx, a ctypes callback) cannot leave it: Python reports it as "unraisable" and
# the library then fails with an error of its own. That error is the signal's doing, not a fault to report.
_ENDING: list[int] = []


def _terminated(signum, frame) -> None:
    if _ENDING:  # already ending: a second signal (`timeout` sends SIGTERM to the process and to its group) must
        return   # not break the cleanup under way (a pool half stopped would hang the exit)
    _ENDING.append(signum)
    raise SystemExit(128 + signum)


def _interrupted(signum, frame) -> None:
    """Ctrl-C, as Python's own handler does it (KeyboardInterrupt), remembered; once, as SIGTERM."""
    if _ENDING:
        return
    _ENDING.append(signum)
    raise KeyboardInterrupt


def by_sigterm(e: SystemExit) -> bool:
    """Whether this exit is SIGTERM's (`_terminated`): a batch or scan then says `interrupted`, as for Ctrl-C."""
    return bool(_ENDING) and _ENDING[0] == signal.SIGTERM and e.code == 128 + signal.SIGTERM


def _unraisable(unraisable) -> None:
    if isinstance(unraisable.exc_value, (SystemExit, KeyboardInterrupt)) and _ENDING:
        return  # the process is ending by that signal: no traceback for the callback it landed in
    sys.__unraisablehook__(unraisable)


def _end_quietly() -> NoReturn:
    """The exit a signal asked for, when the error that surfaced is one the signal caused."""
    signum = _ENDING[0]
    if signum == signal.SIGINT:
        fail("interrupted", 130)
    sys.exit(128 + signum)


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
    from .records import RecordError
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
@click.option("--engine", type=click.Choice(["onnx", "torch"]), default="onnx", show_default=True,
              help="What runs the encoder (for the rows and the queries): a change re-embeds every row.")
@click.option("--batch-rows", default=128, show_default=True)
@click.option("--only", default="", help="Only rows whose id starts with this prefix (e.g. getting_started/).")
@click.option("--workers", default=os.cpu_count() or 1, show_default=True, help="Encoding processes (one per core).")
@click.option("--quiet", is_flag=True)
@with_db
def embed(model, pooling, precision, engine, batch_rows, only, workers, quiet, dsn, data_dir):
    """Fill the embedding column; only changed rows; resumable after Ctrl-C."""
    from .models.embedder import Embedder
    from .store.db import StoreError
    from .store.embed import embed_rows

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


def open_llm(llm, needed: bool, why: str):
    """The LLM, or a one-line error that says how to name one."""
    from .models.llm import LLMError

    try:
        return llm.make(needed)
    except (LLMError, ImportError, OSError, ValueError) as e:
        fail(f"{why} needs an LLM and none could be opened ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
             "name one with --llm-bundled 0.5b, --llm-gguf FILE or --llm-url URL")


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
def retrieve(source, batch, workers, strict, strategy, explain, fmt, prompt_budget, project_dir, file_path, output, rargs, llm,
             dsn, data_dir):
    """Retrieve evidence for a raw GDScript chunk (FILE, or - for stdin)."""
    from .gdscript.chunk_text import ChunkTextError
    from .render import render_table
    from .retrieve.engine.config import ConfigError
    from .retrieve.pipeline import Retriever
    from .retrieve.strategies import check_strategy, llm_user
    from .store.db import StoreError

    try:
        cfg = rargs.config(llm)
        strategy = check_strategy(strategy)
        user = llm_user([strategy], cfg)
        model = open_llm(llm, user is not None and not cfg.llm_optional, user or f"strategy {strategy}")
        retriever = Retriever(make_db(dsn, data_dir), llm=model, cross_encoder_path=rargs.cross_encoder,
                              judge_calibration=llm.judge_calibration)
        context = cli_context(project_dir, file_path, retriever.cache_dir) if project_dir or file_path else None
        if batch:
            from .batch import run_batch

            stopped = "interrupted; the output holds every input line finished before it, whole and in input order"
            try:
                summary = run_batch(retriever, batch, strategy, cfg, workers=workers, quiet=output.quiet,
                                    llm_spec=llm.spec() if model is not None else None, cross_encoder=rargs.cross_encoder,
                                    strict=strict, fmt=fmt or "records", prompt_budget=prompt_budget, context=context)
            except KeyboardInterrupt:
                fail(stopped, 130)
            except SystemExit as e:  # SIGTERM: said as Ctrl-C is, with its own code
                if by_sigterm(e):
                    fail(stopped, 128 + signal.SIGTERM)
                raise
            if summary["bad_lines"] and not summary["chunks"]:
                fail(f"no good line in the batch ({summary['bad_lines']} bad line(s); each has its error line)")
            return
        if source is None:
            raise click.UsageError("give a FILE, - for stdin, or --batch FILE.jsonl")
        try:
            text = source.read()
        except UnicodeDecodeError as e:
            fail(f"{source.name}: not a UTF-8 text file (byte {e.start}); pass the raw GDScript chunk")
        result = retriever.retrieve(text, strategy, cfg, explain=True, context=context)
    except (ConfigError, ChunkTextError, StoreError) as e:
        fail(str(e))
    except ValueError as e:  # --strict: every bad --batch line, with its file and line
        fail(str(e))
    if output.as_json or fmt:
        from .formats import json_lines, result_json

        fmt = fmt or "result"
        if fmt == "prompt":  # plain text, to paste into a prompt
            from .formats import prompt_object

            click.echo(prompt_object(result, source.name, prompt_budget)["prompt"])
        elif fmt == "records":
            sys.stdout.write(json_lines(result, fmt, chunk=source.name))
        else:
            click.echo(result_json(result, fmt, indent=2))
    else:
        click.echo(render_table(result, explain=explain))


def cli_context(project_dir: Path | None, file_path: Path | None, cache_dir: Path):
    """`--project DIR` / `--file PATH` as the request's context."""
    from .gdscript.facts import parse_script
    from .scan.symbols import file_context, load_project_symbols
    from .store.scan_cache import CACHE_FILE, ScanCache
    from .store.scan_files import read_script

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


@main.group()
def judge():
    """The Qwen judge of F: calibrate it for a model."""


@judge.command()
@click.option("--set", "judge_set", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=Path("bench/judge_set.jsonl"), show_default=True, help="Judge set built by bench/judge_set.py.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Calibration file to write (default: your user calibration file).")
@click.option("--scores", "scores_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write every pair's P(yes) (the ROC's raw points) as JSON.")
@click.option("--from-scores", "scores_in", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Decide from P(yes) written by --scores for this model, without asking it again.")
@click.option("--max-loss", default=0.02, show_default=True, type=click.FloatRange(0, 1),
              help="Most positives the chosen threshold may lose.")
@click.option("--min-auc", default=0.7, show_default=True, type=click.FloatRange(0, 1),
              help="Below this AUC the judge only annotates.")
@click.option("--min-removed", default=0.2, show_default=True, type=click.FloatRange(0, 1),
              help="Least share of negatives the threshold must remove for the judge to decide.")
@click.option("--sample", type=click.IntRange(1), default=None,
              help="At most N pairs per table and label, drawn with a fixed seed (a slow model on a small machine).")
@click.option("--limit", type=click.IntRange(1), default=None, help="First N pairs only (a quick look; not stored).")
@click.option("--quiet", is_flag=True)
@with_llm
@with_db
def calibrate(judge_set, out, scores_out, scores_in, max_loss, min_auc, min_removed, sample, limit, quiet, llm, dsn,
              data_dir):
    """P(yes) on the judge set, ROC AUC per table, the threshold from the dev curve; stored with the
    model's name and hash. The summary goes to stdout."""
    from tqdm import tqdm

    from .eval.judge_calibration import JudgeSetError, read_judge_set
    from .eval.judge_calibration import calibrate as run_calibration
    from .models.llm import LLMError
    from .retrieve.evidence.judge_questions import prompt_id
    from .retrieve.pipeline import Retriever
    from .store import calibration as cal_store

    try:
        pairs = read_judge_set(judge_set)[:limit]
    except JudgeSetError as e:
        fail(str(e))
    try:  # the file the calibration goes to must be readable before the long run, not after
        cal_store.read(out or cal_store.user_path())
    except cal_store.CalibrationError as e:
        fail(str(e))
    if sample:
        from .eval.judge_calibration import stratified

        pairs = stratified(pairs, sample)
    model = open_llm(llm, True, "the judge")
    scores = None
    if scores_in:
        try:
            saved = json.loads(scores_in.read_text())
            if saved.get("model") != model.identity():
                fail(f"{scores_in}: field 'model': the scores are of {saved.get('model')}, not {model.identity()}")
            if saved.get("prompt") != prompt_id():
                fail(f"{scores_in}: field 'prompt': the scores were asked with prompt {saved.get('prompt')}, "
                     f"not today's {prompt_id()}: ask the model again")
            scores = [float(saved["scores"][p["id"]]) for p in pairs]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            fail(f"{scores_in}: not scores written by --scores for this judge set ({type(e).__name__}: {e})")
    retriever = Retriever(make_db(dsn, data_dir), llm=model)
    with tqdm(total=len(pairs), desc="judge pairs", disable=quiet or scores is not None, file=sys.stderr) as bar:
        try:
            entry = run_calibration(retriever, model, pairs, scores=scores, max_loss=max_loss, min_auc=min_auc,
                                    min_removed=min_removed, progress=lambda: bar.update(1))
        except (JudgeSetError, LLMError) as e:
            fail(str(e))
    raw = {"model": model.identity(), "prompt": prompt_id(), "seconds": entry["seconds"], "seconds_per_pair": entry["seconds_per_pair"],
           "scores": entry.pop("_scores")}
    entry["judge_set"].update(file=str(judge_set), sha256=hashlib.sha256(judge_set.read_bytes()).hexdigest(),
                              sample_per_table_and_label=sample)
    if scores_out:
        scores_out.write_text(json.dumps(raw, indent=1) + "\n")
    if scores is not None:  # the time it took to ask the model, when the scores were written
        entry.update(scores_from=str(scores_in), seconds=saved.get("seconds"), seconds_per_pair=saved.get("seconds_per_pair"))
    if limit is None:
        try:
            entry["stored_in"] = str(cal_store.save(entry, out))
        except OSError as e:
            click.echo(json.dumps(entry, indent=2))
            fail(f"{out or cal_store.user_path()}: cannot write the calibration ({e.strerror or e})")
    click.echo(json.dumps(entry, indent=2))


@main.command(name="fit-guides")
@click.option("--queries", "queries_file", default=None, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The chunks the judged pool grades: F runs on all of them (page rates). "
                   "Default: ../shared/eval/realcode_godot4.dev.jsonl beside the checkout.")
@click.option("--judged", "judged_file", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The judged pool (judged_docs format); repeat it for grades kept beside the pool (a later file's grade "
                   "wins). Default: the shipped pool, then the files of data/grades/ the shipped model was fitted on.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the model goes (default: the one shipped, store/guide_model.json).")
@click.option("--curve", "curve_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the out-of-fold precision/recall curve and the pairs' features (JSON).")
@click.option("--rows-cache", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Keep F's candidates here and reuse them on the next fit (a refit without rerunning F).")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(2, 20))
@click.option("--hub-every", default=3, show_default=True, type=click.IntRange(1),
              help="Page acceptance rates from every Nth chunk of --queries (and all judged chunks).")
@click.option("--l2", default=1.0, show_default=True, type=click.FloatRange(0, 1000))
@click.option("--threshold", default=None, type=click.FloatRange(0, 1),
              help="Accept at this P(direct) instead of the out-of-fold choice: a threshold measured on F's accepts "
                   "(`godot-rag eval` with the judged files), stored as given; the out-of-fold choice stays in `cv`.")
@click.option("--quiet", is_flag=True)
@with_db
def fit_guides(queries_file, judged_file, out, curve_out, rows_cache, folds, hub_every, l2, threshold, quiet, dsn, data_dir):
    """Fit F's guide model (a logistic regression over named features) on a judged pool, with cross-validation by
    chunk; the threshold is the lowest that meets the precision target out of fold, unless --threshold gives one.
    The summary goes to stdout."""
    from .eval.guide_fit import SHIPPED_QUERIES, fit, shipped_judged
    from .eval.queries import QueryFileError
    from .retrieve.pipeline import Retriever
    from .store import guide_model
    from .store.db import StoreError

    judged = list(judged_file) or shipped_judged()
    missing = [str(p) for p in [queries_file or SHIPPED_QUERIES, *judged] if not Path(p).is_file()]
    if missing:
        fail(f"{', '.join(missing)}: not found (give --queries and --judged)")
    retriever = Retriever(make_db(dsn, data_dir))
    try:
        result = fit(retriever, queries_file or SHIPPED_QUERIES, judged, folds=folds, l2=l2, quiet=quiet, rows_cache=rows_cache,
                     hub_every=hub_every, threshold=threshold)
    except (QueryFileError, StoreError) as e:
        fail(str(e))
    finally:
        retriever.db.stop()
    try:
        guide_model.write(result["model"], out or guide_model.SHIPPED)
        if curve_out:
            curve_out.write_text(json.dumps({"curve": result["curve"], "pairs": result["rows"]}, indent=1) + "\n")
    except OSError as e:
        fail(f"{e.filename}: cannot write ({e.strerror or e})")
    m = result["model"]
    click.echo(json.dumps({k: m[k] for k in ("weights", "bias", "threshold", "n", "cv", "data_digest")}, indent=2))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The table as JSON.")
def strategies(as_json):
    """Each strategy and its stage list, in order."""
    from .retrieve.strategies import describe

    table = describe()
    if as_json:
        click.echo(json.dumps(table, indent=2))
        return
    for name, s in table.items():
        click.echo(f"{name}  {s['about']}" + (f"  (needs {s['needs']})" if s["needs"] else ""))
        click.echo("   " + " -> ".join(st["name"] for st in s["stages"]))


@main.command()
@click.option("--markdown", is_flag=True, help="A Markdown table per rule table (docs/rules.md is this output).")
def rules(markdown):
    """Every named rule of the version and evidence rule tables, in order."""
    from .retrieve.explain.rules import rule_rows, rules_markdown

    if markdown:
        click.echo(rules_markdown(), nl=False)
        return
    for r in rule_rows():
        click.echo(f"{r['table']:18} {r['rule']:32} {r['outcome']:14} {r['doc']}")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default="8000", show_default=True,  # text: a bad value gets the one-line error of listen_socket
              help="0 to 65535 (0: a free one; the ready line names it).")
@click.option("--allow-host", "allow_hosts", multiple=True,
              help="Also answer requests whose Host header names this (repeatable; '*': any). By default only the "
                   "bound host, localhost and 127.0.0.1 (a web page on another name cannot drive the server).")
@click.option("--no-warm", is_flag=True, help="Do not load the indexes and the embedder at start.")
@click.option("--cross-encoder", "cross_encoder", default=None, help="Local CrossEncoder directory (reranker cross-encoder).")
@click.option("--allow-path", "allow_paths", multiple=True, envvar="GODOT_RAG_SCAN_ALLOW_PATH",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Let POST /api/scan read project folders under DIR on this machine (repeatable).")
@with_llm
@with_db
def serve(host, port, allow_hosts, no_warm, cross_encoder, allow_paths, llm, dsn, data_dir):
    """Serve POST /api/retrieve, GET /api/strategies, the OpenAPI docs and the debugger page at /."""
    import uvicorn

    from .api.app import bound_heap, create_app, listen_socket

    try:
        sock = listen_socket(host, port)
    except ValueError as e:
        fail(str(e), 2)
    port = sock.getsockname()[1]
    bound_heap()
    from .retrieve.pipeline import Retriever
    from .store.db import StoreError

    def log(message: str) -> None:
        click.echo(f"godot-rag: {message}", err=True)

    model = open_llm(llm, False, "serve")
    retriever = Retriever(make_db(dsn, data_dir), llm=model, cross_encoder_path=cross_encoder,
                          judge_calibration=llm.judge_calibration)
    from .api.guards import LOCAL_HOSTS

    allowed = None if "*" in allow_hosts else [host, *LOCAL_HOSTS, *allow_hosts]
    app = create_app(retriever, warm=False, llm_optional=llm.llm_optional, allowed_hosts=allowed, allow_paths=allow_paths)

    class Server(uvicorn.Server):
        """Says so once the socket listens (after the warm-up), so a script can wait for the line."""

        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if not self.should_exit:
                click.echo(f"godot-rag serving on http://{host}:{port}")
                sys.stdout.flush()

    # uvicorn shuts down cleanly on SIGINT/SIGTERM, then re-raises the signal to the handler that was
    # there before it: this one, so the `finally` below runs instead of the process dying on the spot.
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _terminated)
    try:
        if not no_warm:
            try:
                retriever.warm(log=log)
            except StoreError as e:
                log(f"warm-up failed ({str(e).splitlines()[0]}); requests will answer 503 with the reason")
        log(f"starting the HTTP server on {host}:{port}")
        Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
        retriever.db.stop()  # the embedded PostgreSQL this process started goes with it


@main.command()
@click.option("--http", "http", is_flag=True, help="Streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True)
@click.option("--allow-path", "allow_paths", multiple=True, envvar="GODOT_RAG_SCAN_ALLOW_PATH",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Let the scan tool read project folders under DIR on this machine (repeatable).")
@click.option("--no-warm", is_flag=True, help="Do not load the indexes and the embedder at start.")
@with_retrieve
@with_llm
@with_db
def mcp(http, host, port, allow_paths, no_warm, rargs, llm, dsn, data_dir):
    """Model Context Protocol server for coding agents: tools evidence, explain, lookup, scan, strategies
    and the resource godot-rag://record/{table}/{id}. stdio by default (the agent starts it)."""
    from .retrieve.engine.config import ConfigError
    from .retrieve.pipeline import Retriever

    try:
        from .api.mcp_server import create_server, print_err, serve_http, serve_stdio, warm_in_background
    except ImportError as e:
        fail(str(e))
    try:
        cfg = rargs.config(llm)
    except ConfigError as e:
        fail(str(e))
    model = open_llm(llm, False, "mcp")
    retriever = Retriever(make_db(dsn, data_dir), llm=model, cross_encoder_path=rargs.cross_encoder,
                          judge_calibration=llm.judge_calibration)
    server = create_server(retriever, cfg, list(allow_paths))

    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _terminated)
    warm, signalled = None, None
    try:
        if not no_warm:
            warm = warm_in_background(retriever, cfg)
        if http:
            def ready(url: str) -> None:
                click.echo(f"godot-rag mcp serving on {url}")
                sys.stdout.flush()

            serve_http(server, host, port, ready)
        else:
            serve_stdio(server)
    except SystemExit as e:
        signalled = e.code if isinstance(e.code, int) else 1
        raise
    finally:
        if warm is not None:
            warm.join(timeout=120)  # a warm-up half-way through starting the database finishes first
        retriever.db.stop()  # the embedded PostgreSQL this process started goes with it
        print_err("godot-rag mcp: stopped")
        if signalled is not None:
            # The SDK's stdin reader (or a tool call) may sit in a worker thread the interpreter would
            # wait for at exit; everything this process started is stopped, so go now.
            sys.stdout.flush()
            os._exit(signalled)


@main.command(name="eval")
@click.argument("more_queries", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--queries", "query_files", required=True, multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Query files (JSON Lines, ../shared/eval format). Repeat, or list several after one flag.")
@click.option("--strategies", "strategy_list", default="A,B,C,D,F", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write metrics, report, TREC runs, failures, plots.")
@click.option("--limit", type=int, default=None, help="First N queries of each file.")
@click.option("--judged", "judged", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Graded (chunk, docs record) pairs (judged_docs format: data/grades/*.jsonl); any judged_docs.*.jsonl beside the queries is read too.")
@with_output
@with_retrieve
@with_llm
@with_db
def eval_cmd(more_queries, query_files, strategy_list, out, limit, judged, output, rargs, llm, dsn, data_dir):
    """Compare strategies on the same queries: recall@k, MRR, nDCG@10, mapping P/R, latency."""
    from .eval.queries import QueryFileError
    from .eval.runner import run_eval
    from .retrieve.engine.config import ConfigError
    from .retrieve.pipeline import Retriever
    from .retrieve.strategies import check_strategy, llm_user
    from .store.db import StoreError

    try:
        names = [check_strategy(s) for s in strategy_list.split(",") if s.strip()]
        cfg = rargs.config(llm)
        user = llm_user(names, cfg)
        model = open_llm(llm, user is not None and not cfg.llm_optional, user or "this eval")
        retriever = Retriever(make_db(dsn, data_dir), llm=model, cross_encoder_path=rargs.cross_encoder,
                              judge_calibration=llm.judge_calibration)
        report = run_eval(retriever, list(query_files) + list(more_queries), names, cfg, out_dir=out, limit=limit,
                          quiet=output.quiet, judged=list(judged))
    except (QueryFileError, ConfigError, StoreError) as e:
        fail(str(e))
    if output.as_json:
        click.echo(json.dumps({"runs": report["runs"]}))
    else:
        click.echo(report["markdown"])



# -- scan: a whole project (godot_rag.scan) -----------------------------------------------------------
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
@with_output
@with_db
def scan(project_dir, files, out, strategy, godot_version, workers, formats, changed_since, include_addons, fail_on,
         rargs, max_chunk_chars, max_file_bytes, cache_file, refresh, no_extends_hint, no_project_symbols, output, dsn, data_dir):
    """Scan a Godot project (or a folder of projects): every .gd file, chunked, through the retriever;
    writes chunks.jsonl, findings.jsonl, findings.sarif, report.html and report.md. FILES, when given,
    limit the scan to those scripts of the project (what a pre-commit hook passes).
    Exit 0: no finding at --fail-on or above; 1: there is one; 2: usage or database error."""
    from .retrieve.engine.config import ConfigError
    from .scan.run import ScanError, ScanInterrupted, ScanOptions, run_scan
    from .scan.summary import summary_text

    try:  # SIGTERM unwinds like Ctrl-C (`main`): the pool and the database are stopped
        cfg = rargs.config()
        overrides = {k: v for k, v in cfg.to_dict().items() if k != "godot_version"}
        opts = ScanOptions(root=project_dir, out=out, strategy=strategy, godot_version=godot_version, workers=workers,
                           formats=tuple(f.strip() for f in formats.split(",") if f.strip()), changed_since=changed_since,
                           files=tuple(files),
                           include_addons=include_addons, fail_on=fail_on, quiet=output.quiet, settings=overrides,
                           cache=cache_file, refresh=refresh, max_chunk_chars=max_chunk_chars,
                           max_file_bytes=max_file_bytes,
                           extends_hint=not no_extends_hint, project_symbols=not no_project_symbols)
        result = run_scan(opts, dsn=dsn, data_dir=data_dir)
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


if __name__ == "__main__":  # pragma: no cover
    main()
