"""What a stored result was computed by: the package version and a digest of the code and the fitted data
that decide verdicts (the stages in retrieve/, the class-reference reader, the GDScript facts, the record
fields, the guide model, the ranker and the judge's calibration: a refit with `godot-rag fit-guides` or
`fit-ranker` changes verdicts too).
The scan's cache key holds it beside the database digest, so a change to any rule is a new key; no
number has to be bumped by hand."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from ... import __version__

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # godot_rag/
VERDICT_SOURCES = ("retrieve", "gdscript", "errors.py", "records.py",  # relative to the package
                   "store/guide_model.json", "store/ranker_model.json", "store/judge_calibration.json")


def code_digest(package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 over the verdict sources' relative paths and bytes, in path order."""
    h = hashlib.sha256()
    for name in VERDICT_SOURCES:
        path = package_dir / name
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []:
            h.update(f.relative_to(package_dir).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def results_version() -> str:
    return f"{__version__}+{code_digest()[:24]}"
