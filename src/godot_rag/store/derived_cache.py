"""What a retriever builds once from the whole records (the class reference, the API index, the docs' API
use counts, the version names), persisted next to the data so that a new process reads it instead of
building it. Each file is keyed by everything its value is built from: the records digests of the tables
it reads, the class reference's digest, and the code itself (every source file's size and mtime, the
shipped guide model among them), so a changed input or a new checkout never reads an older file. The values are plain
data (dicts, lists, sets, tuples, strings, numbers) written with `marshal`."""
from __future__ import annotations

import functools
import hashlib
import marshal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from .cache_files import write_replacing

FORMAT = 1
PACKAGE = Path(__file__).resolve().parent.parent


@functools.cache
def code_fingerprint() -> str:
    """The package's source files (names, sizes, mtimes): a build may change with any of them."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in (".py", ".json") and path.is_file():
            st = path.stat()
            h.update(f"{path.relative_to(PACKAGE)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def meta_digest(conn: psycopg.Connection, key: str) -> str:
    """A digest of one meta entry, computed by the server (the class reference is a few MB of JSON)."""
    row = conn.execute("SELECT md5(value::text) FROM godot_rag_meta WHERE key = %s", (key,)).fetchone()
    return str(row[0]) if row else "none"


def cache_path(cache_dir: Path, name: str, parts: list[str]) -> Path:
    key = hashlib.sha256("\n".join([str(FORMAT), code_fingerprint(), *parts]).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"derived-{name}-{key}.marshal"


def cached(cache_dir: Path, name: str, parts: list[str], build: Callable[[], Any]) -> Any:
    """`build()`'s plain-data value, read from the file keyed by `parts` (and the code) when there is one;
    else built and written (atomically; the other files of `name` are removed)."""
    path = cache_path(cache_dir, name, parts)
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        pass  # missing or damaged: built again
    value = build()
    try:
        blob = marshal.dumps(value)

        def write(tmp: Path) -> None:
            tmp.write_bytes(blob)

        write_replacing(path, write, f"derived-{name}-*.marshal")
    except (OSError, ValueError):
        pass  # a read-only folder, or a value marshal cannot write: built every time
    return value
