"""The scan's own mapping precision/recall against a real-code eval set.

    godot-rag scan ../shared/realcode/godot-demo-projects/godot3 --include-addons --out scan-out/godot3
    python bench/scan_eval.py scan-out/godot3/chunks.jsonl ../shared/eval/realcode_godot3.dev.jsonl \
        --root ../shared/realcode/godot-demo-projects/godot3

Each eval chunk (`rc3:<file>#n`) is matched to the scan's chunks of the same file: the chunk with the
same text, else every scan chunk whose lines overlap the eval chunk's lines in the file. The accepted
`api_mapping` records of the matched chunks are compared with `relevant_mappings` as `godot-rag eval`
does (converter tables only); the prose `migration_guide:` and `gdscript_syntax:` records are counted
apart and judged by the port rule (`godot_rag/eval/port_rule.py`) when the script trees sit beside the set.
With `expect_no_mappings` sets (realcode_godot4) it counts the chunks with any accepted mapping.

The docs figures are the eval's, over the matched chunks, with the project around each chunk (the scan's
`context`: its file's `extends`, the project's symbols) where `godot-rag eval` gives the chunk alone: the share of
chunks with no accepted docs record, API page coverage (over chunks with `relevant_api_pages`, the mean share of
those pages with an accepted record) and class-reference precision (accepted `classes/` records whose page is in
`relevant_api_pages`). A chunk matched by lines takes the records of every scan chunk it overlaps.

`--judged FILE` (repeatable; graded pairs as `godot-rag eval --judged` reads them) adds, over the chunks the first
file names, the chunks given a grade-2 record and, per group, the accepted docs records graded 2 and 0 (a later file
fills in pairs the earlier ones do not grade): with the shipped pool first, the pool's coverage figure with the
project around each chunk."""
from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from godot_rag.eval.port_rule import PortTrees
from godot_rag.eval.runner import mapping_triple


def _shares(c: Counter) -> dict:
    graded = c[0] + c[1] + c[2]
    return {"accepted": sum(c.values()), "ungraded": c["ungraded"],
            "share2": round(c[2] / graded, 3) if graded else None, "share0": round(c[0] / graded, 3) if graded else None}


def read_judged(paths: list[Path]) -> tuple[dict[tuple[str, str], int], set[str]]:
    """The graded pairs (the first grade of a pair wins), and the chunks the first file names."""
    grades: dict[tuple[str, str], int] = {}
    judged_chunks: set[str] = set()
    for i, path in enumerate(paths):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                pair = json.loads(line)
                grades.setdefault((pair["query_id"], pair["record_id"]), pair["grade"])
                if i == 0:
                    judged_chunks.add(pair["query_id"])
    return grades, judged_chunks


def chunks_by_file(path: Path) -> dict[str, list[dict]]:
    by_file: dict[str, list[dict]] = defaultdict(list)
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            by_file[row["file"]].append(row)
    return by_file


