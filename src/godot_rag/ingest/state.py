"""Skip an ingest whose inputs did not change: names, sizes and mtimes of the pages, the renames file,
the chunk size, the godot-rag version and the code that makes the records (the whole package: a record's
`code_uses` come from the GDScript parser and the resolver, not only from `ingest/`)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import __version__

STATE_FILE = ".ingest_state.json"
OUTPUTS = ("docs_chunks.jsonl", "api_mapping.jsonl", "label_prototypes.jsonl", "ingest_report.jsonl")


PACKAGE = Path(__file__).resolve().parent.parent


def code_files() -> list[Path]:
    """The package's modules, whose code the fingerprint holds."""
    return sorted(PACKAGE.rglob("*.py"))


def _fingerprint(pages: Path, renames: Path | None, chunk_chars: int, options: str = "") -> str:
    """`options`: the other options that change the records, as one text (`reference_findings`)."""
    h = hashlib.sha256(f"{__version__}|{chunk_chars}|{options}".encode())
    for src in code_files():  # a change to the code re-runs it
        h.update(f"{src.relative_to(PACKAGE)}\n".encode())
        h.update(src.read_bytes())
    for p in sorted(Path(pages).glob("*.md")):
        st = p.stat()
        h.update(f"{p.name}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    if renames:
        h.update(Path(renames).read_bytes())
    return h.hexdigest()


def inputs_unchanged(pages: Path, renames: Path | None, out: Path, chunk_chars: int, options: str = "") -> bool:
    state = Path(out) / STATE_FILE
    if not state.exists() or not all((Path(out) / f).exists() for f in OUTPUTS) or not Path(pages).is_dir():
        return False
    try:
        saved = json.loads(state.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return saved.get("fingerprint") == _fingerprint(pages, renames, chunk_chars, options)


def save_state(pages: Path, renames: Path | None, out: Path, chunk_chars: int, options: str = "") -> None:
    (Path(out) / STATE_FILE).write_text(json.dumps({"fingerprint": _fingerprint(pages, renames, chunk_chars, options)}))
