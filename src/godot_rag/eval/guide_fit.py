"""Fit the guide model (`retrieve/evidence/guide_model.py`, over `docs_features.py`) on a judged pool: `godot-rag fit-guides`.

1. F runs, with the evidence rules deciding guides, over the judged chunks and every `hub_every`-th other chunk
   of the queries file (one run per chunk takes a while on a small machine): each guide
   candidate that reaches the validator is kept with its clone ratio, BM25 rank and cosine, and each
   page's acceptance rate is counted (hub damping), as well as how many chunks use each member.
2. Each guide candidate of a judged chunk gets its features; graded ones are the training data
   (label: graded 2). The page rate of a chunk's own candidates leaves that chunk out.
3. A logistic regression (L2, Newton steps; a handful of weights) is fitted with cross-validation by
   chunk: the out-of-fold P(direct) gives the precision/recall curve, and the threshold is the lowest
   one whose out-of-fold accepts reach the target precision. The final weights come from all chunks.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from tqdm import tqdm

from ..gdscript.facts import parse_chunk
from ..gdscript.record_api import global_uses
from ..gdscript.resolve import resolve_uses
from ..retrieve.engine.config import RetrieveConfig
from ..retrieve.evidence.chunk_side import chunk_callbacks, chunk_classes, chunk_side
from ..retrieve.evidence.docs_features import FEATURES, GuideRecord, contradictions, guide_features
from ..retrieve.evidence.docs_stats import DocsApiStats, callback_key, construct_key
from .judged import grades_of
from .queries import read_queries

ROOT = Path(__file__).resolve().parents[3]  # the checkout: data/grades/ and ../shared beside it
GRADES_DIR = ROOT / "data" / "grades"
SHIPPED_QUERIES = ROOT.parent / "shared" / "eval" / "realcode_godot4.dev.jsonl"
SHIPPED_POOL = SHIPPED_QUERIES.with_name("judged_docs.realcode_godot4.dev.jsonl")
# The grade files of data/grades/ the shipped model (store/guide_model.json) was fitted on, after the pool and in
# the order it read them: the digest follows the order, and so would a pair graded twice. Every dev grade file of
# its fit (stop 53) but the two kept as checks (holdout24, random40); the files graded after it are not read.
SHIPPED_FIT = (
    "docs.realcode_godot4.dev.all_accepts.jsonl",
    "docs.realcode_godot4.dev.constants_added.jsonl",
    "docs.realcode_godot4.dev.shared_construct_candidates.jsonl",
    "docs.realcode_godot4.dev.copy_anchor_changed.jsonl",
    "docs.realcode_godot4.dev.foreign_section_removed.jsonl",
    "docs.realcode_godot4.dev.hub_page_accepts.jsonl",
    "docs.realcode_godot4.dev.pool_new_accepts.jsonl",
    "docs.realcode_godot4.dev.shared_construct_added.jsonl",
    "docs.realcode_godot4.dev.other_members_removed.jsonl",
    "docs.realcode_godot4.dev.random24_candidates.jsonl",
    "docs.realcode_godot4.dev.rest_accepts.jsonl",
    "docs.realcode_godot4.dev.same_evidence_added.jsonl",
    "docs.realcode_godot4.dev.resolution_added.jsonl",
    "docs.realcode_godot4.dev.resolution_added_elsewhere.jsonl",
    "docs.realcode_godot4.dev.shared_construct_added_elsewhere.jsonl",
)


def shipped_judged() -> list[Path]:
    """What `fit-guides` reads by default: the shipped pool, then the grade files the shipped model was fitted on."""
    return [SHIPPED_POOL, *(GRADES_DIR / name for name in SHIPPED_FIT)]


def data_digest(paths: list[Path]) -> str:
    """The model's `data_digest`: sha256 over the judged files' bytes, in the order they are read."""
    return "sha256:" + hashlib.sha256(b"".join(Path(p).read_bytes() for p in paths)).hexdigest()


def shown_path(path: Path) -> str:
    """A data file as the model names it: relative to the checkout (data/grades/..., ../shared/eval/...)."""
    return Path(os.path.relpath(os.path.abspath(path), ROOT)).as_posix()


CHUNK_SHARE_MIN = 0.01  # members used by fewer chunks are stored as unused (the file stays small)
PAGE_RATE_MIN = 0.01


def is_guide(record_id: str) -> bool:
    return not record_id.startswith("classes/class_")


def collect(retriever, queries, quiet: bool = False) -> tuple[list[dict], dict[str, dict]]:
    """F with the rules deciding guides: per chunk, its guide candidates and the pages it accepted."""
    cfg = RetrieveConfig(k=RetrieveConfig().rerank_top, k_api=100, guide_model=False)  # every shortlisted guide comes back
    rows, per_chunk = [], {}
    for q in tqdm(queries, desc="run F", disable=quiet, unit="chunk"):
        res = retriever.retrieve(q.chunk_text, "F", cfg, explain=False)
        accepted_pages = {c.page for c in res.by_table("docs_chunks") if is_guide(c.id)}
        per_chunk[q.id] = {"pages": sorted(accepted_pages)}
        seen = set()
        for c in res.results + res.rejected + res.cut:
            if c.table != "docs_chunks" or not is_guide(c.id) or c.id in seen:
                continue
            seen.add(c.id)
            cm, bm, em, v = c.info("codematch"), c.info("bm25"), c.info("embedding"), c.info("validate")
            cosine = em.cosine if em else (v.cosine if v else None)  # the one the validator read for a BM25-only record
            rows.append({"query_id": q.id, "record_id": c.id, "page": c.page, "accepted_by_rules": c.verdict == "accept",
                         "clone": cm.ratio if cm else 0.0, "bm25_rank": bm.rank if bm else None, "cosine": cosine})
    return rows, per_chunk


def chunk_shares(queries, ref) -> dict[str, float]:
    counts: Counter = Counter()
    for q in queries:
        facts = parse_chunk(q.chunk_text)
        res = resolve_uses(facts, ref)
        counts.update(set(res.apis) | set(global_uses(facts, res, ref)) | {callback_key(f) for f in chunk_callbacks(facts, ref)}
                      | chunk_classes(res, facts, ref) | {construct_key(c) for c in facts.constructs})
    n = max(1, len(queries))
    return {a: round(c / n, 4) for a, c in sorted(counts.items()) if c / n >= CHUNK_SHARE_MIN}


def page_rates(per_chunk: dict[str, dict]) -> tuple[Counter, int]:
    counts: Counter = Counter(p for v in per_chunk.values() for p in v["pages"])
    return counts, len(per_chunk)


# Evidence features may only count for a guide, damping features only against it: a weight fitted with the
# other sign (noise on a small pool) is set to 0 and the rest refitted, so the arithmetic stays readable.
# The code a record shares with the chunk (`clone`), its BM25 rank and its cosine are evidence too: a near-copy
# below `copy_source_share` must not weigh against a record.
SIGNS = {"api_code": 1, "api_prose": 1, "shared_global": 1, "shared_class": 1, "shared_construct": 1, "clone": 1,
         "bm25_rank": 1, "cosine": 1, "shared_callback": 1, "api_in_context": 1,
         "incompatible": -1, "foreign_class": -1, "hub_rate": -1}


def fit_signed(X: np.ndarray, y: np.ndarray, l2: float = 1.0) -> tuple[np.ndarray, float]:
    """fit_logistic with the SIGNS constraints, by dropping a wrong-signed feature and refitting."""
    keep = list(range(X.shape[1]))
    while True:
        w, b = fit_logistic(X[:, keep], y, l2)
        full = np.zeros(X.shape[1])
        full[keep] = w
        wrong = [i for i in keep if SIGNS.get(FEATURES[i], 0) * full[i] < 0]
        if not wrong:
            return full, b
        keep.remove(min(wrong, key=lambda i: SIGNS[FEATURES[i]] * full[i]))


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> tuple[np.ndarray, float]:
    """Weights and bias by Newton's method on the L2-penalised log loss (the bias is not penalised)."""
    n, d = X.shape
    A = np.hstack([X, np.ones((n, 1))])
    w = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(A @ w, -50, 50)))
        grad = A.T @ (p - y) + penalty * w
        H = A.T @ (A * (p * (1 - p))[:, None]) + np.diag(penalty) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(H, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w[:-1], float(w[-1])


def curve(p: np.ndarray, grades: np.ndarray) -> list[dict]:
    """Precision (share graded 2), share graded 0 and recall of the grade-2 pairs, at each threshold."""
    out = []
    total2 = int((grades == 2).sum())
    for t in sorted(set(np.round(p, 3).tolist()) | {0.0}, reverse=True):
        acc = p >= t
        n = int(acc.sum())
        if not n:
            continue
        out.append({"threshold": round(float(t), 3), "accepted": n, "precision": round(float((grades[acc] == 2).mean()), 4),
                    "share0": round(float((grades[acc] == 0).mean()), 4),
                    "recall": round(float((grades[acc] == 2).sum() / max(1, total2)), 4)})
    return out


# The share of the pool's grade-2 pairs a threshold must keep (out of fold) to be chosen for precision: below it,
# chunks lose their only direct record, which the coverage guard forbids (measured on the dev pool: a threshold
# keeping 0.26 of them took the chunks given a grade-2 record from 0.55 to 0.50; one keeping 0.40 held them).
MIN_RECALL = 0.35


def choose_threshold(points: list[dict], precision: float, share0: float, min_recall: float = MIN_RECALL) -> dict:
    """The lowest threshold (most recall) at which the accepts meet both targets and keep `min_recall` of the
    grade-2 pairs. Where none does, the misleading share decides: the lowest threshold whose accepts hold at
    most `share0` graded 0 (the precision target is then reported as missed)."""
    ok = [c for c in points if c["precision"] >= precision and c["share0"] <= share0 and c["recall"] >= min_recall]
    if ok:
        return min(ok, key=lambda c: c["threshold"]) | {"met": ["precision", "share0"]}
    safe = [c for c in points if c["share0"] <= share0 and c["accepted"] >= 5]
    if safe:
        return min(safe, key=lambda c: c["threshold"]) | {"met": ["share0"]}
    return max(points, key=lambda c: (c["precision"] - c["share0"], c["recall"])) | {"met": []}


@dataclass(frozen=True)
class FitOptions:
    """The settings of a fit (`godot-rag fit-guides`' options). `folds`: of the cross-validation by chunk; `l2`: the
    penalty; `precision`, `share0`: the targets the out-of-fold threshold must meet; `rows_cache`: F's candidates
    kept there and reused (a refit without rerunning F); `hub_every`: F also runs on every Nth other chunk (page
    rates); `threshold`: the one to store instead of the out-of-fold choice (measured on F's accepts;
    `threshold_from` says which it is)."""
    folds: int = 5
    l2: float = 1.0
    precision: float = 0.75
    share0: float = 0.05
    quiet: bool = False
    rows_cache: Path | None = None
    hub_every: int = 3
    threshold: float | None = None


class Candidates(NamedTuple):
    """What F gave (`collect`): each guide candidate's row, and per chunk the pages it accepted."""
    rows: list[dict]
    per_chunk: dict[str, dict]


class Fitted(NamedTuple):
    """The fitted weights and what the cross-validation found, over the graded pairs."""
    weights: np.ndarray
    bias: float
    points: list[dict]  # the out-of-fold precision/recall curve
    chosen: dict  # choose_threshold's point
    before: dict  # the rules' accepts on the same pairs
    grades: np.ndarray
    vetoed: np.ndarray  # the pairs a contradiction rejects


def fit(retriever, queries_path: Path, judged_path: Path | list[Path], opts: FitOptions = FitOptions()) -> dict:
    """`judged_path`: one judged file or several (the pool and the grades added beside it; a later file's grade
    of a pair overrides an earlier one's, as in the eval)."""
    queries = read_queries(queries_path)
    judged_paths = [Path(judged_path)] if isinstance(judged_path, (str, Path)) else [Path(p) for p in judged_path]
    grades = grades_of(judged_paths)
    pool_chunks = sorted({q for q, _ in grades})
    ref = retriever.class_reference()
    found = candidates(retriever, queries, set(pool_chunks), opts)
    share = chunk_shares(queries, ref)
    stats = DocsApiStats.build(retriever.records("docs_chunks"), ref, share)
    rates = page_rates(found.per_chunk)
    data = graded_pairs(retriever, queries, found, grades, stats)
    fitted = fit_model(data, opts)
    source = {"data_digest": data_digest(judged_paths),
              "fitted_on": {"judged": ", ".join(shown_path(p) for p in judged_paths), "queries": shown_path(Path(queries_path)),
                            "pool_chunks": len(pool_chunks), "chunks_run": rates[1]}}
    return {"model": model_of(fitted, opts, rates, share, source), "curve": fitted.points, "rows": data}


def candidates(retriever, queries, pool_chunks: set[str], opts: FitOptions) -> Candidates:
    """F's guide candidates (`collect`) of the judged chunks, and of every `hub_every`-th other chunk for the page
    acceptance rates; read from `rows_cache` where it exists, else kept there."""
    if opts.rows_cache is not None and opts.rows_cache.exists():
        cached = json.loads(opts.rows_cache.read_text())
        return Candidates(cached["rows"], cached["per_chunk"])
    runs = [q for i, q in enumerate(queries) if q.id in pool_chunks or i % opts.hub_every == 0]
    rows, per_chunk = collect(retriever, runs, opts.quiet)
    if opts.rows_cache is not None:
        opts.rows_cache.write_text(json.dumps({"rows": rows, "per_chunk": per_chunk}))
    return Candidates(rows, per_chunk)


def graded_pairs(retriever, queries, found: Candidates, grades: dict, stats: DocsApiStats) -> list[dict]:
    """Each graded (chunk, guide) pair of F's candidates with its features and what they rest on. The page rate of
    a chunk's own candidates leaves that chunk out."""
    counts, n_chunks = page_rates(found.per_chunk)
    by_id = {q.id: q for q in queries}
    renamed = retriever.renames().classes  # as the validator reads a chunk
    docs = retriever.records("docs_chunks")
    data = []
    parsed: dict[str, tuple] = {}
    for r in found.rows:
        key = (r["query_id"], r["record_id"])
        if key not in grades:
            continue
        q = by_id[r["query_id"]]
        if q.id not in parsed:
            facts = parse_chunk(q.chunk_text)
            res = resolve_uses(facts, stats.ref)
            parsed[q.id] = (facts, res, chunk_side(stats, res, facts, renamed))
        facts, res, side = parsed[q.id]
        own = r["page"] in found.per_chunk.get(q.id, {}).get("pages", [])
        rate = (counts[r["page"]] - own) / max(1, n_chunks - 1)  # leave the chunk itself out
        guide = GuideRecord(docs[r["record_id"]], clone=r["clone"], bm25_rank=r["bm25_rank"], cosine=r["cosine"],
                            hub_rate=rate)
        values, basis = guide_features(stats, res, facts, guide, side=side)
        data.append({**r, "grade": grades[key], "features": values, "basis": basis})
    return data


def fit_model(data: list[dict], opts: FitOptions) -> Fitted:
    """The weights from all graded pairs, and the threshold from the out-of-fold P(direct) (`out_of_fold`)."""
    X = np.array([[d["features"][f] for f in FEATURES] for d in data], dtype=float)
    g = np.array([d["grade"] for d in data])
    y = (g == 2).astype(float)
    # A pair a contradiction rejects is decided by that rule: the model neither learns from it nor accepts it
    # (out of fold its P is 0), so the curve is that of the whole decision. The share rules (`share_rule`) are not
    # vetoes here: the model decides without them where they do not apply (Godot 3 code, a chunk that uses no API),
    # so it learns from the guides that share nothing too (fitted without them, Godot 3 chunks got 250 more guides
    # on their text's likeness, 7 of a sample of 30 graded 0).
    vetoed = np.array([bool(contradictions(d["basis"])) for d in data], dtype=bool)
    oof = out_of_fold(data, X, y, vetoed, opts)
    points = curve(oof, g)
    chosen = choose_threshold(points, opts.precision, opts.share0)
    w, b = fit_signed(X[~vetoed], y[~vetoed], opts.l2)
    return Fitted(w, b, points, chosen, rules_on(data, g), g, vetoed)


def out_of_fold(data: list[dict], X: np.ndarray, y: np.ndarray, vetoed: np.ndarray, opts: FitOptions) -> np.ndarray:
    """Each pair's P(direct) from the weights fitted on the other folds (by chunk); 0 for a vetoed pair."""
    chunks = sorted({d["query_id"] for d in data})
    fold_of = {c: i % opts.folds for i, c in enumerate(chunks)}
    oof = np.zeros(len(data))
    for k in range(opts.folds):
        test = np.array([fold_of[d["query_id"]] == k for d in data])
        w, b = fit_signed(X[~test & ~vetoed], y[~test & ~vetoed], opts.l2)
        oof[test] = 1.0 / (1.0 + np.exp(-(X[test] @ w + b)))
    oof[vetoed] = 0.0
    return oof


def rules_on(data: list[dict], g: np.ndarray) -> dict:
    """What the rules accepted of the same pairs (F with the rules deciding guides), as the curve counts it."""
    rules = np.array([d["accepted_by_rules"] for d in data])
    return {"accepted": int(rules.sum()), "precision": round(float((g[rules] == 2).mean()), 4) if rules.any() else None,
            "share0": round(float((g[rules] == 0).mean()), 4) if rules.any() else None,
            "recall": round(float((g[rules] == 2).sum() / max(1, (g == 2).sum())), 4)}


def model_of(fitted: Fitted, opts: FitOptions, rates: tuple[Counter, int], share: dict[str, float], source: dict) -> dict:
    """The model as `store/guide_model.json` holds it. `source`: its data_digest and fitted_on."""
    counts, n_chunks = rates
    g, points = fitted.grades, fitted.points
    return {
        "weights": {f: round(float(x), 4) for f, x in zip(FEATURES, fitted.weights)}, "bias": round(fitted.bias, 4),
        "threshold": fitted.chosen["threshold"] if opts.threshold is None else opts.threshold,
        "threshold_from": "out_of_fold" if opts.threshold is None else "given",
        "page_accept_rate": {p: round(c / n_chunks, 4) for p, c in sorted(counts.items()) if c / n_chunks >= PAGE_RATE_MIN},
        "chunk_share": share,
        **source,
        "n": {"pairs": len(g), "grade2": int((g == 2).sum()), "grade0": int((g == 0).sum()),
              "vetoed": int(fitted.vetoed.sum())},
        "cv": {"folds": opts.folds, "by": "chunk", "l2": opts.l2, "target_precision": opts.precision,
               "target_share0": opts.share0, "chosen": fitted.chosen, "rules_on_the_same_pairs": fitted.before,
               "curve": points[:: max(1, len(points) // 20)]},  # out of fold, every few thresholds
    }