def overlapping(mine: list[dict], source: Path, chunk_text: str) -> list[dict]:
    """The scan chunks of a file whose lines overlap the eval chunk's lines in it (none when the text is not there)."""
    try:
        src = source.read_text(encoding="utf-8")
    except OSError:
        src = ""
    at = src.find(chunk_text)
    if at < 0 or not mine:
        return []
    start = src.count("\n", 0, at) + 1
    end = start + chunk_text.count("\n")
    return [c for c in mine if c["start_line"] <= end and c["end_line"] >= start]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("chunks", type=Path, help="chunks.jsonl of a scan")
    ap.add_argument("queries", type=Path, help="realcode_godot3.dev.jsonl (or godot4)")
    ap.add_argument("--root", type=Path, required=True, help="the folder that was scanned (the eval ids are relative to it)")
    ap.add_argument("--judged", type=Path, action="append", default=[], help="graded pairs; the first names the chunks")
    args = ap.parse_args()
    grades, judged_chunks = read_judged(args.judged)
    judged = {"chunks": 0, "chunks_with_grade2": 0, "guides": Counter(), "api_reference": Counter()}
    by_file = chunks_by_file(args.chunks)
    tp = fp = fn = 0
    exact = overlap = missing = 0
    other_accepted = 0
    # The prose and syntax records, judged by the port rule when the script trees sit beside the eval sets.
    trees = PortTrees.beside(args.queries)
    port_tp = port_fp = 0
    chunks_with_mapping = 0
    no_docs, coverage, classref, classref_on_gold = 0, [], 0, 0
    rows = [json.loads(line) for line in args.queries.open(encoding="utf-8")]
    for q in rows:
        file = q["id"].split(":", 1)[1].rsplit("#", 1)[0]
        mine = by_file.get(file, [])
        hit = [c for c in mine if c["chunkText"] == q["chunk_text"]]
        if hit:
            exact += 1
        else:
            hit = overlapping(mine, args.root / file, q["chunk_text"])
            if not hit:
                missing += 1
                continue
            overlap += 1
        records = [r for c in hit for r in c["results"] if r["table"] == "api_mapping" and r.get("verdict") == "accept"]
        ids = {r["id"] for r in records}
        accepted = {mapping_triple(i) for i in ids} - {None}
        other_accepted += sum(1 for i in ids if mapping_triple(i) is None)
        for r in records if trees is not None else []:
            if mapping_triple(r["id"]) is None:
                applied = trees.applied(q["id"], r["payload"])
                port_tp, port_fp = port_tp + (applied is True), port_fp + (applied is False)
        chunks_with_mapping += bool(accepted)
        docs = {r["id"] for c in hit for r in c["results"] if r["table"] == "docs_chunks" and r.get("verdict") == "accept"}
        pages, gold_pages = {d.rsplit("#", 1)[0] for d in docs}, set(q.get("relevant_api_pages") or [])
        no_docs += not docs
        if q["id"] in judged_chunks:
            judged["chunks"] += 1
            judged["chunks_with_grade2"] += any(grades.get((q["id"], d)) == 2 for d in docs)
            groups = {r["id"]: r["group"] for c in hit for r in c["results"] if r["table"] == "docs_chunks"}
            for d in docs:
                group = "api_reference" if groups.get(d) == "api_reference" else "guides"
                judged[group][grades.get((q["id"], d), "ungraded")] += 1
        if gold_pages:
            coverage.append(len(gold_pages & pages) / len(gold_pages))
        classref += sum(1 for d in docs if d.startswith("classes/"))
        classref_on_gold += sum(1 for d in docs if d.startswith("classes/") and d.rsplit("#", 1)[0] in gold_pages)
        gold = {tuple(m) for m in q.get("relevant_mappings") or []}
        tp += len(accepted & gold)
        fp += len(accepted - gold)
        fn += len(gold - accepted)
    out = {"queries": len(rows), "matched_exact": exact, "matched_by_lines": overlap, "unmatched": missing,
           "tp": tp, "fp": fp, "fn": fn,
           "mapping_precision": round(tp / (tp + fp), 4) if tp + fp else None,
           "mapping_recall": round(tp / (tp + fn), 4) if tp + fn else None,
           "chunks_with_accepted_converter_mapping": chunks_with_mapping,
           "accepted_prose_or_syntax_mappings": other_accepted,
           "prose_mapping_precision": round(port_tp / (port_tp + port_fp), 4) if port_tp + port_fp else None,
           "prose_mappings_judged": port_tp + port_fp,
           "no_docs_rate": round(no_docs / (exact + overlap), 4) if exact + overlap else None,
           "api_page_coverage": round(sum(coverage) / len(coverage), 4) if coverage else None,
           "classref_precision": round(classref_on_gold / classref, 4) if classref else None}
    if args.judged:
        out["judged"] = {"chunks": judged["chunks"], "chunks_with_grade2": judged["chunks_with_grade2"],
                         **{g: _shares(judged[g]) for g in ("guides", "api_reference")}}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
