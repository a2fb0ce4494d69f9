"""`godot-rag eval`: every strategy on the same queries, side by side."""
from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..retrieve.pipeline import Retriever
from ..retrieve.version import EVIDENCE_STATUSES
from .judged import JUDGED_GLOB, grades_of, is_judged_file, judged_metrics
from .metrics import dedupe_pages, mapping_counts, page_of, percentile, score_queries
from .port_rule import PortTrees
from .queries import Query, read_queries
from .report import write_outputs

RENAME_PREFIX_SKIP = ("migration_guide", "gdscript_syntax")


def mapping_triple(mapping_id: str) -> tuple[str, str, str] | None:
    """`class_renames:AnimatedSprite->AnimatedSprite2D` -> the gold's (table, from, to); None for records
    that do not come from the converter's tables (the gold cannot judge those)."""
    table, _, rest = mapping_id.partition(":")
    if table in RENAME_PREFIX_SKIP or "->" not in rest:
        return None
    src, _, dst = rest.partition("->")
    return table, src, dst


def first_rank(ids: list[str], page: str) -> int | None:
    for i, cid in enumerate(ids, 1):
        if page_of(cid) == page:
            return i
    return None


def diagnose(q: Query, strategy: str, result, k: int) -> list[dict]:
    """One entry per relevant page or mapping that was missed, and per wrongly accepted mapping."""
    out = []
    docs = [c.id for c in result.by_table("docs_chunks")]
    pages = dedupe_pages(docs)
    ids = result.trace.candidate_ids.get("docs_chunks", {})
    rejected = {c.id: c for c in result.rejected if c.table == "docs_chunks"}
    for page in q.relevant_pages:
        rank = pages.index(page) + 1 if page in pages else None
        if rank is not None and rank <= k:
            continue
        ranks = {stage: first_rank(lst, page) for stage, lst in ids.items()}
        # the last order before the reranker and the validator
        pre = next((s for s in ("merge", "codematch", "fuse", "union") if s in ranks), "union")
        if strategy == "A":
            stage = "no tsquery hit" if not docs else "ranked below k by ts_rank_cd"
        elif not any(ranks.get(s) for s in ("bm25", "embedding")):
            used = [s for s in ("bm25", "embedding") if s in ids]
            stage = "never retrieved by " + " or ".join("BM25" if s == "bm25" else "embedding" for s in used)
        elif ranks.get(pre) is None or (ranks.get(pre) or 0) > k and "rerank" not in ranks:
            stage = f"cut after the {pre} stage"
        elif "rerank" in ranks and (ranks["rerank"] is None or ranks["rerank"] > k):
            stage = "reranked below k"
        else:
            rej = next((c for cid, c in rejected.items() if page_of(cid) == page), None)
            stage = f"rejected by the validator: {rej.reason}" if rej else "ranked below k"
        best = next((c for c in result.results + result.rejected if page_of(c.id) == page), None)
        terms = []
        if best is not None and best.info("explain") is not None:
            terms = [t["term"] for t in best.info("explain").matched_terms[:10]]
        out.append({"query": q.id, "file": q.file, "variant": q.variant, "strategy": strategy, "missed": page,
                    "stage": stage, "final_page_rank": rank, "stage_ranks": ranks, "matched_terms": terms})
    accepted = _accepted_mappings(result)
    gold = set(q.relevant_mappings)
    for m in sorted(gold - accepted):
        ids_m = result.trace.candidate_ids.get("api_mapping", {})
        mid = f"{m[0]}:{m[1]}->{m[2]}"
        rej = next((c for c in result.rejected if c.id == mid), None)
        stage = (f"rejected by the validator: {rej.reason}" if rej else
                 "never retrieved" if not any(mid in lst for lst in ids_m.values()) else "ranked below k")
        out.append({"query": q.id, "file": q.file, "strategy": strategy, "missed_mapping": list(m), "stage": stage})
    for c in result.by_table("api_mapping"):
        triple = mapping_triple(c.id)
        wrong = (q.expect_no_mappings or (triple is not None and gold and triple not in gold)
                 or (triple is not None and not gold and q.variant == "godot3"))
        if not wrong:
            continue
        out.append(wrong_mapping(q, strategy, c, "accepted without being in the gold"))
    if q.relevant_api_pages:
        accepted_pages = {c.page for c in result.by_table("docs_chunks")}
        symbols = _accepted_symbols(result)
        for api in q.relevant_api:
            if api in symbols:
                continue
            resolved = {u["api"] for u in (result.trace.resolve or {}).get("uses", [])}
            api_ids = result.trace.candidate_ids.get("docs_chunks", {}).get("api", [])
            if api not in resolved:
                stage = "not resolved by the resolve stage"
            elif not api_ids:
                stage = "resolved, but no class-reference record documents it"
            else:
                rej = next((c for c in result.rejected if c.table == "docs_chunks" and api in _symbols_of(c)), None)
                stage = f"rejected by the validator: {rej.reason}" if rej else "cut at k"
            out.append({"query": q.id, "file": q.file, "strategy": strategy, "missed_api": api,
                        "page_accepted": api_page(api, q) in accepted_pages, "stage": stage})
    return out


