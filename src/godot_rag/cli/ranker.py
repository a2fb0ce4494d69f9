"""`godot-rag fit-ranker`: refit the ranker over F's docs candidates on every graded pair at hand."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..cli_options import with_db
from .base import fail, fitted, main, written


def _scans(values: tuple[str, ...]) -> list[tuple[str, Path]]:
    out = []
    for v in values:
        prefix, sep, path = v.partition("=")
        if not sep or not prefix or not path:
            fail(f"--scan {v}: give PREFIX=SCAN_DIR (the grade files' prefix and the scan's --out folder)")
        out.append((prefix, Path(path)))
    return out


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    """What fit-ranker prints: per group the weights, threshold and counts; the out-of-fold figures; the digest."""
    shown = ("weights", "bias", "threshold", "targets_met", "chosen", "n")
    return {"groups": {g: {k: v[k] for k in shown} for g, v in m["groups"].items()},
            "out_of_fold": m["out_of_fold"], "data_digest": m["data_digest"]}


@main.command(name="fit-ranker")
@click.option("--queries", "queries_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Queries files whose graded chunks F runs on (repeat). Default: realcode_godot4.dev and "
                   "realcode_godot3.dev of ../shared/eval beside the checkout.")
@click.option("--scan", "scans", multiple=True, metavar="PREFIX=SCAN_DIR",
              help="A scanned project's graded chunks (`PREFIX:file#chunk`), rerun with its project's context (repeat).")
@click.option("--judged", "judged_files", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Grade files (repeat; a later file's grade of a pair wins). Default: the shipped pool, then every "
                   "data/grades/docs.*.jsonl by name.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the model goes (default: the one shipped, store/ranker_model.json).")
@click.option("--rows-cache", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Keep F's candidates here and reuse them on the next fit (a refit without rerunning F).")
@click.option("--rows", "rows_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write every graded candidate's features, grade and out-of-fold P (JSON).")
@click.option("--folds", default=5, show_default=True, type=click.IntRange(2, 20))
@click.option("--l2", default=1.0, show_default=True, type=click.FloatRange(0, 1000))
@click.option("--quiet", is_flag=True)
@with_db
def fit_ranker(queries_files: tuple[Path, ...], scans: tuple[str, ...], judged_files: tuple[Path, ...], out: Path | None,
               rows_cache: Path | None, rows_out: Path | None, folds: int, l2: float, quiet: bool,
               dsn: str | None, data_dir: Path | None) -> None:
    """Fit the ranker (a logistic regression per docs group over named features of F's candidates) on graded
    pairs, cross-validated by project; print the out-of-fold figures beside F and D's top 10."""
    from ..eval.judged import grades_of
    from ..eval.queries import QueryFileError
    from ..eval.ranker_fit import RankerOptions
    from ..eval.ranker_rows import RankerQuery
    from ..eval.ranker_run import RankerData, default_judged, default_queries, queries_of
    from ..eval.ranker_run import fit_ranker as fit
    from ..scan.graded_chunks import ScanChunksError, scan_queries
    from ..store import ranker_model

    judged = list(judged_files) or default_judged()
    sources = list(queries_files) or default_queries()
    try:
        wanted = {q for q, _ in grades_of(judged)}
        queries = queries_of(sources, wanted)
        for prefix, scan_dir in _scans(scans):
            queries += [RankerQuery(*q) for q in scan_queries(prefix, scan_dir, wanted)]
    except (QueryFileError, ScanChunksError, OSError) as e:
        fail(str(e))
    data = RankerData(queries, judged, rows_cache, [*(p.name for p in sources), *scans])
    result = fitted(dsn, data_dir, lambda retriever: fit(retriever, data, RankerOptions(folds=folds, l2=l2, quiet=quiet)))

    def write() -> None:
        ranker_model.write(result["model"], out or ranker_model.SHIPPED)
        if rows_out:
            rows_out.write_text(json.dumps(result["rows"]) + "\n")
    written(write)
    click.echo(json.dumps(_summary(result["model"]), indent=1))
