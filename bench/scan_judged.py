"""A scan's accepted docs records against graded pairs: per group (`guides`, `api_reference`), how many were
accepted, how many of them are graded, and the share graded 2 and 0; `--before` (an older scan of the same
project) adds the same for the records it accepted that this scan does not (removed) and those both accept (kept).
The pairs' `query_id` is `<prefix>:<file>#<chunk>`, the scan's file path and chunk number.

    python bench/scan_judged.py SCAN_OUT/chunks.jsonl --judged data/grades/docs.pandora.copy_anchor_guides.jsonl \
        [--prefix pandora]
        [--before OLD_SCAN_OUT/chunks.jsonl]

`docs.pandora.copy_anchor_guides.jsonl` grades 80 guides of a scan of bitbrain/pandora at 874442f (its addons/, the .gd files
`git archive` gives; `godot-rag scan DIR --include-addons`): 40 drawn at random from those the scan before the copy
anchor accepted and the scan after it did not, 40 from those both accepted; 7 more lines grade guides accepted with
nothing shared (below). `docs.dialogue_manager.nothing_shared_accepts.jsonl` (nathanhoad/godot_dialogue_manager at e5b8d68, its
addons/) and `docs.phantom_camera.nothing_shared_accepts.jsonl` (ramokz/phantom-camera at dbf15ee) grade, with those 7,
36 guides that
the scans before `nothing_shared` accepted with every shared feature 0, drawn at random, at most two per record:

    python bench/scan_judged.py OUT/chunks.jsonl --judged data/grades/docs.dialogue_manager.nothing_shared_accepts.jsonl \
        --prefix dialogue_manager --before BEFORE/chunks.jsonl

`docs.other_authors.random_accepts.jsonl` grades a simple random sample of what F accepted on four other authors'
projects, pairs no other grade file held: 90 guides (30 of Orama-Interactive/Pixelorama at 7888c607f, 20 each of the
three above) and 30 class-reference entries over all four, at most one pair per chunk. Its `group` field is the
group F gave the record. It reads alone (the other files were drawn from what a change removed or kept):

    python bench/scan_judged.py OUT/chunks.jsonl --judged data/grades/docs.other_authors.random_accepts.jsonl --prefix pixelorama
"""
import argparse
import json
from collections import Counter

ap = argparse.ArgumentParser()
ap.add_argument("chunks")
ap.add_argument("--judged", required=True, action="append", help="a grade file; repeat it (a later file wins on a pair)")
ap.add_argument("--prefix", default="pandora")
ap.add_argument("--before", default=None)
args = ap.parse_args()


def accepted(path: str) -> dict[tuple[str, str], str]:
    """(query id, record id) -> group, for every docs record the scan accepted."""
    out = {}
    with open(path) as lines:
        for line in lines:
            row = json.loads(line)
            q = f"{args.prefix}:{row['file']}#{row['chunk']}"
            for r in row["results"]:
                if r["table"] == "docs_chunks":
                    out[(q, r["id"])] = r.get("group") or "guides"
    return out


def figures(pairs: dict[tuple[str, str], str], grades: dict[tuple[str, str], int]) -> dict:
    out = {}
    for group in ("guides", "api_reference"):
        mine = [p for p, g in pairs.items() if g == group]
        graded = Counter(grades[p] for p in mine if p in grades)
        n = sum(graded.values())
        out[group] = {"accepted": len(mine), "graded": n, "share2": round(graded[2] / n, 3) if n else None,
                      "share0": round(graded[0] / n, 3) if n else None}
    return out


grades = {}
for f in args.judged:
    with open(f) as lines:
        grades.update({(d["query_id"], d["record_id"]): d["grade"] for d in map(json.loads, lines)})
after = accepted(args.chunks)
report = {"accepted": figures(after, grades)}
if args.before:
    before = accepted(args.before)
    report["removed"] = figures({p: g for p, g in before.items() if p not in after}, grades)
    report["kept"] = figures({p: g for p, g in before.items() if p in after}, grades)
    report["added"] = figures({p: g for p, g in after.items() if p not in before}, grades)
print(json.dumps(report, indent=1))
