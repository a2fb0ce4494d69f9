"""Union of the retriever lists (duplicates merged, sources kept), the fused score, and the merge
of the per-segment lists.

- `rrf`: sum over lists of w / (rrf_k + rank); rrf_k = 60 by default (Cormack et al.).
- `maxnorm` (default for D and F): each list's scores are divided by that list's best
  score (BM25 / max BM25, cosine / max cosine), then summed with weights; missing = 0.
- `minmax` / `zscore`: each list's scores are normalised, then summed with weights;
  a candidate missing from a list gets that list's minimum (0 after min-max).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine.stage import Stage
from ..engine.state import Pool, Pooled, QueryState
from ..engine.trace import SCORE_DIGITS, FuseInfo, ListEntry, MergeInfo, UnionInfo, built_by, later
from ..engine.types import Candidate
from .ranked_lists import RankedLists
from .resources import RecallResources

SOURCES = ("bm25", "embedding")  # the union's order: a tie in score is then broken by id
NO_RANK = 10 ** 6  # sorts after every rank: a list the record is not in


def _normalise(scores: list[float], method: str) -> list[float]:
    a = np.asarray(scores, dtype=float)
    if len(a) == 0:
        return []
    if method == "maxnorm":
        top = a.max()
        return (a / top).tolist() if top > 0 else [0.0] * len(a)
    if method == "minmax":
        span = a.max() - a.min()
        return ((a - a.min()) / span).tolist() if span > 0 else [1.0] * len(a)
    std = a.std()
    return ((a - a.mean()) / std).tolist() if std > 0 else [0.0] * len(a)


Entries = dict[str, tuple[int, float]]  # list name -> (rank, rounded score) of one record


def list_entries(lists: dict[str, list[Candidate]], whole: bool = True) -> dict[str, Entries]:
    """Each record's (rank, score) in each list it is in, the lists in the union's order: what the union's
    info shows and what the fusion sums. `whole`: no list was prefiltered (otherwise a candidate's `rank`
    is its rank in its full list)."""
    seen: dict[str, Entries] = {}
    for name in [s for s in SOURCES if s in lists] + [s for s in lists if s not in SOURCES]:
        for i, c in enumerate(lists[name]):
            seen.setdefault(c.id, {})[name] = (i + 1 if whole else c.rank, round(c.score, SCORE_DIGITS))  # type: ignore[assignment]
    return seen


def _union_info(source: str, entries: Entries) -> UnionInfo:
    return UnionInfo(source=source, inputs={n: ListEntry(rank=r, score=sc) for n, (r, sc) in entries.items()})


def union(lists: dict[str, list[Candidate]], prefix: str = "", whole: bool = True,
          seen: dict[str, Entries] | None = None) -> list[Candidate]:
    """One candidate per record, in order of first appearance; each keeps every list's info. `whole`: no
    list was prefiltered (otherwise each candidate's `rank` is its rank in its full list). `seen`: the
    lists' `list_entries`, when the caller has them."""
    merged: dict[str, Candidate] = {}
    for name in [s for s in SOURCES if s in lists] + [s for s in lists if s not in SOURCES]:
        for c in lists[name]:
            if c.id not in merged:
                merged[c.id] = c.derive()
            else:
                merged[c.id].absorb(c)
    if seen is None:
        seen = list_entries(lists, whole)
    for cid, cand in merged.items():
        entries = seen[cid]
        cand.source = prefix + ("both" if len(entries) > 1 else next(iter(entries)))
        cand.add_stage("union", built_by(UnionInfo, _union_info, cand.source, entries))
    return list(merged.values())


def _normalised(lst: list[Candidate], full: np.ndarray | None, method: str) -> tuple[dict[str, float], float]:
    """(id -> normalised score, the list's lowest normalised score), over the full list when the prefilter
    left only some of it (`full`: its scores in rank order; a candidate's `rank` is its place there)."""
    if full is None:
        values = _normalise([c.score for c in lst], method)
        return dict(zip((c.id for c in lst), values)), (min(values) if values else 0.0)
    values = _normalise(full.tolist(), method)
    return {c.id: values[(c.rank or 0) - 1] for c in lst}, (min(values) if values else 0.0)


FusedEntries = dict[str, tuple[int, float, float | None]]  # list name -> (rank, score, normalised score)


def fused_inputs(entries: FusedEntries) -> dict[str, ListEntry]:
    return {n: ListEntry(rank=r, score=sc, normalised=nv) if nv is not None else ListEntry(rank=r, score=sc)
            for n, (r, sc, nv) in entries.items()}


class Fusion(NamedTuple):
    """How lists are fused: `method` (maxnorm, minmax, zscore, rrf), each list's weight, and RRF's k."""
    method: str
    weights: dict[str, float]
    rrf_k: int


def fused_scores(cands: list[Candidate], lists: dict[str, list[Candidate]], fusion: Fusion,
                 full: dict[str, np.ndarray | None] | None = None,
                 seen: dict[str, Entries] | None = None) -> list[tuple[float, FusedEntries]]:
    """Each candidate's fused score and its entries per list (`fused_inputs` makes the trace's).
    `full`: list name -> its scores before the prefilter (RankedLists.full_scores), when it was prefiltered.
    `seen`: the lists' `list_entries`, when the caller has them."""
    method, weights, rrf_k = fusion
    both = {name: _normalised(lst, (full or {}).get(name), method) for name, lst in lists.items()} if method != "rrf" else {}
    norm = {name: v for name, (v, _) in both.items()}
    floor = {name: low for name, (_, low) in both.items()} if method == "zscore" else {}
    if seen is None:
        seen = list_entries(lists, all((full or {}).get(n) is None for n in lists))
    out: list[tuple[float, FusedEntries]] = []
    for cand in cands:
        entries = seen[cand.id]
        if method == "rrf":
            inputs: FusedEntries = {n: (r, sc, None) for n, (r, sc) in entries.items()}
            fused = sum(weights.get(n, 1.0) / (rrf_k + r) for n, (r, _, _) in inputs.items())
        else:
            inputs = {n: (r, sc, round(norm[n][cand.id], SCORE_DIGITS)) for n, (r, sc) in entries.items()}
            fused = sum(weights.get(n, 1.0) * ((inputs[n][2] or 0.0) if n in inputs else floor.get(n, 0.0)) for n in lists)
        out.append((float(fused), inputs))
    return out


def entries_of(found: RankedLists, table: str, ti: int, lists: dict[str, list[Candidate]]) -> dict[str, Entries]:
    """`list_entries` of one text's lists, worked out once per query: the union shows them, the fusion sums them."""
    key = (table, ti)
    if key not in found.entries:
        found.entries[key] = list_entries(lists, all(found.full_scores(table, ti, n) is None for n in lists))
    return found.entries[key]


def run_union(q: QueryState[RecallResources], lists: RankedLists, source_prefix: str | None = None) -> Pooled:
    """`source_prefix`: E labels its sources `profile:...`."""
    out: Pool = {}
    for table in q.tables:
        out[table] = [union(per_text, source_prefix or "", seen=entries_of(lists, table, ti, per_text))
                      for ti, per_text in enumerate(lists.of(table))]
        q.record_ids(table, "union", out[table][0])
        q.note(**{table: {"union": len(out[table][0]), "texts": len(out[table])}})
    return Pooled(out)


def _fuse_info(method: str, rrf_k: int | None, weights: dict[str, float], entries: FusedEntries, score: float,
               rank: int) -> FuseInfo:
    return FuseInfo(method=method, rrf_k=rrf_k, weights=weights, inputs=fused_inputs(entries), score=score, rank=rank)


def run_fuse(q: QueryState[RecallResources], pool: Pool, lists: RankedLists) -> Pooled:
    """Re-scores the union's candidates in place: they are this query's own copies, made by the union."""
    cfg = q.cfg
    weights = {"bm25": cfg.weight_bm25, "embedding": cfg.weight_embedding}
    rrf_k = cfg.rrf_k if cfg.fusion == "rrf" else None
    fusion = Fusion(cfg.fusion, weights, cfg.rrf_k)
    out: Pool = {}
    for table, per_text in pool.items():
        out[table] = []
        for ti, cands in enumerate(per_text):
            per_list = lists[table][ti]
            scored = fused_scores(cands, per_list, fusion,
                                  {n: lists.full_scores(table, ti, n) for n in per_list},
                                  seen=entries_of(lists, table, ti, per_list))
            fused = []
            for c, (score, inputs) in zip(cands, scored):
                c.score = score
                fused.append((c, inputs))
            fused.sort(key=lambda x: (-x[0].score, x[0].id))
            for i, (c, inputs) in enumerate(fused):
                c.rank = i + 1
                c.add_stage("fuse", built_by(FuseInfo, _fuse_info, cfg.fusion, rrf_k, weights, inputs,
                                             round(c.score, SCORE_DIGITS), i + 1))
            out[table].append([c for c, _ in fused])
        q.record_ids(table, "fuse", out[table][0])
    q.note(method=cfg.fusion, weights=weights)
    return Pooled(out)


def merge_segments(whole: list[Candidate], segments: list[list[Candidate]]) -> list[Candidate]:
    """Interleave the whole-chunk list with per-segment lists: a candidate's merged rank is its
    best rank in any list (ties go to candidates of the whole-chunk list), so the best answer
    for each part of a chunk that touches several topics reaches the top ranks."""
    lists = [whole, *segments]
    merged: dict[str, Candidate] = {}
    ranks: dict[str, list[int | None]] = {}
    for li, cands in enumerate(lists):
        for i, c in enumerate(cands):
            if c.id not in merged:
                merged[c.id] = c  # this query's own copy, from the stage before; the other texts' copies go
            ranks.setdefault(c.id, [None] * len(lists))[li] = i + 1

    def key(cid: str) -> tuple[int, int, int, str]:
        r = ranks[cid]
        return (min(x for x in r if x), r[0] or NO_RANK, min((x for x in r[1:] if x), default=NO_RANK), cid)

    out = [merged[cid] for cid in sorted(merged, key=key)]
    for i, cand in enumerate(out):
        r = ranks[cand.id]
        cand.rank = i + 1
        cand.score = 1.0 / (i + 1)  # the merge is by rank; the score is the reciprocal merged rank
        cand.add_stage("merge", later(MergeInfo, whole_rank=r[0], segment_ranks=r[1:], best_rank=min(x for x in r if x),
                                          score=round(cand.score, SCORE_DIGITS), rank=i + 1))
    return out


def run_merge(q: QueryState[RecallResources], pool: Pool) -> Pooled:
    out: Pool = {}
    for table, per_text in pool.items():
        if len(per_text) > 1:
            out[table] = [merge_segments(per_text[0], per_text[1:])]
            q.record_ids(table, "merge", out[table][0])
            q.note(**{table: {"segments": len(per_text) - 1, "merged": len(out[table][0])}})
        else:
            out[table] = per_text
    return Pooled(out)


UNION = Stage("union", run_union, "one candidate per record, source bm25 / embedding / both")
FUSE = Stage("fuse", run_fuse, "fused score: each list normalised by its best score (maxnorm), weighted, summed")
MERGE = Stage("merge", run_merge, "per-segment lists merged by best rank, so each part's best evidence reaches the top")
