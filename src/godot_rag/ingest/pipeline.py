"""Markdown pages -> docs_chunks / api_mapping / label_prototypes / ingest_report JSONL."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ..gdscript.classref import ClassReference
from ..gdscript.record_api import add_record_api
from .chunker import chunk_page
from .classref import build_class_reference
from .mappings import build_mappings, read_renames
from .markdown import PAGE_NAME_RE, Page, parse_page
from .prototypes import build_prototypes
from .symbols import build_vocabulary

CLASS_REFERENCE_FILE = "class_reference.json"  # the Godot 4 API, for the resolve stage and the validator


class IngestError(RuntimeError):
    pass


@dataclass
class IngestResult:
    out_dir: Path
    counts: dict[str, int]
    seconds: float
    errors: int
    warnings: int


def _write_jsonl(path: Path, records: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
    os.replace(tmp, path)  # readers never see a half-written file


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def run_ingest(pages_dir: Path, renames_path: Path | None, out_dir: Path, *, target_chars: int = 1800,
               quiet: bool = False) -> IngestResult:
    t0 = time.perf_counter()
    pages_dir = Path(pages_dir)
    if not pages_dir.is_dir():
        raise IngestError(f"{pages_dir}: pages directory not found")
    files = sorted(p for p in pages_dir.iterdir() if p.suffix == ".md")
    if not files:
        raise IngestError(f"{pages_dir}: no Markdown pages (*.md) in this directory")
    report: list[dict] = []
    pages: list[tuple[Page, str, float]] = []
    for f in tqdm(files, desc="parse pages", disable=quiet, file=None, unit="page"):
        t = time.perf_counter()
        entry: dict = {"source_file": f"pages/{f.name}", "status": "ok", "chunks": 0, "warnings": []}
        if not PAGE_NAME_RE.match(f.name):
            entry.update(status="error", error="file name does not follow <path>__<sha8>.md")
            report.append(entry)
            continue
        try:
            raw = f.read_bytes()
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            entry.update(status="error", error=f"not UTF-8 (byte {e.start})")
            report.append(entry)
            continue
        except OSError as e:
            entry.update(status="error", error=f"unreadable: {e.strerror}")
            report.append(entry)
            continue
        if "\x00" in text:  # PostgreSQL text cannot hold NUL; a page is prose, so the bytes carry nothing
            entry["warnings"].append(f"{text.count(chr(0))} NUL byte(s) removed (first at line {text[:text.index(chr(0))].count(chr(10)) + 1})")
            text = text.replace("\x00", "")
        page = parse_page(f.name, text)
        pages.append((page, hashlib.sha256(raw).hexdigest(), t))
        report.append(entry)
    entry_by_file = {e["source_file"]: e for e in report}
    vocab = build_vocabulary([p for p, _, _ in pages])
    chunks: list[dict] = []
    seen_ids: set[str] = set()
    for page, sha, t in tqdm(pages, desc="chunk pages", disable=quiet, unit="page"):
        entry = entry_by_file[f"pages/{page.file_name}"]
        recs = chunk_page(page, vocab, source_file=f"pages/{page.file_name}", source_sha256=sha, target_chars=target_chars)
        entry["warnings"].extend(page.warnings)
        for rec in recs:
            if rec["chunk_id"] in seen_ids:
                entry["warnings"].append(f"duplicate chunk id {rec['chunk_id']}: later copy dropped")
                continue
            seen_ids.add(rec["chunk_id"])
            chunks.append(rec)
        entry["chunks"] = len(recs)
        if entry["warnings"]:
            entry["status"] = "warning"
        entry["ms"] = round((time.perf_counter() - t) * 1000, 2)
    class_reference = build_class_reference([p for p, _, _ in pages])
    add_record_api(chunks, class_reference)  # what each record's code uses and declares, resolved once here
    mappings: list[dict] = []
    mapping_warnings: list[str] = []
    if renames_path is not None:
        renames = read_renames(Path(renames_path))
        mappings, mapping_warnings = build_mappings(renames, chunks, ClassReference(class_reference))
    prototypes = build_prototypes(mappings, chunks)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out_dir / "docs_chunks.jsonl", chunks)
    _write_jsonl(out_dir / "api_mapping.jsonl", mappings)
    _write_jsonl(out_dir / "label_prototypes.jsonl", prototypes)
    _write_json(out_dir / CLASS_REFERENCE_FILE, class_reference)
    seconds = time.perf_counter() - t0
    errors = sum(e["status"] == "error" for e in report)
    warned = sum(e["status"] == "warning" for e in report)
    summary = {
        "summary": True, "pages": len(files), "pages_ok": len(files) - errors - warned, "pages_warning": warned,
        "pages_error": errors, "docs_chunks": len(chunks), "api_mapping": len(mappings),
        "label_prototypes": len(prototypes), "classes": len(class_reference["classes"]), "mapping_warnings": mapping_warnings, "seconds": round(seconds, 2),
        "target_chars": target_chars,
    }
    _write_jsonl(out_dir / "ingest_report.jsonl", report + [summary])
    return IngestResult(out_dir, {"docs_chunks": len(chunks), "api_mapping": len(mappings),
                                  "label_prototypes": len(prototypes)}, seconds, errors, warned)
