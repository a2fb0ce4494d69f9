"""F's decisions over a fixed sample of an eval set, one JSON line per chunk: each returned record's table, id,
group, rank, score and reason (explain off, as the batch runs). Run it for two checkouts and diff the files
to check that a change leaves the decisions alone.

    python bench/decisions.py --data-dir DIR [--set ../shared/eval/realcode_godot4.dev.jsonl] [--n 200] > out.jsonl
"""
import argparse
import json

from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=None)
ap.add_argument("--set", default="../shared/eval/realcode_godot4.dev.jsonl")
ap.add_argument("--n", type=int, default=200)
ap.add_argument("--strategy", default="F")
args = ap.parse_args()
with open(args.set) as lines:
    rows = [json.loads(line) for line in lines]
step = max(1, len(rows) // args.n)
retriever = Retriever(Database(data_dir=args.data_dir))
for q in rows[::step][: args.n]:
    res = retriever.retrieve(q["chunk_text"], args.strategy, explain=False)
    print(json.dumps({"id": q.get("id"), "results": [[c.table, c.id, c.group, c.rank, round(c.score, 9), c.reason]
                                                      for c in res.results]}))