def wrong_mapping(q: Query, strategy: str, c, stage: str) -> dict:
    """A failures.jsonl entry for a wrongly accepted mapping, with the occurrences it was accepted on."""
    v = c.info("validate")
    occ = [o for o in ((v.occurrences if v else None) or []) if o.status in EVIDENCE_STATUSES]
    return {"query": q.id, "file": q.file, "strategy": strategy, "wrongly_accepted_mapping": c.id, "stage": stage,
            "occurrences": [{"line": o.line, "col": o.col, "region": o.region, "status": o.status, "why": o.why}
                            for o in occ[:5]]}


def _accepted_mappings(result) -> set[tuple[str, str, str]]:
    """The converter-table triples of the accepted mappings (prose and syntax mappings have none)."""
    return {t for c in result.by_table("api_mapping") if (t := mapping_triple(c.id)) is not None}


def _symbols_of(c) -> set[str]:
    return set(c.payload.get("api_symbols") or []) | ({c.payload["symbol"]} if c.payload.get("symbol") else set())


def _accepted_symbols(result) -> set[str]:
    out: set[str] = set()
    for c in result.by_table("docs_chunks"):
        out |= _symbols_of(c)
    return out


def api_page(api: str, q: Query) -> str | None:
    cls = api.split(".", 1)[0].lower()
    return next((p for p in q.relevant_api_pages if p == f"classes/class_{cls}"), None)


def api_metrics(q: Query, result) -> dict:
    """The real-code API metrics (../shared/eval/README.md): page coverage, member coverage, class-reference precision."""
    docs = result.by_table("docs_chunks")
    pages = {c.page for c in docs}
    out: dict[str, Any] = {"zero_docs": not docs}
    class_recs = [c for c in docs if (c.page or "").startswith("classes/")]
    out["classref_accepted"] = len(class_recs)
    out["classref_on_used_class"] = sum(1 for c in class_recs if c.page in q.relevant_api_pages)
    out["tutorial_accepted"] = len(docs) - len(class_recs)
    if q.relevant_api_pages:
        hit = [p for p in q.relevant_api_pages if p in pages]
        out["api_page_coverage"] = len(hit) / len(q.relevant_api_pages)
        out["api_page_any"] = float(bool(hit))
        symbols = _accepted_symbols(result)
        out["api_members"] = len(q.relevant_api)
        out["api_members_found"] = sum(1 for a in q.relevant_api if a in symbols)
    return out


def table_counts(accepted: set[tuple], gold: set[tuple]) -> dict[str, list[int]]:
    """Per converter table: [accepted and in the gold, accepted and not in it]."""
    out: dict[str, list[int]] = {}
    for m in accepted:
        out.setdefault(m[0], [0, 0])[0 if m in gold else 1] += 1
    return out


def port_judged(q: Query, strategy: str, result, trees: PortTrees) -> dict:
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


