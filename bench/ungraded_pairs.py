"""The accepted docs records of judged chunks that no judged file grades: what an assessor must grade next.

    python bench/ungraded_pairs.py EVAL_OUT/per_query.jsonl QUERIES.jsonl DOCS_CHUNKS.jsonl JUDGED.jsonl [...] > to_grade.jsonl

One line per pair: query_id, record_id, chunk_text and record_text (section path and content: what the
assessor reads, with the rubric of ../shared/eval/ASSESSING.md, and nothing else)."""
from __future__ import annotations

import json
import sys

from godot_rag.eval.judged import grades_of


def main(per_query: str, queries: str, docs: str, *judged: str) -> None:
    grades = grades_of(list(judged))
    with open(queries) as lines:
        chunks = {q["id"]: q["chunk_text"] for q in map(json.loads, lines)}
    wanted = []
    with open(per_query) as lines:
        for row in map(json.loads, lines):
            for ids in (row.get("judged_accepted") or {}).values():
                wanted += [(row["query"], rid) for rid in ids if (row["query"], rid) not in grades]
    need = {rid for _, rid in wanted}
    records = {}
    with open(docs) as lines:
        for line in lines:
            rec = json.loads(line)
            if rec["chunk_id"] in need:
                records[rec["chunk_id"]] = " / ".join(rec.get("section_path") or []) + "\n" + rec["content"]
    for qid, rid in dict.fromkeys(wanted):
        print(json.dumps({"query_id": qid, "record_id": rid, "chunk_text": chunks[qid], "record_text": records.get(rid, "")}))


if __name__ == "__main__":
    main(*sys.argv[1:])
