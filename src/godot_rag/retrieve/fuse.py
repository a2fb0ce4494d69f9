"""Union of retriever lists with duplicates merged, and fused scores.

- `rrf`: sum over lists of w / (rrf_k + rank); rrf_k = 60 by default (Cormack et al.).
- `maxnorm` (default for D and F): each list's scores are divided by that list's best
  score (BM25 / max BM25, cosine / max cosine), then summed with weights; missing = 0.
- `minmax` / `zscore`: each list's scores are normalised, then summed with weights;
  a candidate missing from a list gets that list's minimum (0 after min-max).
"""
from __future__ import annotations

import numpy as np

from .types import Candidate, sort_and_rank


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


def fuse_lists(lists: dict[str, list[Candidate]], weights: dict[str, float], method: str, rrf_k: int,
               stage: str = "fuse") -> list[Candidate]:
    """`lists` maps a retriever name (bm25, embedding) to its ranked candidates for one table."""
    merged: dict[str, Candidate] = {}
    per: dict[str, dict[str, dict]] = {}
    for name, cands in lists.items():
        norm = _normalise([c.score for c in cands], method) if method != "rrf" else []
        for i, c in enumerate(cands):
            entry = {"rank": i + 1, "score": round(c.score, 6)}
            if method != "rrf":
                entry["normalised"] = round(norm[i], 6)
            per.setdefault(c.id, {})[name] = entry
            if c.id not in merged:
                merged[c.id] = c.derive()
            else:
                for k, v in c.trace.items():
                    merged[c.id].trace.setdefault(k, v)
    floor = {}
    if method == "zscore":
        for name, cands in lists.items():
            norm = _normalise([c.score for c in cands], method)
            floor[name] = min(norm) if norm else 0.0
    out = []
    for cid, cand in merged.items():
        seen = per[cid]
        if method == "rrf":
            fused = sum(weights.get(n, 1.0) / (rrf_k + e["rank"]) for n, e in seen.items())
        else:
            fused = sum(weights.get(n, 1.0) * (seen[n]["normalised"] if n in seen else floor.get(n, 0.0)) for n in lists)
        sources = sorted(seen)
        cand.source = "both" if len(sources) > 1 else sources[0]
        cand.score = float(fused)
        cand.add_stage(stage, {"method": method, "rrf_k": rrf_k if method == "rrf" else None, "weights": weights,
                               "inputs": seen, "source": cand.source, "score": round(fused, 6)})
        out.append(cand)
    return sort_and_rank(out, stage)


def merge_segments(whole: list[Candidate], segments: list[list[Candidate]], stage: str = "segments") -> list[Candidate]:
    """Interleave the whole-chunk list with per-segment lists: a candidate's merged rank is its
    best rank in any list (ties go to candidates of the whole-chunk list), so the best answer
    for each part of a chunk that touches several topics reaches the top ranks."""
    lists = [whole] + segments
    merged: dict[str, Candidate] = {}
    ranks: dict[str, list[int | None]] = {}
    for li, cands in enumerate(lists):
        for i, c in enumerate(cands):
            if c.id not in merged:
                merged[c.id] = c.derive()
            ranks.setdefault(c.id, [None] * len(lists))[li] = i + 1
    big = 10 ** 6

    def key(cid: str):
        r = ranks[cid]
        return (min(x for x in r if x), r[0] or big, min((x for x in r[1:] if x), default=big), cid)

    out = [merged[cid] for cid in sorted(merged, key=key)]
    for i, cand in enumerate(out):
        r = ranks[cand.id]
        cand.rank = i + 1
        cand.score = 1.0 / (i + 1)  # the merge is by rank; the score is the reciprocal merged rank
        cand.trace[stage] = {"whole_rank": r[0], "segment_ranks": r[1:], "best_rank": min(x for x in r if x),
                             "score": round(cand.score, 6), "rank": i + 1}
    return out