def migration_flags(q: Query, result) -> dict:
    """False migration over every table (with a per-table breakdown) and migration findings, on clean chunks."""
    tables = sorted({c.id.split(":", 1)[0] for c in result.by_table("api_mapping")})
    findings = [c for c in result.by_table("label_prototypes") if (c.payload.get("task_type") == "migration")]
    return {"false_migration_any": bool(tables), "false_migration_tables": tables,
            "false_migration": "class_renames" in tables, "migration_finding": bool(findings)}


def judged_files(files: list[Path], judged: list[Path]) -> tuple[list[Path], list[Path]]:
    """(query files, judged files): a `judged_docs.*.jsonl` or a `data/grades/` file named among the queries is a
    judged file, and so is every `judged_docs.*.jsonl` beside the query files; `judged` (named with --judged) come
    last and win on a pair graded twice."""
    queries = [Path(f) for f in files if not is_judged_file(Path(f))]
    found = [Path(f) for f in files if is_judged_file(Path(f))]
    for d in dict.fromkeys(Path(f).resolve().parent for f in queries):
        found += sorted(d.glob(JUDGED_GLOB))
    found += [Path(j) for j in judged]
    return queries, list(dict.fromkeys(p.resolve() for p in found))


def judged_row(q: Query, strategy: str, result, grades: dict) -> tuple[dict, list[dict]]:
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


def run_eval(retriever: Retriever, files: list[Path], strategies: list[str], cfg, *, out_dir: Path | None = None,
             limit: int | None = None, quiet: bool = False, judged: Sequence[Path] = ()) -> dict:
    files, judged = judged_files(files, list(judged))
    grades = grades_of(judged)
    judged_chunks = {q for q, _ in grades}
    query_sets = {Path(f).name: read_queries(Path(f), limit) for f in files}
    trees = {Path(f).name: PortTrees.beside(Path(f)) for f in files}
    per_query: list[dict] = []
    failures: list[dict] = []
    runs_trec: dict[tuple[str, str], list[str]] = defaultdict(list)
    page_runs: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(dict)
    qrels: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    total = sum(len(v) for v in query_sets.values()) * len(strategies)
    bar = tqdm(total=total, desc="eval", disable=quiet, file=sys.stderr, unit="query")
    for strategy in strategies:
        for fname, queries in query_sets.items():
            for q in queries:
                t = time.perf_counter()
                result = retriever.retrieve(q.chunk_text, strategy, cfg, explain=True)
                ms = (time.perf_counter() - t) * 1000
                docs = [c.id for c in result.by_table("docs_chunks")]
                pages = dedupe_pages(docs)
                for rank, c in enumerate(result.by_table("docs_chunks"), 1):
                    runs_trec[(fname, strategy)].append(f"{q.id} Q0 {c.id} {rank} {c.score:.6f} godot-rag-{strategy}")
                accepted = _accepted_mappings(result)
                row: dict[str, Any] = {"file": fname, "variant": q.variant, "strategy": strategy, "query": q.id, "ms": ms,
                       "stages": _stage_ms(result), "zero": not docs,
                       "n_results": len(result.results)}
                if q.relevant_pages:
                    page_runs[(fname, strategy)][q.id] = pages
                    qrels[fname][q.id] = q.relevant_pages
                    if q.demoted_pages:
                        best_rel = min((pages.index(p) for p in q.relevant_pages if p in pages), default=None)
                        row["demoted_ok"] = all(p not in pages or (best_rel is not None and pages.index(p) > best_rel)
                                                for p in q.demoted_pages)
                tp, fp, fn = mapping_counts(accepted, set(q.relevant_mappings))
                row.update({"map_tp": tp, "map_fp": fp, "map_fn": fn, "gold_mappings": len(q.relevant_mappings)})
                row["prose_accepted"] = sum(1 for c in result.by_table("api_mapping") if mapping_triple(c.id) is None)
                row["map_tables"] = table_counts(accepted, set(q.relevant_mappings)) if q.variant == "godot3" or q.relevant_mappings else {}
                removed = None
                port_trees = trees.get(fname)
                if q.variant == "godot3" and port_trees is not None:
                    prose = port_judged(q, strategy, result, port_trees)
                    row["prose_tp"], row["prose_judged"] = prose["tp"], prose["tp"] + prose["fp"]
                    failures += prose["failures"]
                    # A script the trees lack in either version keeps the gold as it is.
                    removed = port_trees.removed(q.id, q.chunk_text, retriever.class_reference().exists) or set()
                    row["removed_tp"], row["removed_fp"], row["removed_fn"] = mapping_counts(
                        accepted, set(q.relevant_mappings) | removed)
                if q.expect_no_mappings:
                    row.update(migration_flags(q, result))
                if q.relevant_api_pages or q.variant in ("godot3", "godot4"):
                    row.update(api_metrics(q, result))
                if q.id in judged_chunks:
                    row["judged_accepted"], bad = judged_row(q, strategy, result, grades)
                    failures += bad
                per_query.append(row)
                found = diagnose(q, strategy, result, 10)
                for f in found:  # outside the gold, but a name Godot 4 lacks that the port removed by a rewrite
                    if removed and mapping_triple(f.get("wrongly_accepted_mapping", "")) in removed:
                        f["port_removed"] = True
                failures += found
                bar.update(1)
    bar.close()
    # Ranking metrics for each (file, strategy) run at once, through ranx.
    scored = {key: score_queries(run, qrels[key[0]]) for key, run in page_runs.items()}
    for row in per_query:
        row.update(scored.get((row["file"], row["strategy"]), {}).get(row["query"], {}))
    runs = aggregate(per_query, query_sets, strategies)
    for run in runs:
        rows = [r for r in per_query if r["file"] == run["queries"] and r["strategy"] == run["strategy"]
                and (run["variant"] == "all" or r["variant"] == run["variant"]) and "judged_accepted" in r]
        if rows:
            run.update(flat_judged(judged_metrics({r["query"]: r["judged_accepted"] for r in rows}, grades)))
    report: dict[str, Any] = {"runs": runs, "judged_files": [str(p) for p in judged]}
    report["markdown"] = write_outputs(out_dir, runs, per_query, failures, runs_trec) if out_dir else _markdown(runs)
    return report


