"""metrics.json's runs: the per-query rows of one (query file, variant, strategy) summed up."""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from .metrics import percentile
from .queries import Query

Row = dict[str, Any]


def aggregate(per_query: list[Row], query_sets: dict[str, list[Query]], strategies: list[str]) -> list[Row]:
    runs = []
    for fname in query_sets:
        variants = sorted({r["variant"] for r in per_query if r["file"] == fname and r["variant"]})
        for variant in [*variants, "all"]:
            for strategy in strategies:
                rows = [r for r in per_query if r["file"] == fname and r["strategy"] == strategy
                        and (variant == "all" or r["variant"] == variant)]
                if rows:
                    runs.append(summarise(rows, fname, variant, strategy))
    return runs


def flat_judged(m: dict[str, Any]) -> dict[str, Any]:
    """The judged metrics as run columns (`judged_guides_share2`, ...)."""
    out = {"judged_chunks": m["chunks"], "judged_chunks_with_grade2": m["chunks_with_grade2"],
           "judged_pool_grade2_recall": m["pool_grade2_recall"]}
    for group in ("guides", "api_reference"):
        for k in ("accepted", "share2", "share0", "ungraded"):
            out[f"judged_{group}_{k}"] = m[group][k]
    return out


def _mean(rows: list[Row], key: str) -> float | None:
    vals = [r[key] for r in rows if key in r]
    return round(sum(vals) / len(vals), 4) if vals else None


def _rate(rows: list[Row], key: str) -> float | None:
    vals = [bool(r[key]) for r in rows if key in r]
    return round(sum(vals) / len(vals), 4) if vals else None


def _ratio(rows: list[Row], num: str, den: str) -> float | None:
    d = sum(r.get(den, 0) for r in rows if den in r)
    return round(sum(r.get(num, 0) for r in rows if den in r) / d, 4) if d else None


def _share(rows: list[Row], hit: str, miss: str) -> float | None:
    """hit / (hit + miss) summed over the rows that have both."""
    h = sum(r[hit] for r in rows if hit in r)
    m = sum(r[miss] for r in rows if miss in r)
    return round(h / (h + m), 4) if h + m else None


def _by_table(rows: list[Row]) -> dict[str, float] | None:
    flagged = [r for r in rows if "false_migration_tables" in r]
    if not flagged:
        return None
    out: dict[str, float] = defaultdict(float)
    for r in flagged:
        for t in r["false_migration_tables"]:
            out[t] += 1
    return {t: round(v / len(flagged), 4) for t, v in sorted(out.items())}


def _precision_by_table(rows: list[Row]) -> dict[str, float] | None:
    tot: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        for t, (tp, fp) in (r.get("map_tables") or {}).items():
            tot[t][0] += tp
            tot[t][1] += fp
    return {t: round(tp / (tp + fp), 4) for t, (tp, fp) in sorted(tot.items())} or None


def _ranking(rows: list[Row]) -> Row:
    return {
        "recall@1": _mean(rows, "recall@1"), "recall@5": _mean(rows, "recall@5"), "recall@10": _mean(rows, "recall@10"),
        "all_relevant@1": _mean(rows, "all_relevant@1"), "all_relevant@5": _mean(rows, "all_relevant@5"),
        "all_relevant@10": _mean(rows, "all_relevant@10"),
        "mrr": _mean(rows, "mrr"), "ndcg@10": _mean(rows, "ndcg@10"),
    }


def _mappings(rows: list[Row]) -> Row:
    tp = sum(r["map_tp"] for r in rows)
    fp = sum(r["map_fp"] for r in rows)
    fn = sum(r["map_fn"] for r in rows)
    has_gold = any(r["gold_mappings"] for r in rows)
    judged = any("prose_judged" in r for r in rows)  # rows with the port rule's verdicts (realcode_godot3)
    fm = [r["false_migration"] for r in rows if "false_migration" in r]
    return {
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
    }


def _api(rows: list[Row]) -> Row:
    classref_vs_tutorial = None
    if any("classref_accepted" in r for r in rows):
        classref_vs_tutorial = [sum(r.get("classref_accepted", 0) for r in rows),
                                sum(r.get("tutorial_accepted", 0) for r in rows)]
    return {
        "api_page_coverage": _mean(rows, "api_page_coverage"),
        "api_page_any": _mean(rows, "api_page_any"),
        "member_coverage": _ratio(rows, "api_members_found", "api_members"),
        "classref_precision": _ratio(rows, "classref_on_used_class", "classref_accepted"),
        "no_docs_rate": _rate(rows, "zero_docs"),
        "classref_vs_tutorial": classref_vs_tutorial,
        "demoted_ok_rate": _mean([{"d": float(r["demoted_ok"])} for r in rows if "demoted_ok" in r], "d"),
    }


def _latency(rows: list[Row]) -> Row:
    ms = [r["ms"] for r in rows]
    stage_tot: dict[str, float] = defaultdict(float)
    for r in rows:
        for s, v in r["stages"].items():
            stage_tot[s] += v
    total = sum(stage_tot.values()) or 1.0
    return {
        "zero_result_rate": round(sum(r["zero"] for r in rows) / len(rows), 4),
        "latency_ms_p50": round(percentile(ms, 50) or 0.0, 2), "latency_ms_p95": round(percentile(ms, 95) or 0.0, 2),
        "stage_share": {s: round(v / total, 3) for s, v in sorted(stage_tot.items(), key=lambda x: -x[1])},
    }


def summarise(rows: list[Row], fname: str, variant: str, strategy: str) -> Row:
    return {"queries": fname, "variant": variant, "strategy": strategy, "n": len(rows),
            **_ranking(rows), **_mappings(rows), **_api(rows), **_latency(rows)}
