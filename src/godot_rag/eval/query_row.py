"""per_query.jsonl: one query's columns under one strategy (ranking, mappings, the port rule, API coverage)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..retrieve.engine.types import RetrieveResult
from .diagnose import accepted_mappings, accepted_symbols, wrong_mapping
from .metrics import mapping_counts, mapping_triple
from .port_rule import PortTrees
from .queries import Query

Row = dict[str, Any]
Grades = dict[tuple[str, str], int]


def api_metrics(q: Query, result: RetrieveResult) -> Row:
    """The real-code API metrics (../shared/eval/README.md): page coverage, member coverage, class-reference precision."""
    docs = result.by_table("docs_chunks")
    pages = {c.page for c in docs}
    out: Row = {"zero_docs": not docs}
    class_recs = [c for c in docs if (c.page or "").startswith("classes/")]
    out["classref_accepted"] = len(class_recs)
    out["classref_on_used_class"] = sum(1 for c in class_recs if c.page in q.relevant_api_pages)
    out["tutorial_accepted"] = len(docs) - len(class_recs)
    if q.relevant_api_pages:
        hit = [p for p in q.relevant_api_pages if p in pages]
        out["api_page_coverage"] = len(hit) / len(q.relevant_api_pages)
        out["api_page_any"] = float(bool(hit))
        symbols = accepted_symbols(result)
        out["api_members"] = len(q.relevant_api)
        out["api_members_found"] = sum(1 for a in q.relevant_api if a in symbols)
    return out


def table_counts(accepted: set[tuple[str, str, str]], gold: set[tuple[str, str, str]]) -> dict[str, list[int]]:
    """Per converter table: [accepted and in the gold, accepted and not in it]."""
    out: dict[str, list[int]] = {}
    for m in accepted:
        out.setdefault(m[0], [0, 0])[0 if m in gold else 1] += 1
    return out


def port_judged(q: Query, strategy: str, result: RetrieveResult, trees: PortTrees) -> dict[str, Any]:
    """The accepted prose and syntax mappings of a Godot 3 chunk, judged by the port rule (eval/port_rule.py)."""
    tp = fp = 0
    failures = []
    for c in result.by_table("api_mapping"):
        if mapping_triple(c.id) is not None:
            continue
        applied = trees.applied(q.id, c.payload)
        if applied is None:
            continue
        tp, fp = tp + applied, fp + (not applied)
        if not applied:
            failures.append(wrong_mapping(q, strategy, c, "accepted, and the demos' port did not apply it "
                                                          "(port rule on ../shared/realcode)"))
    return {"tp": tp, "fp": fp, "failures": failures}


def migration_flags(q: Query, result: RetrieveResult) -> Row:
    """False migration over every table (with a per-table breakdown) and migration findings, on clean chunks."""
    tables = sorted({c.id.split(":", 1)[0] for c in result.by_table("api_mapping")})
    findings = [c for c in result.by_table("label_prototypes") if (c.payload.get("task_type") == "migration")]
    return {"false_migration_any": bool(tables), "false_migration_tables": tables,
            "false_migration": "class_renames" in tables, "migration_finding": bool(findings)}


def judged_row(q: Query, strategy: str, result: RetrieveResult, grades: Grades) -> tuple[dict[str, list[str]], list[Row]]:
    """The accepted docs records of a judged chunk by group, and a failure per accepted record graded 0."""
    accepted: dict[str, list[str]] = defaultdict(list)
    failures = []
    for c in result.by_table("docs_chunks"):
        group = c.group or "guides"
        accepted[group].append(c.id)
        if grades.get((q.id, c.id)) == 0:
            v = c.info("validate")
            failures.append({"query": q.id, "file": q.file, "strategy": strategy, "accepted_grade0": c.id, "group": group,
                             "reason": c.reason, "model": (v.model if v else None),
                             "evidence": [i.literal for i in (v.evidence if v else [])][:8]})
    return dict(accepted), failures


def stage_ms(result: RetrieveResult) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for s in result.trace.stages:
        out[s.stage.split(":")[0]] += s.ms
    return dict(out)


def demoted_ok(q: Query, pages: list[str]) -> bool:
    """Every demoted page that was returned ranks below the best relevant one."""
    best_rel = min((pages.index(p) for p in q.relevant_pages if p in pages), default=None)
    return all(p not in pages or (best_rel is not None and pages.index(p) > best_rel) for p in q.demoted_pages)


def mapping_columns(q: Query, result: RetrieveResult, accepted: set[tuple[str, str, str]]) -> Row:
    tp, fp, fn = mapping_counts(accepted, set(q.relevant_mappings))
    tables = table_counts(accepted, set(q.relevant_mappings)) if q.variant == "godot3" or q.relevant_mappings else {}
    return {"map_tp": tp, "map_fp": fp, "map_fn": fn, "gold_mappings": len(q.relevant_mappings),
            "prose_accepted": sum(1 for c in result.by_table("api_mapping") if mapping_triple(c.id) is None),
            "map_tables": tables}


@dataclass
class PortColumns:
    """What the port rule says of a Godot 3 chunk's accepted mappings."""
    columns: Row
    failures: list[Row]
    removed: set[tuple[str, str, str]]  # converter pairs the port removed by a rewrite


def port_columns(q: Query, strategy: str, result: RetrieveResult, trees: PortTrees,
                 exists: Callable[[str], bool]) -> PortColumns:
    accepted = accepted_mappings(result)
    prose = port_judged(q, strategy, result, trees)
    # A script the trees lack in either version keeps the gold as it is.
    removed = trees.removed(q.id, q.chunk_text, exists) or set()
    removed_tp, removed_fp, removed_fn = mapping_counts(accepted, set(q.relevant_mappings) | removed)
    columns = {"prose_tp": prose["tp"], "prose_judged": prose["tp"] + prose["fp"],
               "removed_tp": removed_tp, "removed_fp": removed_fp, "removed_fn": removed_fn}
    return PortColumns(columns, prose["failures"], removed)
