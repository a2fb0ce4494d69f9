"""The end of a scan: each chunk's result and findings attached to it, the summary, and the outputs
(chunks.jsonl, findings.jsonl, findings.sarif, report.html, report.md and scan.json)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..store.scan_files import write_json, write_jsonl, write_text
from .findings import SEVERITIES, chunk_findings, fails, summarize
from .options import Retrieved, ScanResult, ScanRun
from .triage import Triage, add_fingerprints


def hide_server_paths(text: str, db: Any, places: dict[Path, str]) -> str:
    """A message for a client: the database's paths and each of `places` (a path -> what it is) replaced."""
    text = db.hide_paths(text)
    for path, shown in sorted(places.items(), key=lambda p: -len(str(p[0]))):
        for form in {str(Path(path).resolve()), str(Path(path).absolute())} - {"/"}:
            text = text.replace(form, shown)
    return text


def _strings(value: Any, fn: Callable[[str], str]) -> Any:
    """`value` (JSON-like) with `fn` applied to every string in it."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v, fn) for v in value]
    return value


def finish(run: ScanRun, got: Retrieved) -> ScanResult:
    """Findings, summary and outputs of a scan whose chunks all have their results."""
    triage = Triage()
    findings, chunk_errors, docs_ids = _attach(run, got.results, triage)
    links, payloads = _docs(run, docs_ids)
    summary = _summary(run, got, findings, chunk_errors)
    summary["findings"] |= {"suppressed": len(triage.suppressed), "baselined": triage.baselined}
    summary["baseline"] = str(run.opts.baseline) if run.opts.baseline is not None else None
    if run.opts.shown_root is not None:  # for a client: paths relative to the scanned root, no server path
        summary = _for_client(run, got.cache_path, summary)
    _write(run, summary, (findings, triage.suppressed), links, payloads)
    summary["seconds"] = round(time.perf_counter() - run.t0, 2)
    write_json(run.out_dir / "scan.json", summary)
    return ScanResult(summary, run.files, findings, run.out_dir)


def _attach(run: ScanRun, results: dict[str, dict], triage: Triage) -> tuple[list[dict], list[dict], set[str]]:
    """Each chunk's accepted records and reported findings, each file's counts by severity; returns every reported
    finding, the chunks that failed, and the docs ids the findings and records name. A finding the code suppresses
    or the baseline holds is not reported (`triage`)."""
    all_findings: list[dict] = []
    chunk_errors = []
    docs_ids: set[str] = set()
    for entry in run.files:
        for c in entry["chunks"]:
            value = results.get(c["key"]) or {"error": "no result"}
            c["error"] = value.get("error")
            recs = [r for r in value.get("results") or [] if r.get("verdict") in (None, "accept")]
            c["records"] = recs
            c["parser"] = value.get("parser")
            c["findings"] = chunk_findings(entry["file"], c, recs) if run.strategy == "F" else []
            docs_ids.update(r["id"] for r in recs if r["table"] == "docs_chunks")
            if c["error"]:
                chunk_errors.append({"file": entry["file"], "start_line": c["start_line"], "end_line": c["end_line"],
                                     "error": c["error"]})
        all_findings += _file_findings(run, entry, triage, docs_ids)
    return all_findings, chunk_errors, docs_ids


def _file_findings(run: ScanRun, entry: dict, triage: Triage, docs_ids: set[str]) -> list[dict]:
    """One file's reported findings, fingerprinted and triaged; its chunks keep only those, and its counts."""
    found = [f for c in entry["chunks"] for f in c["findings"]]
    add_fingerprints(found)
    counts = {s: 0 for s in SEVERITIES}
    for c in entry["chunks"]:
        c["findings"] = [f for f in c["findings"] if triage.keep(f, entry.get("suppressions") or {}, run.baseline)]
        for f in c["findings"]:
            f["godot_version"] = entry["godot_version"]
            f["project"] = entry["project"]
            counts[f["severity"]] += 1
            docs_ids.update(f["docs_chunk_ids"])
    entry["findings"] = counts
    return [f for c in entry["chunks"] for f in c["findings"]]


def _docs(run: ScanRun, docs_ids: set[str]) -> tuple[dict, dict[str, dict]]:
    """The docs pages' links of `docs_ids`, and the payloads of the accepted docs records."""
    from ..store.scan_cache import docs_links, fetch_payloads

    with run.db.connect(autocommit=True) as conn:
        links = docs_links(conn, sorted(docs_ids))
        payloads = fetch_payloads(conn, "docs_chunks", sorted(
            {r["id"] for e in run.files for c in e["chunks"] for r in c["records"] if r["table"] == "docs_chunks"}))
    return links, payloads


def _projects(run: ScanRun, tables: dict) -> list[dict]:
    projects = []
    for p in run.disc.projects:
        mine = [e for e in run.files if e["project"] == p.rel]
        table = tables.get(p.rel)
        projects.append({**p.to_dict(), "godot_version_used": run.opts.godot_version or p.godot_version,
                         "files": len(mine), "chunks": sum(len(e["chunks"]) for e in mine),
                         "symbol_table": table.summary() if table is not None else None})
    return projects


