"""The evaluation commands: eval, judge calibrate, fit-guides, and the tables strategies and rules."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..cli_options import with_db, with_llm, with_output, with_retrieve
from .base import fail, fitted, main, make_db, open_llm, written

if TYPE_CHECKING:
    from ..cli_options import LlmArgs, OutputArgs, RetrieveArgs

@main.group()
def judge() -> None:
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
def calibrate(judge_set: Path, out: Path | None, scores_out: Path | None, scores_in: Path | None, max_loss: float,
              min_auc: float, min_removed: float, sample: int | None, limit: int | None, quiet: bool, llm: LlmArgs,
              dsn: str | None, data_dir: Path | None) -> None:
    """P(yes) on the judge set, ROC AUC per table, the threshold from the dev curve; stored with the
    model's name and hash. The summary goes to stdout."""
    from tqdm import tqdm

    from ..eval.judge_calibration import JudgeSetError
    from ..eval.judge_calibration import calibrate as run_calibration
    from ..models.llm import LLMError
    from ..retrieve.evidence.judge_questions import prompt_id
    from ..retrieve.pipeline import Retriever

    pairs = _judge_pairs(judge_set, out, sample, limit)
    model = open_llm(llm, True, "the judge")
    saved, scores = _saved_scores(scores_in, model, pairs) if scores_in else ({}, None)
    retriever = Retriever(make_db(dsn, data_dir), llm=model)
    with tqdm(total=len(pairs), desc="judge pairs", disable=quiet or scores is not None, file=sys.stderr) as bar:
        try:
            entry = run_calibration(retriever, model, pairs, scores=scores, max_loss=max_loss, min_auc=min_auc,
                                    min_removed=min_removed, progress=lambda: bar.update(1))
        except (JudgeSetError, LLMError) as e:
            fail(str(e))
    raw = {"model": model.identity(), "prompt": prompt_id(), "seconds": entry["seconds"],
           "seconds_per_pair": entry["seconds_per_pair"], "scores": entry.pop("_scores")}
    entry["judge_set"].update(file=str(judge_set), sha256=hashlib.sha256(judge_set.read_bytes()).hexdigest(),
                              sample_per_table_and_label=sample)
    if scores_out:
        scores_out.write_text(json.dumps(raw, indent=1) + "\n")
    if scores is not None:  # the time it took to ask the model, when the scores were written
        entry.update(scores_from=str(scores_in), seconds=saved.get("seconds"), seconds_per_pair=saved.get("seconds_per_pair"))
    if limit is None:
        _store_calibration(entry, out)
    click.echo(json.dumps(entry, indent=2))


def _judge_pairs(judge_set: Path, out: Path | None, sample: int | None, limit: int | None) -> list[dict]:
    """The judge set's pairs (the first `limit`, `sample` per table and label), once the calibration file
    is known to be readable: before the long run, not after."""
    from ..eval.judge_calibration import JudgeSetError, read_judge_set
    from ..store import calibration as cal_store

    try:
        pairs = read_judge_set(judge_set)[:limit]
    except JudgeSetError as e:
        fail(str(e))
    try:
        cal_store.read(out or cal_store.user_path())
    except cal_store.CalibrationError as e:
        fail(str(e))
    if sample:
        from ..eval.judge_calibration import stratified

        pairs = stratified(pairs, sample)
    return pairs


def _saved_scores(scores_in: Path, model: Any, pairs: list[dict]) -> tuple[dict, list[float]]:
    """What `--scores` wrote for this model and prompt, and each pair's P(yes) from it."""
    from ..retrieve.evidence.judge_questions import prompt_id

    try:
        saved = json.loads(scores_in.read_text())
        if saved.get("model") != model.identity():
            fail(f"{scores_in}: field 'model': the scores are of {saved.get('model')}, not {model.identity()}")
        if saved.get("prompt") != prompt_id():
            fail(f"{scores_in}: field 'prompt': the scores were asked with prompt {saved.get('prompt')}, "
                 f"not today's {prompt_id()}: ask the model again")
        return saved, [float(saved["scores"][p["id"]]) for p in pairs]
    except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
        fail(f"{scores_in}: not scores written by --scores for this judge set ({type(e).__name__}: {e})")


