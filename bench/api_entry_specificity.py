"""F's accepted docs records on the judged chunks, each with its group, grade and the corpus specificity of the
resolved uses it documents (`DocsApiStats.member_specificity`): where `min_api_specificity` falls between the
class-reference entries graded 1 and those graded 2. One JSON line per record.

    python bench/api_entry_specificity.py OUT.jsonl [--judged FILE ...] [--data-dir DIR]
        (default judged files: ../shared/eval/judged_docs.realcode_godot4.dev.jsonl and data/grades/docs.*.jsonl)
"""
import argparse
import json
from pathlib import Path

from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--judged", action="append", default=None)
ap.add_argument("--queries", default="../shared/eval/realcode_godot4.dev.jsonl")
ap.add_argument("--data-dir", default=None)
ap.add_argument("--set", action="append", default=[], help="a setting, name=JSON value (min_api_specificity=0)")
args = ap.parse_args()
judged = args.judged or ["../shared/eval/judged_docs.realcode_godot4.dev.jsonl",
                         *map(str, sorted(Path("data/grades").glob("docs.*.jsonl")))]
grades = {}
for f in judged:
    with open(f) as lines:
        for line in lines:
            r = json.loads(line)
            grades[(r["query_id"], r["record_id"])] = r["grade"]
with open(args.queries) as lines:
    chunks = {r["id"]: r["chunk_text"] for r in map(json.loads, lines) if r["id"] in {q for q, _ in grades}}
db = Database(data_dir=args.data_dir)
try:
    retriever = Retriever(db)
    cfg = RetrieveConfig(**{k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)})
    _, stats = retriever.guide_model()
    with open(args.out, "w") as fh:
        for q, text in sorted(chunks.items()):
            for c in retriever.retrieve(text, "F", cfg, explain=True).by_table("docs_chunks"):
                uses = [e.literal for e in c.info("validate").evidence if e.kind == "resolved_api"]
                fh.write(json.dumps({"query": q, "record": c.id, "group": c.group, "grade": grades.get((q, c.id)),
                                     "specificity": {u: stats.member_specificity(u) for u in uses}}) + "\n")
finally:
    db.stop()
