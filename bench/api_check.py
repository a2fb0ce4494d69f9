"""The API check (`gdscript/api_check.py`) over folders of scripts: findings by kind and rule, examples with their
file and line, and why uses stayed undecided. The class reference is built from the pages (its marks and signatures
are newer than a database ingested before them); each file is chunked as the scan chunks it, with its `extends`.

    python bench/api_check.py ../shared/realcode/godot-demo-projects/godot4 [MORE_DIRS] [--examples 5] [--json OUT]
"""
import argparse
import json
from collections import Counter
from pathlib import Path

from godot_rag.gdscript.api_check import check_api
from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.resolve import resolve_uses
from godot_rag.gdscript.suggest import member_renames
from godot_rag.ingest.classref import build_class_reference
from godot_rag.ingest.markdown import parse_page
from godot_rag.scan.chunking import DEFAULT_MAX_CHARS, chunk_text

SHARED = Path(__file__).resolve().parents[2] / "shared" / "godot_docs"
REASON_CHARS = 60  # an undecided use's reason, cut to group alike ones


def class_reference(pages: Path) -> ClassReference:
    parsed = [parse_page(f.name, f.read_text(encoding="utf-8")) for f in sorted(pages.glob("classes__*.md"))]
    return ClassReference(build_class_reference(parsed))


def check_file(path: Path, ref: ClassReference, renames: dict[str, str]) -> tuple[list[dict], Counter]:
    """One script's findings (as rows) and its undecided uses' reasons."""
    text = path.read_text(encoding="utf-8", errors="replace")
    cut = chunk_text(text, DEFAULT_MAX_CHARS)
    rows, undecided = [], Counter()
    for chunk in cut.chunks:
        facts = parse_chunk(chunk.text)
        hint = cut.extends if chunk.kind != "class" and not facts.extends else None
        result = check_api(facts, resolve_uses(facts, ref, extends_hint=hint), ref, renames)
        rows += [{"where": f"{path}:{chunk.start_line + f.line - 1}", "kind": f.kind, "rule": f.rule, "api": f.api,
                  "code": f.code, "message": f.message, "reference": f.reference.url} for f in result.findings]
        undecided.update(u.reason[:REASON_CHARS] for u in result.undecided)
    return rows, undecided


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--pages", type=Path, default=SHARED / "pages")
    ap.add_argument("--renames", type=Path, default=SHARED / "renames_3_to_4.jsonl")
    ap.add_argument("--examples", type=int, default=5)
    ap.add_argument("--include-addons", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="write every finding here")
    args = ap.parse_args()
    ref = class_reference(args.pages)
    renames = member_renames(json.loads(line) for line in args.renames.read_text(encoding="utf-8").splitlines())
    rows, undecided, files = [], Counter(), 0
    for root in args.roots:
        for path in sorted(root.rglob("*.gd")):
            if args.include_addons or "addons" not in path.relative_to(root).parts:
                got, why = check_file(path, ref, renames)
                rows, files = rows + got, files + 1
                undecided += why
    out = {"files": files, "by_kind": Counter(r["kind"] for r in rows), "by_rule": Counter(r["rule"] for r in rows),
           "examples": {k: [f"{r['where']}: {r['api']}: {r['code']}" for r in rows if r["kind"] == k][:args.examples]
                        for k in sorted({r["kind"] for r in rows})},
           "undecided": dict(undecided.most_common(10))}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
