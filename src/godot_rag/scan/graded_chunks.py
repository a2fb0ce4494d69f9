"""Graded chunks of a scanned project, as `godot-rag fit-ranker` reruns them: each chunk's text from the scan's
`chunks.jsonl` and its project's context (symbols, file, `extends`, version), as the scan passed them.

A grade file names such a chunk `<prefix>:<file>#<chunk>` (`beehave:addons/beehave/blackboard.gd#0`); the scan's
`scan.json` names the project folder it read (`root`), whose symbols are built again here.
"""
from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..gdscript.project import RequestContext
from ..jsonlines import iter_jsonl
from .project import discover
from .symbols import build_project_symbols

CONTEXT_FIELDS = ("file_path", "extends", "godot_version")


class ScanChunksError(ValueError):
    """A scan folder without its scan.json or chunks.jsonl, or a project folder that is gone."""


def scan_queries(prefix: str, scan_dir: Path, wanted: Collection[str]) -> list[tuple[str, str, RequestContext | None]]:
    """The chunks of a scan (`scan_dir`: its --out folder) whose id (`prefix:file#chunk`) is in `wanted`: (id, text,
    context)."""
    try:
        root = Path(json.loads((scan_dir / "scan.json").read_text())["root"])
    except (OSError, ValueError, KeyError) as e:
        raise ScanChunksError(f"{scan_dir}: no readable scan.json ({e})") from e
    if not root.is_dir():
        raise ScanChunksError(f"{scan_dir}: the scanned project {root} is gone")
    tables = {p.rel: build_project_symbols(p).symbols for p in discover(root, include_addons=True).projects}
    out = []
    for _, line in iter_jsonl(scan_dir / "chunks.jsonl", lambda n, msg: ScanChunksError(f"{scan_dir}:{n}: {msg}")):
        row: dict[str, Any] = line if isinstance(line, dict) else {}
        qid = f"{prefix}:{row['file']}#{row['chunk']}"
        if qid not in wanted:
            continue
        symbols = tables.get(str(row.get("project")))
        c = row.get("context") or {}
        context = None if symbols is None else RequestContext(project_symbols=symbols).model_copy(
            update={k: c.get(k) for k in CONTEXT_FIELDS})
        out.append((qid, row["chunkText"], context))
    return out
