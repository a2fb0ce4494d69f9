"""TREC files: runs (`qid Q0 docid rank score tag`) and qrels (`qid 0 docid grade`), scored by page."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .metrics import dedupe_pages, score_queries


def read_run(path: Path) -> dict[str, list[str]]:
    rows = defaultdict(list)
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ValueError(f"{path}:{n}: a run line has 6 fields (qid Q0 docid rank score tag), got {len(parts)}")
        rows[parts[0]].append((int(parts[3]), parts[2]))
    return {q: dedupe_pages([d for _, d in sorted(v)]) for q, v in rows.items()}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise ValueError(f"{path}:{n}: a qrels line has 4 fields (qid 0 docid grade), got {len(parts)}")
        out[parts[0]][parts[2]] = int(parts[3])
    return dict(out)


def score_trec(run_path: Path, qrels_path: Path) -> dict[str, float]:
    """Mean of each metric over the qrels' queries (a query the run lacks scores 0)."""
    per_query = score_queries(read_run(run_path), read_qrels(qrels_path))
    names = sorted({m for row in per_query.values() for m in row})
    return {m: round(sum(row[m] for row in per_query.values()) / len(per_query), 4) for m in names}
