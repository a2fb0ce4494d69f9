"""Markdown pages -> docs_chunks / api_mapping / label_prototypes / ingest_report JSONL."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..gdscript.classref import ClassReference
from ..gdscript.record_api import add_record_api
from .chunker import chunk_page
from .classref import build_class_reference
from .mappings import build_mappings, read_renames
from .markdown import PAGE_NAME_RE, Page, parse_page
from .prototypes import build_prototypes
from .reference_prototypes import build_reference_prototypes, link_entry_records
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


@dataclass
class ParsedPage:
    page: Page
    sha256: str  # of the page's bytes as read
    started: float  # perf_counter when its reading began: a page's `ms` covers reading and chunking


@dataclass
class IngestOutputs:
    chunks: list[dict[str, Any]]
    mappings: list[dict[str, Any]]
    mapping_warnings: list[str]
    prototypes: list[dict[str, Any]]
    class_reference: dict[str, Any]


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=False) + "\n")
    os.replace(tmp, path)  # readers never see a half-written file


def _write_json(path: Path, obj: object) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _read_page(path: Path) -> tuple[dict[str, Any], ParsedPage | None]:
    """One page's report entry, and the page where it could be read."""
    started = time.perf_counter()
    entry: dict[str, Any] = {"source_file": f"pages/{path.name}", "status": "ok", "chunks": 0, "warnings": []}
    if not PAGE_NAME_RE.match(path.name):
        entry.update(status="error", error="file name does not follow <path>__<sha8>.md")
        return entry, None
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        entry.update(status="error", error=f"not UTF-8 (byte {e.start})")
        return entry, None
    except OSError as e:
        entry.update(status="error", error=f"unreadable: {e.strerror}")
        return entry, None
    if "\x00" in text:  # PostgreSQL text cannot hold NUL; a page is prose, so the bytes carry nothing
        first_line = text[:text.index(chr(0))].count(chr(10)) + 1
        entry["warnings"].append(f"{text.count(chr(0))} NUL byte(s) removed (first at line {first_line})")
        text = text.replace("\x00", "")
    return entry, ParsedPage(parse_page(path.name, text), hashlib.sha256(raw).hexdigest(), started)


def _read_pages(files: list[Path], quiet: bool) -> tuple[list[dict[str, Any]], list[ParsedPage]]:
    report: list[dict[str, Any]] = []
    pages: list[ParsedPage] = []
    for f in tqdm(files, desc="parse pages", disable=quiet, file=None, unit="page"):
        entry, parsed = _read_page(f)
        report.append(entry)
        if parsed is not None:
            pages.append(parsed)
    return report, pages


def _chunk_pages(pages: list[ParsedPage], report: list[dict[str, Any]], target_chars: int,
                 quiet: bool) -> list[dict[str, Any]]:
    """Every page's records, the first of each chunk id kept; each page's report entry is completed here."""
    entry_by_file = {e["source_file"]: e for e in report}
    vocab = build_vocabulary([p.page for p in pages])
    chunks: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    for parsed in tqdm(pages, desc="chunk pages", disable=quiet, unit="page"):
        page = parsed.page
        entry = entry_by_file[f"pages/{page.file_name}"]
        recs = chunk_page(page, vocab, source_file=f"pages/{page.file_name}", source_sha256=parsed.sha256,
                          target_chars=target_chars)
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
        entry["ms"] = round((time.perf_counter() - parsed.started) * 1000, 2)
    return chunks


def _mappings(renames_path: Path | None, chunks: list[dict[str, Any]],
              class_reference: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    if renames_path is None:
        return [], []
    renames = read_renames(Path(renames_path))
    return build_mappings(renames, chunks, ClassReference(class_reference))


def _summary(files: list[Path], report: list[dict[str, Any]], outputs: IngestOutputs, seconds: float,
             target_chars: int) -> dict[str, Any]:
    errors = sum(e["status"] == "error" for e in report)
    warned = sum(e["status"] == "warning" for e in report)
    return {
        "summary": True, "pages": len(files), "pages_ok": len(files) - errors - warned, "pages_warning": warned,
        "pages_error": errors, "docs_chunks": len(outputs.chunks), "api_mapping": len(outputs.mappings),
        "label_prototypes": len(outputs.prototypes), "classes": len(outputs.class_reference["classes"]),
        "mapping_warnings": outputs.mapping_warnings, "seconds": round(seconds, 2), "target_chars": target_chars,
    }


def _page_files(pages_dir: Path) -> list[Path]:
    if not pages_dir.is_dir():
        raise IngestError(f"{pages_dir}: pages directory not found")
    files = sorted(p for p in pages_dir.iterdir() if p.suffix == ".md")
    if not files:
        raise IngestError(f"{pages_dir}: no Markdown pages (*.md) in this directory")
    return files


def _build_outputs(pages: list[ParsedPage], report: list[dict[str, Any]], renames_path: Path | None,
                   target_chars: int, quiet: bool, reference_findings: bool) -> IngestOutputs:
    chunks = _chunk_pages(pages, report, target_chars, quiet)
    class_reference = build_class_reference([p.page for p in pages])
    add_record_api(chunks, class_reference)  # what each record's code uses and declares, resolved once here
    link_entry_records(class_reference, chunks)  # each entry's record: the evidence an API finding cites
    mappings, mapping_warnings = _mappings(renames_path, chunks, class_reference)
    prototypes = build_prototypes(mappings, chunks)
    if reference_findings:  # on by default; `ingest --no-reference-findings` keeps only the hand-written ones
        prototypes += build_reference_prototypes(class_reference, chunks)
    return IngestOutputs(chunks, mappings, mapping_warnings, prototypes, class_reference)


def _write_outputs(out_dir: Path, outputs: IngestOutputs) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out_dir / "docs_chunks.jsonl", outputs.chunks)
    _write_jsonl(out_dir / "api_mapping.jsonl", outputs.mappings)
    _write_jsonl(out_dir / "label_prototypes.jsonl", outputs.prototypes)
    _write_json(out_dir / CLASS_REFERENCE_FILE, outputs.class_reference)


def run_ingest(pages_dir: Path, renames_path: Path | None, out_dir: Path, *, target_chars: int = 1800,
               quiet: bool = False, reference_findings: bool = True) -> IngestResult:
    """`reference_findings`: add the `label_prototypes` derived from the class reference's Deprecated and
    Experimental marks and the API check's two generic findings (`reference_prototypes.py`)."""
    t0 = time.perf_counter()
    files = _page_files(Path(pages_dir))
    report, pages = _read_pages(files, quiet)
    outputs = _build_outputs(pages, report, renames_path, target_chars, quiet, reference_findings)
    out_dir = Path(out_dir)
    _write_outputs(out_dir, outputs)
    seconds = time.perf_counter() - t0
    summary = _summary(files, report, outputs, seconds, target_chars)
    _write_jsonl(out_dir / "ingest_report.jsonl", [*report, summary])
    return IngestResult(out_dir, {"docs_chunks": len(outputs.chunks), "api_mapping": len(outputs.mappings),
                                  "label_prototypes": len(outputs.prototypes)},
                        seconds, summary["pages_error"], summary["pages_warning"])
