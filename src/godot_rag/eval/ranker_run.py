"""`godot-rag fit-ranker` from end to end: the graded chunks, F's candidates (cached), the fit per group, and the
out-of-fold figures beside today's F and D's top 10 (`ranker_metrics.py`), written with the model.

The figures are measured on three sets of chunks: every graded chunk that ran, the shipped pool's 40 chunks, and
the other authors' projects (every project that is not one of Godot's demos; each is held out of the weights
that score it, as every project is).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..retrieve.evidence.ranker_features import GROUPS
from ..retrieve.pipeline import Retriever
from .guide_fit import GRADES_DIR, SHIPPED_POOL, SHIPPED_QUERIES, data_digest, shown_path
from .judged import grades_of, read_judged
from .queries import read_queries
from .ranker_fit import DEMO_PREFIXES, OTHER_AUTHORS_TARGETS, TARGETS, ChoiceSets, GroupFit, RankerOptions, fit_group, project_of
from .ranker_metrics import group_of_record, ndcg, selection_metrics
from .ranker_rows import RankerQuery, cached_collect

OTHER_AUTHORS = "other_authors"
CHOSEN_ON = ("pool", OTHER_AUTHORS)  # the sets issue 62 states its precision targets for


def default_judged() -> list[Path]:
    """What `fit-ranker` reads by default: the shipped pool, then every docs grade file of data/grades/ by name (the
    `findings.*` files grade the API check's findings, not docs records)."""
    return [SHIPPED_POOL, *sorted(GRADES_DIR.glob("docs.*.jsonl"))]


def default_queries() -> list[Path]:
    """The queries files of the graded demo chunks: realcode_godot4.dev and realcode_godot3.dev."""
    return [SHIPPED_QUERIES, SHIPPED_QUERIES.with_name("realcode_godot3.dev.jsonl")]


def queries_of(paths: Sequence[Path], wanted: set[str]) -> list[RankerQuery]:
    """The chunks of the queries files that a grade file grades."""
    return [RankerQuery(q.id, q.chunk_text) for p in paths for q in read_queries(p) if q.id in wanted]


@dataclass(frozen=True)
class RankerData:
    """What a fit reads: the graded chunks to run (`queries`), the grade files in order, and the candidate cache."""
    queries: Sequence[RankerQuery]
    judged: Sequence[Path]
    rows_cache: Path | None = None
    sources: Sequence[str] = ()  # the queries files and scans named in the model


def fit_ranker(retriever: Retriever, data: RankerData, opts: RankerOptions) -> dict[str, Any]:
    """Run F over the graded chunks (or read the cache), fit each group, and measure out of fold."""
    grades = grades_of(list(data.judged))
    found = cached_collect(retriever, data.queries, data.rows_cache, opts.quiet)
    rows = found["rows"]
    ran = set(found["f_order"])
    grades = {k: g for k, g in grades.items() if k[0] in ran}
    known = groups_of(rows)
    total2 = {g: sum(1 for p, v in grades.items() if v == 2 and group_of_record(p, known) == g) for g in GROUPS}
    sets = chunk_sets(ran, grades)
    fits = {g: fit_group(rows, grades, g, total2[g], opts, choice_sets(sets, grades, known, g)) for g in GROUPS}
    figures = measure(found, grades, fits, sets)
    model = model_of(fits, data, opts, {"chunks_run": len(ran), "graded_pairs_run": len(grades)}) | {"out_of_fold": figures}
    p = {k: v for f in fits.values() for k, v in f.oof.items()}
    graded = [r | {"grade": grades[key], "p_out_of_fold": round(p.get(key, 0.0), 4)} for r in rows
              if (key := (r["query_id"], r["record_id"])) in grades]
    return {"model": model, "rows": graded}


def choice_sets(sets: Mapping[str, set[str]], grades: Mapping[tuple[str, str], int], known: Mapping[tuple[str, str], str],
                group: str) -> ChoiceSets | None:
    """The sets a threshold must meet the targets on: the shipped pool and the other authors' projects, each that
    has graded chunks (None where neither has: the threshold is chosen on all the graded chunks)."""
    chunks = {name: sets[name] for name in CHOSEN_ON if sets.get(name)}
    if not chunks:
        return None
    total2 = {name: sum(1 for p, v in grades.items() if v == 2 and p[0] in c and group_of_record(p, known) == group)
              for name, c in chunks.items()}
    targets = {name: OTHER_AUTHORS_TARGETS[group] if name == OTHER_AUTHORS else TARGETS[group] for name in chunks}
    return ChoiceSets(chunks, total2, targets)


def groups_of(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """The group F gave each (chunk, record) candidate."""
    return {(r["query_id"], r["record_id"]): r["group"] for r in rows}


def chunk_sets(ran: set[str], grades: Mapping[tuple[str, str], int]) -> dict[str, set[str]]:
    """The chunks each figure is measured on: all graded that ran, the shipped pool's, the other authors'."""
    graded = {q for q, _ in grades} & ran
    pool = {r["query_id"] for r in read_judged(SHIPPED_POOL)} if SHIPPED_POOL.is_file() else set()
    others = {q for q in graded if q.partition(":")[0] not in DEMO_PREFIXES}
    return {"all": graded, "pool": graded & pool, OTHER_AUTHORS: others}


def ranker_accepts(fits: Mapping[str, GroupFit], thresholds: Mapping[str, float], by_chunk: bool = False) -> dict[str, list[str]]:
    """Per chunk, the records whose out-of-fold P clears their group's threshold, most probable first."""
    scored: dict[str, list[tuple[float, str]]] = {}
    for g, f in fits.items():
        for (q, r), p in (f.oof_by_chunk if by_chunk else f.oof).items():
            if p >= thresholds[g] and p > 0:
                scored.setdefault(q, []).append((p, r))
    return {q: [r for _, r in sorted(v, key=lambda x: (-x[0], x[1]))] for q, v in scored.items()}


def measure(found: Mapping[str, Any], grades: Mapping[tuple[str, str], int], fits: Mapping[str, GroupFit],
            sets: Mapping[str, set[str]]) -> dict[str, Any]:
    """F, D's top 10 and the ranker at its chosen thresholds (by project, and by chunk), on each set of chunks."""
    known = groups_of(found["rows"])
    chosen = {g: float(f.chosen["threshold"]) for g, f in fits.items()}
    p = {k: v for f in fits.values() for k, v in f.oof.items()}
    selections = {"F": found["f_order"], "D_top10": found["d_order"], "ranker": ranker_accepts(fits, chosen),
                  "ranker_by_chunk": ranker_accepts(fits, chosen, by_chunk=True)}
    by_p = {q: sorted(ids, key=lambda r: -p.get((q, r), 0.0)) for q, ids in found["f_order"].items()}
    orders = selections | {"F_by_ranker": by_p, "ranker_all": ranker_accepts(fits, {g: 0.0 for g in fits})}
    out: dict[str, Any] = {"thresholds": chosen}
    for name, chunks in sets.items():
        out[name] = {"chunks": len(chunks), "ndcg": {k: ndcg(v, grades, chunks) for k, v in orders.items()},
                     **{k: {g: selection_metrics(v, grades, chunks, known, g) for g in (*GROUPS, None)}
                        for k, v in selections.items()}}
        for k in selections:
            out[name][k]["all"] = out[name][k].pop(None)
    return out


def model_of(fits: Mapping[str, GroupFit], data: RankerData, opts: RankerOptions, ran: Mapping[str, int]) -> dict[str, Any]:
    """The model as `store/ranker_model.json` holds it: per group its weights, bias, threshold and curve."""
    groups = {g: {"weights": f.weights, "bias": f.bias, "threshold": f.chosen["threshold"], "targets_met": f.chosen["met"],
                  "targets": {"share2": TARGETS[g][0], "share0": TARGETS[g][1]}, "chosen": f.chosen, "n": f.n,
                  "curve_by_project": f.curve, "curve_by_chunk": f.curve_by_chunk, "curves_by_set": f.curves_by_set}
              for g, f in fits.items()}
    return {"groups": groups, "data_digest": data_digest(list(data.judged)),
            "fitted_on": {"judged": [shown_path(Path(p)) for p in data.judged], "chunks_from": list(data.sources), **ran},
            "cv": {"folds": opts.folds, "by": "project (demos: the demo's folder; others: the scan's prefix)",
                   "also_by": "chunk", "l2": opts.l2},
            "projects": sorted({project_of(q.id) for q in data.queries})}