def _store_calibration(entry: dict, out: Path | None) -> None:
    from ..store import calibration as cal_store

    try:
        entry["stored_in"] = str(cal_store.save(entry, out))
    except OSError as e:
        click.echo(json.dumps(entry, indent=2))
        fail(f"{out or cal_store.user_path()}: cannot write the calibration ({e.strerror or e})")


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
def fit_guides(queries_file: Path | None, judged_file: tuple[Path, ...], out: Path | None, curve_out: Path | None,
               rows_cache: Path | None, folds: int, hub_every: int, l2: float, threshold: float | None, quiet: bool,
               dsn: str | None, data_dir: Path | None) -> None:
    """Fit F's guide model (a logistic regression over named features) on a judged pool, with cross-validation by
    chunk; the threshold is the lowest that meets the precision target out of fold, unless --threshold gives one.
    The summary goes to stdout."""
    from ..eval.guide_fit import SHIPPED_QUERIES, FitOptions, fit, shipped_judged
    from ..store import guide_model

    judged = list(judged_file) or shipped_judged()
    queries = queries_file or SHIPPED_QUERIES
    missing = [str(p) for p in [queries, *judged] if not Path(p).is_file()]
    if missing:
        fail(f"{', '.join(missing)}: not found (give --queries and --judged)")
    opts = FitOptions(folds=folds, l2=l2, quiet=quiet, rows_cache=rows_cache, hub_every=hub_every, threshold=threshold)
    result = fitted(dsn, data_dir, lambda retriever: fit(retriever, queries, judged, opts))

    def write() -> None:
        guide_model.write(result["model"], out or guide_model.SHIPPED)
        if curve_out:
            curve_out.write_text(json.dumps({"curve": result["curve"], "pairs": result["rows"]}, indent=1) + "\n")
    written(write)
    m = result["model"]
    click.echo(json.dumps({k: m[k] for k in ("weights", "bias", "threshold", "n", "cv", "data_digest")}, indent=2))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="The table as JSON.")
@click.option("--contracts", is_flag=True, help="Each stage's typed inputs and outputs, a line each.")
def strategies(as_json: bool, contracts: bool) -> None:
    """Each strategy and its stage list, in order."""
    from ..retrieve.strategies import describe

    table = describe()
    if as_json:
        click.echo(json.dumps(table, indent=2))
        return
    for name, s in table.items():
        click.echo(f"{name}  {s['about']}" + (f"  (needs {s['needs']})" if s["needs"] else ""))
        if not contracts:
            click.echo("   " + " -> ".join(st["name"] for st in s["stages"]))
            continue
        for st in s["stages"]:  # an optional input is marked `name?`
            click.echo(f"   {st['name']}({', '.join(st['inputs'])}) -> ({', '.join(st['outputs'])})")


@main.command()
@click.option("--markdown", is_flag=True, help="A Markdown table per rule table (docs/rules.md is this output).")
def rules(markdown: bool) -> None:
    """Every named rule of the version and evidence rule tables, in order."""
    from ..retrieve.explain.rules import rule_rows, rules_markdown

    if markdown:
        click.echo(rules_markdown(), nl=False)
        return
    for r in rule_rows():
        click.echo(f"{r['table']:18} {r['rule']:32} {r['outcome']:14} {r['doc']}")



@main.command(name="eval")
@click.argument("more_queries", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--queries", "query_files", required=True, multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Query files (JSON Lines, ../shared/eval format). Repeat, or list several after one flag.")
@click.option("--strategies", "strategy_list", default="A,B,C,D,F", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write metrics, report, TREC runs, failures, plots.")
@click.option("--limit", type=int, default=None, help="First N queries of each file.")
@click.option("--judged", "judged", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Graded (chunk, docs record) pairs (judged_docs format: data/grades/docs.*.jsonl); any judged_docs.*.jsonl "
                   "beside the queries is read too.")
@with_output
@with_retrieve
@with_llm
@with_db
def eval_cmd(more_queries: tuple[Path, ...], query_files: tuple[Path, ...], strategy_list: str, out: Path | None,
             limit: int | None, judged: tuple[Path, ...], output: OutputArgs, rargs: RetrieveArgs, llm: LlmArgs,
             dsn: str | None, data_dir: Path | None) -> None:
    """Compare strategies on the same queries: recall@k, MRR, nDCG@10, mapping P/R, latency."""
    from ..eval.queries import QueryFileError
    from ..eval.runner import run_eval
    from ..retrieve.engine.config import ConfigError
    from ..retrieve.pipeline import ModelFiles, Retriever
    from ..retrieve.strategies import check_strategy, llm_user
    from ..store.db import StoreError

    try:
        names = [check_strategy(s) for s in strategy_list.split(",") if s.strip()]
        cfg = rargs.config(llm)
        user = llm_user(names, cfg)
        model = open_llm(llm, user is not None and not cfg.llm_optional, user or "this eval")
        retriever = Retriever(make_db(dsn, data_dir), llm=model, files=ModelFiles(rargs.cross_encoder, llm.judge_calibration))
        report = run_eval(retriever, list(query_files) + list(more_queries), names, cfg, out_dir=out, limit=limit,
                          quiet=output.quiet, judged=list(judged))
    except (QueryFileError, ConfigError, StoreError) as e:
        fail(str(e))
    if output.as_json:
        click.echo(json.dumps({"runs": report["runs"]}))
    else:
        click.echo(report["markdown"])


