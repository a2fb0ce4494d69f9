"""Scan a folder of Godot projects and report, per project: files, chunks, chunks/s, migration findings,
chunks with an accepted mapping, and the top mappings with the symbol table's verdict on their name
(declared by the project at file:line, or not the project's).

    python bench/scan_projects.py PROJECTS_DIR [--data-dir DIR] [--out DIR] [--no-project-symbols] [--json]

Each folder under PROJECTS_DIR is one project (a folder that holds `project.godot` itself is scanned
as one). Every scan is cold (`--refresh`, its own cache file) with addons included, as a new user
scanning a whole tree would; `--no-project-symbols` judges each chunk alone, for the before figures.
The symbol table's share of the scan's time is reported too (`symbols_s`).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

TOP = 5  # mappings listed per project


def projects_under(root: Path) -> list[Path]:
    if (root / "project.godot").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def verdicts(project_dir: Path, names: list[str]) -> dict[str, str]:
    """The symbol table's word on each name: where the project declares it, or that it does not."""
    try:
        from godot_rag.gdscript.project import RequestContext
        from godot_rag.scan.project import discover
        from godot_rag.scan.symbols import build_project_symbols
    except ImportError:  # a checkout without the symbol table
        return {}
    out = {}
    disc = discover(project_dir, include_addons=True)
    indexes = [RequestContext(project_symbols=build_project_symbols(p).symbols).index() for p in disc.projects]
    for name in names:
        found = next((s for ix in indexes for s in ix.declares(name)), None)
        out[name] = f"declared by the project at {found.where()} ({found.kind})" if found else "not declared by the project"
    return out


def scan_one(project_dir: Path, out: Path, data_dir: str | None, symbols: bool, workers: int) -> dict:
    from godot_rag.scan.run import ScanOptions, run_scan
    from godot_rag.store.db import Database

    kw = {"project_symbols": symbols} if "project_symbols" in ScanOptions.__dataclass_fields__ else {}
    opts = ScanOptions(root=project_dir, out=out, include_addons=True, quiet=True, refresh=True, workers=workers,
                       cache=out / "cache.sqlite3", formats=("jsonl",), **kw)
    db = Database(data_dir=data_dir)
    try:
        res = run_scan(opts, db=db)
    finally:
        db.stop()
    s = res.summary
    rows = [json.loads(line) for line in (out / "chunks.jsonl").open()]
    mapped = [r for r in rows if any(rec["table"] == "api_mapping" for rec in r["results"])]
    top = Counter(f"{rec['payload']['source_api']} -> {rec['payload']['target_api']}" for r in mapped
                  for rec in r["results"] if rec["table"] == "api_mapping")
    migration = [f for f in res.findings if f["migration"]]
    seen = top.most_common(TOP)
    said = verdicts(project_dir, [m.split(" -> ")[0] for m, _ in seen])
    return {"project": project_dir.name, "godot": sorted({p["godot_version_used"] for p in s["projects"]}),
            "files": s["files_scanned"], "chunks": s["chunks"], "chunks_per_s": s["chunks_per_second"],
            "seconds": s["seconds"], "retrieve_s": s["retrieve_seconds"], "symbols_s": s.get("symbols_seconds"),
            "migration_findings": len(migration), "chunks_with_mapping": len(mapped),
            "mapping_share": round(len(mapped) / max(1, s["chunks"]), 4),
            "top_mappings": [{"mapping": m, "chunks": n, "symbol_table": said.get(m.split(" -> ")[0], "-")} for m, n in seen],
            "findings": [{"file": f["file"], "line": f["line"], "label": f["label"], "code": f["evidence"]["code"]}
                         for f in migration]}


def markdown(results: list[dict]) -> str:
    lines = ["| project | Godot | files | chunks | chunks/s | symbols s / scan s | migration findings | chunks with a mapping |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['project']} | {','.join(r['godot'])} | {r['files']} | {r['chunks']} | {r['chunks_per_s']} | "
                     f"{r['symbols_s']} / {r['seconds']} | {r['migration_findings']} | {r['chunks_with_mapping']} "
                     f"({r['mapping_share']:.2%}) |")
    total = sum(r["chunks"] for r in results)
    lines.append(f"| **all** | | {sum(r['files'] for r in results)} | {total} | | | "
                 f"{sum(r['migration_findings'] for r in results)} | {sum(r['chunks_with_mapping'] for r in results)} "
                 f"({sum(r['chunks_with_mapping'] for r in results) / max(1, total):.2%}) |")
    lines.append("")
    for r in results:
        for m in r["top_mappings"]:
            lines.append(f"- {r['project']}: `{m['mapping']}` x{m['chunks']}: {m['symbol_table']}")
        for f in r["findings"]:
            lines.append(f"  - finding {f['label']} at {f['file']}:{f['line']}: `{f['code'][:100]}`")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("projects", type=Path)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", type=Path, default=Path("bench-out/scan_projects"))
    ap.add_argument("--no-project-symbols", action="store_true")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--only", default=None, help="comma-separated project folder names")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    results = []
    for p in projects_under(a.projects):
        if only and p.name not in only:
            continue
        print(f"scanning {p.name} ...", file=sys.stderr)
        results.append(scan_one(p, a.out / p.name, a.data_dir, not a.no_project_symbols, a.workers))
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2) if a.json else markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
