"""The resolve stage alone: time per chunk (parse + resolve) and agreement with the real-code API gold.

    python bench/resolve.py [--jsonl work/godot_rag/jsonl] [--queries ../shared/eval/realcode_godot4.dev.jsonl]

Prints p50/p95 milliseconds for parsing and for resolving (each chunk parsed once, as in F),
and precision/recall of the resolved `Class.member` uses against `relevant_api`."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.resolve import resolve_uses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default="work/godot_rag/jsonl", type=Path, help="ingest output (class_reference.json)")
    ap.add_argument("--queries", default="../shared/eval/realcode_godot4.dev.jsonl", type=Path)
    args = ap.parse_args()
    ref = ClassReference(json.loads((args.jsonl / "class_reference.json").read_text(encoding="utf-8")))
    rows = [json.loads(line) for line in args.queries.open(encoding="utf-8")]
    parse_ms, resolve_ms = [], []
    tp = fp = fn = 0
    for q in rows:
        t = time.perf_counter()
        facts = parse_chunk.__wrapped__(q["chunk_text"])  # uncached: the cost a new chunk pays
        t1 = time.perf_counter()
        res = resolve_uses(facts, ref)
        t2 = time.perf_counter()
        parse_ms.append((t1 - t) * 1000)
        resolve_ms.append((t2 - t1) * 1000)
        if "relevant_api" in q:
            got, gold = set(res.apis), set(q["relevant_api"])
            tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
    print(json.dumps({
        "chunks": len(rows),
        "parse_ms_p50": round(float(np.percentile(parse_ms, 50)), 3),
        "parse_ms_p95": round(float(np.percentile(parse_ms, 95)), 3),
        "resolve_ms_p50": round(float(np.percentile(resolve_ms, 50)), 3),
        "resolve_ms_p95": round(float(np.percentile(resolve_ms, 95)), 3),
        "api_precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "api_recall": round(tp / (tp + fn), 4) if tp + fn else None,
    }))


if __name__ == "__main__":
    main()
