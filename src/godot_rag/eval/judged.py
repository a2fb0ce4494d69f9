"""Judged docs evidence (`judged_docs.*.jsonl`, and the grade files of `data/grades/`, `docs.*.jsonl`): graded
(chunk, record) pairs, 2 direct, 1 weak, 0 misleading; and what they say about the records a strategy accepted, per
group (`guides`, `api_reference`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..jsonlines import iter_jsonl
from .queries import QueryFileError

JUDGED_GLOB = "judged_docs.*.jsonl"
GRADES_GLOB = "grades/docs.*.jsonl"  # data/grades/, the project's grade files
GROUPS = ("guides", "api_reference")


def is_judged_file(path: Path) -> bool:
    return Path(path).match(JUDGED_GLOB) or Path(path).match(GRADES_GLOB)


def read_judged(path: Path) -> list[dict]:
    out = []
    for n, rec in iter_jsonl(path, lambda n, msg: QueryFileError(f"{path}:{n}: {msg}")):
        if not isinstance(rec, dict):
            raise QueryFileError(f"{path}:{n}: each line must be a JSON object")
        for name in ("query_id", "record_id"):
            if not (isinstance(rec.get(name), str) and rec[name]):
                raise QueryFileError(f"{path}:{n}: field '{name}': required non-empty string")
        if rec.get("grade") not in (0, 1, 2) or isinstance(rec.get("grade"), bool):
            raise QueryFileError(f"{path}:{n}: field 'grade': must be 0, 1 or 2")
        out.append(rec)
    return out


def grades_of(paths: list[Path]) -> dict[tuple[str, str], int]:
    """(query id, record id) -> grade; a later file overrides an earlier one for the same pair."""
    out: dict[tuple[str, str], int] = {}
    for p in paths:
        for rec in read_judged(p):
            out[(rec["query_id"], rec["record_id"])] = rec["grade"]
    return out


def judged_metrics(accepted: dict[str, dict[str, list[str]]], grades: dict[tuple[str, str], int]) -> dict:
    """`accepted`: query id -> group -> accepted docs record ids, for the judged chunks. Per group: the share of
    graded accepts graded 2 and graded 0, the ungraded accepts; the share of chunks given a grade-2 record; and the
    recall of the pool's grade-2 records (mean per chunk, over chunks that have one)."""
    pool2: dict[str, set[str]] = {}
    for (q, r), g in grades.items():
        if g == 2:
            pool2.setdefault(q, set()).add(r)
    out: dict[str, Any] = {}
    for group in (*GROUPS, "all"):
        graded = ungraded = n2 = n0 = 0
        for q, groups in accepted.items():
            ids = [r for gr, rs in groups.items() if group in (gr, "all") for r in rs]
            for r in ids:
                grade = grades.get((q, r))
                if grade is None:
                    ungraded += 1
                    continue
                graded += 1
                n2 += grade == 2
                n0 += grade == 0
        out[group] = {"accepted": graded + ungraded, "graded": graded, "ungraded": ungraded,
                      "share2": round(n2 / graded, 4) if graded else None, "share0": round(n0 / graded, 4) if graded else None}
    chunks = list(accepted)
    with2 = [q for q in chunks if any(grades.get((q, r)) == 2 for rs in accepted[q].values() for r in rs)]
    recalls = [len(pool2[q] & {r for rs in accepted[q].values() for r in rs}) / len(pool2[q]) for q in chunks if q in pool2]
    out["chunks"] = len(chunks)
    out["chunks_with_grade2"] = round(len(with2) / len(chunks), 4) if chunks else None
    out["pool_grade2_recall"] = round(sum(recalls) / len(recalls), 4) if recalls else None
    return out