def flat_judged(m: dict) -> dict:
    """The judged metrics as run columns (`judged_guides_share2`, ...)."""
    out = {"judged_chunks": m["chunks"], "judged_chunks_with_grade2": m["chunks_with_grade2"],
           "judged_pool_grade2_recall": m["pool_grade2_recall"]}
    for group in ("guides", "api_reference"):
        for k in ("accepted", "share2", "share0", "ungraded"):
            out[f"judged_{group}_{k}"] = m[group][k]
    return out


def _stage_ms(result) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for s in result.trace.stages:
        out[s.stage.split(":")[0]] += s.ms
    return dict(out)


def aggregate(per_query: list[dict], query_sets: dict, strategies: list[str]) -> list[dict]:
    runs = []
    for fname in query_sets:
        variants = sorted({r["variant"] for r in per_query if r["file"] == fname and r["variant"]})
        for variant in variants + ["all"]:
            for strategy in strategies:
                rows = [r for r in per_query if r["file"] == fname and r["strategy"] == strategy
                        and (variant == "all" or r["variant"] == variant)]
                if rows:
                    runs.append(summarise(rows, fname, variant, strategy))
    return runs


def _mean(rows, key):
    vals = [r[key] for r in rows if key in r]
    return round(sum(vals) / len(vals), 4) if vals else None


def _rate(rows, key):
    vals = [bool(r[key]) for r in rows if key in r]
    return round(sum(vals) / len(vals), 4) if vals else None


def _ratio(rows, num, den):
    d = sum(r.get(den, 0) for r in rows if den in r)
    return round(sum(r.get(num, 0) for r in rows if den in r) / d, 4) if d else None


def _share(rows, hit, miss):
    """hit / (hit + miss) summed over the rows that have both."""
    h = sum(r[hit] for r in rows if hit in r)
    m = sum(r[miss] for r in rows if miss in r)
    return round(h / (h + m), 4) if h + m else None


def _by_table(rows) -> dict | None:
    flagged = [r for r in rows if "false_migration_tables" in r]
    if not flagged:
        return None
    out: dict[str, float] = defaultdict(float)
    for r in flagged:
        for t in r["false_migration_tables"]:
            out[t] += 1
    return {t: round(v / len(flagged), 4) for t, v in sorted(out.items())}


