"""Files derived from the database and kept beside it (`bm25_cache`, `records_cache`, `derived_cache`): each
is written whole or not at all, and replaces the older versions of itself."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path


def write_replacing(path: Path, write: Callable[[Path], None], versions: str) -> Path:
    """`write(tmp)`, then `tmp` renamed to `path` in one step, so a reader sees the old file or the new one;
    the other files of `path`'s folder matching the glob `versions` are removed (another process's file
    still being written is not). An OSError (a read-only folder) is raised, with no temporary file left."""
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for old in path.parent.glob(versions):
        if old != path and ".tmp." not in old.name:
            old.unlink(missing_ok=True)
    return path
