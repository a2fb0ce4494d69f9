"""Eval outputs: metrics.json, report.md (strategies as columns), TREC runs, failures.jsonl, PNG plots."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

Row = dict[str, Any]

METRICS = [
    "recall@1", "recall@5", "recall@10", "all_relevant@1", "all_relevant@5", "all_relevant@10", "mrr", "ndcg@10",
    "mapping_precision", "mapping_recall", "mapping_precision_by_table", "mapping_precision_port_removed",
    "mapping_recall_port_removed", "prose_mapping_precision", "prose_mappings_judged", "prose_mappings_accepted",
    "false_migration_rate", "false_migration_any_rate", "false_migration_by_table",
    "migration_finding_rate", "api_page_coverage", "api_page_any", "member_coverage", "classref_precision",
    "no_docs_rate", "classref_vs_tutorial", "demoted_ok_rate", "zero_result_rate", "latency_ms_p50",
    "latency_ms_p95", "judged_chunks", "judged_guides_accepted", "judged_guides_share2", "judged_guides_share0",
    "judged_guides_ungraded", "judged_api_reference_accepted", "judged_api_reference_share2",
    "judged_api_reference_share0", "judged_api_reference_ungraded", "judged_chunks_with_grade2",
    "judged_pool_grade2_recall",
]
NO_VALUE = "\u2013"  # an en dash in the table's cell
REPORT_INTRO = (
    "# godot-rag eval\n\nPage metrics are counted by page (a page's chunks count once, "
    "at its best rank). Mapping precision/recall count the records from the "
    "converter's rename tables, the only ones the gold can judge (`mapping_precision_by_table`: "
    "each table apart); `prose_mapping_precision` judges the prose and syntax "
    "records on Godot 3 chunks by the gold's own rule over the demos' script "
    "trees (`../shared/realcode`, today's Godot 4 scripts); `*_port_removed` "
    "add to the converter gold the names Godot 4 no longer has that the port removed "
    "by rewriting the line (`eval/port_rule.py`), a second figure, not the gold.\n\n"
)


def _fmt(v: object) -> str:
    if v is None:
        return NO_VALUE
    if isinstance(v, dict):
        return ", ".join(f"{k} {x:.3f}" for k, x in v.items()) or "0"
    if isinstance(v, list):
        return " / ".join(str(x) for x in v)
    return f"{v:.3f}" if isinstance(v, float) and v < 100 else str(v)


def markdown_tables(runs: list[Row]) -> str:
    groups: dict[tuple[str, str], dict[str, Row]] = defaultdict(dict)
    for r in runs:
        groups[(r["queries"], r["variant"])][r["strategy"]] = r
    out = []
    for (fname, variant), by_strategy in groups.items():
        strategies = list(by_strategy)
        n = next(iter(by_strategy.values()))["n"]
        out.append(f"### {fname} — {variant} (n={n})\n")
        out.append("| metric | " + " | ".join(strategies) + " |")
        out.append("|---|" + "---|" * len(strategies))
        for m in METRICS:
            vals = [by_strategy[s].get(m) for s in strategies]
            if all(v is None for v in vals):
                continue
            out.append(f"| {m} | " + " | ".join(_fmt(v) for v in vals) + " |")
        out.append("")
    return "\n".join(out)


def write_outputs(out_dir: Path, runs: list[Row], per_query: list[Row], failures: list[Row],
                  runs_trec: dict[tuple[str, str], list[str]]) -> str:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "metrics.json").write_text(json.dumps({"runs": runs}, indent=2))
    md = markdown_tables(runs)
    (out_dir / "report.md").write_text(REPORT_INTRO + md)
    runs_dir = out_dir / "runs"
    runs_dir.mkdir(exist_ok=True)
    for (fname, strategy), lines in runs_trec.items():
        (runs_dir / f"{Path(fname).stem}.{strategy}.trec").write_text("\n".join(lines) + "\n")
    with open(out_dir / "failures.jsonl", "w") as fh:
        for f in failures:
            fh.write(json.dumps(f) + "\n")
    with open(out_dir / "per_query.jsonl", "w") as fh:
        for r in per_query:
            fh.write(json.dumps(r) + "\n")
    _plots(out_dir, runs, per_query)
    return md


def _recall_plot(plt: Any, out_dir: Path, runs: list[Row]) -> None:
    alls = [r for r in runs if r["variant"] == "all"]
    files = sorted({r["queries"] for r in alls})
    fig, axes = plt.subplots(1, max(1, len(files)), figsize=(5 * max(1, len(files)), 4), squeeze=False)
    for ax, fname in zip(axes[0], files):
        for r in [r for r in alls if r["queries"] == fname]:
            ys = [r.get(f"recall@{k}") for k in (1, 5, 10)]
            if all(y is not None for y in ys):
                ax.plot([1, 5, 10], ys, marker="o", label=r["strategy"])
        ax.set_title(fname, fontsize=9)
        ax.set_xlabel("k")
        ax.set_ylabel("recall@k")
        ax.set_ylim(0, 1.02)
        if ax.get_lines():
            ax.legend(fontsize=8)
        else:  # the real-code sets have no page gold: nothing to plot
            ax.text(0.5, 0.5, "no page gold", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out_dir / "recall_at_k.png", dpi=100)
    plt.close(fig)


def _latency_plot(plt: Any, out_dir: Path, per_query: list[Row]) -> None:
    stages: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for r in per_query:
        counts[r["strategy"]] += 1
        for s, v in r["stages"].items():
            stages[r["strategy"]][s] += v
    names = sorted({s for d in stages.values() for s in d})
    fig, ax = plt.subplots(figsize=(8, 4))
    bottom = {st: 0.0 for st in stages}
    for s in names:
        vals = [stages[st].get(s, 0.0) / counts[st] for st in stages]
        ax.bar(list(stages), vals, bottom=[bottom[st] for st in stages], label=s)
        for st, v in zip(stages, vals):
            bottom[st] += v
    ax.set_ylabel("mean ms per query")
    ax.set_title("latency per stage")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "latency_per_stage.png", dpi=100)
    plt.close(fig)


def _plots(out_dir: Path, runs: list[Row], per_query: list[Row]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    _recall_plot(plt, out_dir, runs)
    _latency_plot(plt, out_dir, per_query)