def _precision_by_table(rows) -> dict | None:
    tot: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        for t, (tp, fp) in (r.get("map_tables") or {}).items():
            tot[t][0] += tp
            tot[t][1] += fp
    return {t: round(tp / (tp + fp), 4) for t, (tp, fp) in sorted(tot.items())} or None


def summarise(rows: list[dict], fname: str, variant: str, strategy: str) -> dict:
    tp = sum(r["map_tp"] for r in rows)
    fp = sum(r["map_fp"] for r in rows)
    fn = sum(r["map_fn"] for r in rows)
    has_gold = any(r["gold_mappings"] for r in rows)
    judged = any("prose_judged" in r for r in rows)  # rows with the port rule's verdicts (realcode_godot3)
    fm = [r["false_migration"] for r in rows if "false_migration" in r]
    ms = [r["ms"] for r in rows]
    stage_tot: dict[str, float] = defaultdict(float)
    for r in rows:
        for s, v in r["stages"].items():
            stage_tot[s] += v
    total = sum(stage_tot.values()) or 1.0
    return {
        "queries": fname, "variant": variant, "strategy": strategy, "n": len(rows),
        "recall@1": _mean(rows, "recall@1"), "recall@5": _mean(rows, "recall@5"), "recall@10": _mean(rows, "recall@10"),
        "all_relevant@1": _mean(rows, "all_relevant@1"), "all_relevant@5": _mean(rows, "all_relevant@5"),
        "all_relevant@10": _mean(rows, "all_relevant@10"),
        "mrr": _mean(rows, "mrr"), "ndcg@10": _mean(rows, "ndcg@10"),
        "mapping_precision": round(tp / (tp + fp), 4) if (tp + fp) and (has_gold or fp) else None,
        "mapping_recall": round(tp / (tp + fn), 4) if has_gold else None,
        "false_migration_rate": round(sum(fm) / len(fm), 4) if fm else None,
        "false_migration_any_rate": _rate(rows, "false_migration_any"),
        "false_migration_by_table": _by_table(rows),
        "migration_finding_rate": _rate(rows, "migration_finding"),
        "mapping_precision_by_table": _precision_by_table(rows),
        "mapping_precision_port_removed": _share(rows, "removed_tp", "removed_fp"),
        "mapping_recall_port_removed": _share(rows, "removed_tp", "removed_fn"),
        "prose_mapping_precision": _ratio(rows, "prose_tp", "prose_judged"),
        "prose_mappings_judged": sum(r["prose_judged"] for r in rows if "prose_judged" in r) if judged else None,
        "prose_mappings_accepted": sum(r.get("prose_accepted", 0) for r in rows),
        "prose_false_on_clean": sum(r.get("prose_accepted", 0) for r in rows if "false_migration_any" in r),
        "api_page_coverage": _mean(rows, "api_page_coverage"),
        "api_page_any": _mean(rows, "api_page_any"),
        "member_coverage": _ratio(rows, "api_members_found", "api_members"),
        "classref_precision": _ratio(rows, "classref_on_used_class", "classref_accepted"),
        "no_docs_rate": _rate(rows, "zero_docs"),
        "classref_vs_tutorial": [sum(r.get("classref_accepted", 0) for r in rows), sum(r.get("tutorial_accepted", 0) for r in rows)]
        if any("classref_accepted" in r for r in rows) else None,
        "demoted_ok_rate": _mean([{"d": float(r["demoted_ok"])} for r in rows if "demoted_ok" in r], "d"),
        "zero_result_rate": round(sum(r["zero"] for r in rows) / len(rows), 4),
        "latency_ms_p50": round(percentile(ms, 50) or 0.0, 2), "latency_ms_p95": round(percentile(ms, 95) or 0.0, 2),
        "stage_share": {s: round(v / total, 3) for s, v in sorted(stage_tot.items(), key=lambda x: -x[1])},
    }


def _markdown(runs: list[dict]) -> str:
    from .report import markdown_tables

    return markdown_tables(runs)


__all__ = ["run_eval", "mapping_triple", "json"]
