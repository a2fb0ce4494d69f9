"""Issue 60's recall on real Godot 3 code: the Godot 3 names the demos' port removed by a rewrite (`PortTrees.removed`:
Godot 4 has no such name at all, and the port left fewer of them) and the share of them F now flags, by an accepted
migration mapping of that converter pair or by an API check finding (`missing_engine_member`) on that name.

    python bench/port_removed_findings.py --data-dir DIR [--set ../shared/eval/realcode_godot3.dev.jsonl]

Prints one JSON object: the pairs, and how many each way finds (both, either, neither, with examples of neither).
"""
import argparse
import json
from pathlib import Path

from godot_rag.eval.diagnose import accepted_mappings
from godot_rag.eval.port_rule import PortTrees
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

EXAMPLES = 15  # missed pairs the output lists

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=None)
ap.add_argument("--set", default="../shared/eval/realcode_godot3.dev.jsonl")
args = ap.parse_args()
trees = PortTrees.beside(Path(args.set))
assert trees is not None, "the demos' script trees are not beside the eval sets"
retriever = Retriever(Database(data_dir=args.data_dir))
exists = retriever.class_reference().exists
counts = {"pairs": 0, "chunks": 0, "by_mapping": 0, "by_check": 0, "by_either": 0}
missed = []
queries = [json.loads(line) for line in Path(args.set).read_text(encoding="utf-8").splitlines() if line.strip()]
for q in queries:
    removed = trees.removed(q["id"], q["chunk_text"], exists) or set()
    if not removed:
        continue
    res = retriever.retrieve(q["chunk_text"], "F", explain=False)
    mapped = accepted_mappings(res)
    checked = {f.api.rsplit(".", 1)[-1] for c in res.by_table("label_prototypes") if (info := c.info("check")) is not None
               for f in info.findings if f.kind == "missing_engine_member"}
    counts["chunks"] += 1
    for pair in sorted(removed):
        by_mapping, by_check = pair in mapped, pair[1] in checked
        counts["pairs"] += 1
        counts["by_mapping"] += by_mapping
        counts["by_check"] += by_check
        counts["by_either"] += by_mapping or by_check
        if not (by_mapping or by_check):
            missed.append(f"{q['id']}: {pair[0]} {pair[1]} -> {pair[2]}")
counts["share_flagged"] = round(counts["by_either"] / counts["pairs"], 3) if counts["pairs"] else None
print(json.dumps({**counts, "missed": missed[:EXAMPLES]}, indent=1))
