"""Every API check finding of some scans, one JSON Lines file per kind, for graders: what an assessor sees is the
chunk, the finding (line, message, action) and the text of the reference entry it cites, nothing else.

    python bench/findings_for_grading.py SCAN_OUT [MORE_SCAN_OUTS] --docs JSONL_DIR/docs_chunks.jsonl --out DIR

SCAN_OUT is a `godot-rag scan --out` folder (its findings.jsonl and chunks.jsonl); the kinds are the check's
(`deprecated_api`, `experimental_api`, `missing_engine_member`, `wrong_argument_count`).
"""
import argparse
import json
from collections import Counter
from pathlib import Path

KINDS = ("deprecated_api", "experimental_api", "missing_engine_member", "wrong_argument_count")
ENTRY_CHARS = 1500  # of the reference entry's record an assessor reads, from the member's own entry on


def lines(path: Path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def entry_text(content: str, api: str) -> str:
    """The member's entry in its record (from the line that names it in bold), else the record's start."""
    member = api.rsplit(".", 1)[-1] if "." in api else ""
    at = content.find(f"**{member}**") if member else -1
    start = content.rfind("\n", 0, at) + 1 if at >= 0 else 0
    return content[start:start + ENTRY_CHARS]


def rows(scan: Path, docs: dict[str, str]):
    """The check's findings of one scan, each with its chunk and its reference entry's text."""
    chunks = {(c["file"], c["chunk"]): c for c in lines(scan / "chunks.jsonl")}
    for f in lines(scan / "findings.jsonl"):
        if f.get("label") not in KINDS or not f.get("reference"):
            continue
        chunk = chunks.get((f["file"], f["chunk"]["index"])) or {}
        record = next((d for d in f.get("docs_chunk_ids") or [] if d in docs), None)
        yield {"id": f"{scan.name}:{f['file']}:{f['line']}:{f['column']}:{f['label']}", "scan": scan.name,
               "file": f["file"], "line": f["line"], "line_in_chunk": f["line"] - f["chunk"]["start_line"] + 1,
               "kind": f["label"], "severity": f["severity"], "code": f["evidence"]["code"],
               "finding": f["expected_finding"], "action": f["recommended_action"], "api": f["reference"]["api"],
               "rule": f["reference"]["rule"], "receiver": f["reference"]["receiver"],
               "reference_url": f["reference"]["url"], "reference_record": record,
               "reference_entry": entry_text(docs.get(record) or "", f["reference"]["api"] or ""),
               "chunk_text": chunk.get("chunkText", "")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scans", nargs="+", type=Path)
    ap.add_argument("--docs", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    docs = {r["chunk_id"]: r["content"] for r in lines(args.docs)}
    by_kind: dict[str, list[dict]] = {k: [] for k in KINDS}
    counts: Counter = Counter()
    for scan in args.scans:
        for row in rows(scan, docs):
            by_kind[row["kind"]].append(row)
            counts[(scan.name, row["kind"])] += 1
    args.out.mkdir(parents=True, exist_ok=True)
    for kind, found in by_kind.items():
        with open(args.out / f"{kind}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in found)
    print(json.dumps({"per_kind": {k: len(v) for k, v in by_kind.items()},
                      "per_scan": {f"{s}:{k}": n for (s, k), n in sorted(counts.items())}}, indent=1))


if __name__ == "__main__":
    main()