def _summary(run: ScanRun, got: Retrieved, all_findings: list[dict], chunk_errors: list[dict]) -> dict:
    opts, disc, files = run.opts, run.disc, run.files
    scanned = [e for e in files if e["error"] is None]
    projects = _projects(run, got.tables)
    fsum = summarize(all_findings)
    seconds = time.perf_counter() - run.t0
    return {
        "root": str(disc.root), "out": str(run.out_dir), "strategy": run.strategy, "started": run.started,
        "godot_version_override": opts.godot_version, "projects": projects,
        "no_project_godot": any(p.config_version is None and p.source.startswith("no project.godot") for p in disc.projects),
        "files_found": len(disc.scripts), "files_selected": len(files), "files_scanned": len(scanned),
        "changed_since": opts.changed_since,
        "unreadable": [{"file": e["file"], "error": e["error"]} for e in files if e["error"]],
        "line_fallback": [e["file"] for e in scanned if e["chunker"] == "line-fallback"],
        "skipped_dirs": disc.skipped_dirs, "gitignored_files": disc.ignored_files,
        "include_addons": opts.include_addons,
        "chunks": sum(len(e["chunks"]) for e in files), "unique_chunks": len({c["key"] for e in files for c in e["chunks"]}),
        "computed": got.computed, "cached": got.from_cache, "workers": got.workers,
        "retrieve_seconds": round(got.seconds, 2),
        "symbols_seconds": round(sum(t.seconds for t in got.tables.values()), 3),
        "chunks_per_second": round(got.computed / got.seconds, 2) if got.computed and got.seconds > 0 else None,
        "chunk_errors": chunk_errors, "findings": fsum, "fail_on": opts.fail_on or "none",
        "failed": fails(all_findings, opts.fail_on), "database": run.db.describe(), "cache": str(got.cache_path),
        "seconds": round(seconds, 2),
    }


def _for_client(run: ScanRun, cache_path: Path, summary: dict) -> dict:
    """The summary, and the files' and chunks' errors, with no server path in them."""
    shown_root = run.opts.shown_root
    assert shown_root is not None  # only a scan for a client is shown this way

    def hide(text: str) -> str:
        return hide_server_paths(text, run.db, {run.disc.root: shown_root, run.out_dir: "(output)",
                                                cache_path: "(scan cache)"})

    summary = _strings(summary, hide) | {"root": shown_root, "out": None, "cache": None,
                                         "database": run.db.describe_public()}
    for entry in run.files:
        entry["error"] = entry["error"] and hide(entry["error"])
        for c in entry["chunks"]:
            c["error"] = c["error"] and hide(c["error"])
    return summary


def _write(run: ScanRun, summary: dict, found: tuple[list[dict], list[dict]], links: dict,
           payloads: dict[str, dict]) -> None:
    """`found`: the reported findings, and those suppressed inline (SARIF keeps them, marked)."""
    from . import report as report_mod
    from .sarif import build_sarif

    opts, out_dir = run.opts, run.out_dir
    all_findings, suppressed = found
    out_dir.mkdir(parents=True, exist_ok=True)
    if "jsonl" in opts.formats:
        write_jsonl(out_dir / "chunks.jsonl", _chunk_rows(run.files, run.strategy, payloads))
        write_jsonl(out_dir / "findings.jsonl", all_findings)
    if "sarif" in opts.formats:
        root = None if opts.shown_root is not None else run.disc.root
        write_json(out_dir / "findings.sarif", build_sarif(all_findings + suppressed, root, summary, links))
    if "html" in opts.formats:
        write_text(out_dir / "report.html", report_mod.render_html(summary, run.files, all_findings, links))
    if "md" in opts.formats:
        write_text(out_dir / "report.md", report_mod.render_md(summary, run.files, all_findings, links))


def _chunk_rows(files: list[dict], strategy: str, payloads: dict[str, dict]) -> Iterator[dict]:
    for entry in files:
        for c in entry["chunks"]:
            records = []
            for r in c["records"]:
                r = dict(r)
                if r["table"] == "docs_chunks":
                    r["payload"] = payloads.get(r["id"], {})
                records.append(r)
            row = {"file": entry["file"], "project": entry["project"], "chunk": c["index"],
                   "start_line": c["start_line"], "end_line": c["end_line"], "kind": c["kind"], "name": c["name"],
                   "chunkText": c["text"], "chunk_sha256": c["key"].split(":", 1)[0], "strategy": strategy,
                   "config": {"godot_version": c["cfg"].get("godot_version"), "extends": c["cfg"].get("extends")},
                   "results": records, "findings": len(c["findings"])}
            if c.get("context"):  # what `retrieve --batch` needs beside the project's symbols to repeat this chunk
                _, file_rel, extends, version = c["context"]
                row["context"] = {"file_path": file_rel, "extends": extends, "godot_version": version}
            if c.get("parts"):
                row.update(part=c["part"], parts=c["parts"])
            if c["error"]:
                row["error"] = c["error"]
            yield row
