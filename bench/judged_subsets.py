"""F's graded docs figures on the judged chunk subsets, from `godot-rag eval` output dirs, with every grade file.

The eval reports one judged figure per set, over the grade files it is given. The README and the closing notes also
quote the subsets separately: the shipped pool, `holdout24` and `random40` (which no fit reads), `random24` and
`hub_pages` (`data/grades/README.md` says what each file grades). Each subset is the chunks its grade file grades.
Every dir is measured on the chunks the first dir
judged, with the grades of the pool and every `data/grades/docs.realcode_godot4.*.jsonl` (no pair is graded twice
with two grades, so their order does not matter):

    python bench/judged_subsets.py BEFORE_OUT AFTER_OUT

where each OUT is `godot-rag eval --strategies F --queries ../shared/eval/realcode_godot4.dev.jsonl ... --out OUT`.
"""
import argparse
import json
from pathlib import Path

from godot_rag.eval.judged import grades_of, judged_metrics, read_judged

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT.parent / "shared" / "eval" / "judged_docs.realcode_godot4.dev.jsonl"
GRADES = ROOT / "data" / "grades"
SUBSETS = {"pool": POOL} | {n: GRADES / f"docs.realcode_godot4.dev.{f}.jsonl"
                            for n, f in (("holdout24", "holdout24_accepts"), ("random24", "random24_candidates"),
                                         ("random40", "random40_accepts"), ("hub_pages", "hub_page_accepts"))}


def accepted(out_dir: Path) -> dict[str, dict]:
    """query -> {group: [record ids]} of F's accepted docs records on the real-code Godot 4 chunks."""
    out = {}
    for line in (out_dir / "per_query.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if "judged_accepted" in row and row["query"].startswith("rc4:"):
            out[row["query"]] = row["judged_accepted"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dirs", nargs="+", type=Path)
    args = ap.parse_args()
    grades = grades_of([POOL, *sorted(GRADES.glob("docs.realcode_godot4.*.jsonl"))])
    base = set(accepted(args.out_dirs[0]))
    subsets = {name: {r["query_id"] for r in read_judged(path)} for name, path in SUBSETS.items()}
    for d in args.out_dirs:
        acc = {q: v for q, v in accepted(d).items() if q in base}
        m = judged_metrics(acc, grades)
        print(f"== {d}: {m['chunks']} judged chunks, {round(m['chunks_with_grade2'] * m['chunks'])} given a grade-2 record")
        for group in ("guides", "api_reference"):
            print(f"   {group}: {m[group]}")
        for name, qs in subsets.items():
            mm = judged_metrics({q: v for q, v in acc.items() if q in qs}, grades)
            g = mm["guides"]
            print(f"   {name}: {mm['chunks']} chunks, {round(mm['chunks_with_grade2'] * mm['chunks'])} given a grade-2 record;"
                  f" guides {g['accepted']} / {g['share2']} / {g['share0']} ({g['ungraded']} ungraded)")


if __name__ == "__main__":
    main()
