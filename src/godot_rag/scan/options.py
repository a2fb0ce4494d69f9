"""What a scan is given and what it gives back: its options, its errors, its result, and the state that
travels from one step of `run_scan` to the next."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.scan_files import DEFAULT_MAX_FILE_BYTES
from .chunking import DEFAULT_MAX_CHARS
from .findings import SEVERITIES
from .project import Discovery

if TYPE_CHECKING:
    from .symbols import ProjectSymbols

FORMATS = ("jsonl", "sarif", "html", "md")
FAIL_ON = ("none", *SEVERITIES)


class ScanError(Exception):
    """A usage or database problem: one line for the user, exit code 2."""


class ScanInterrupted(Exception):
    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} chunks; finished chunks are cached, "
                         "run the same command again to resume")
        self.done, self.total = done, total


@dataclass
class ScanOptions:
    root: Path
    out: Path | None = None
    strategy: str = "F"
    godot_version: str | None = None  # None: each project's own (project.godot), else for every chunk
    workers: int = 0  # 0: one per core
    formats: tuple[str, ...] = FORMATS
    changed_since: str | None = None
    files: tuple[Path, ...] = ()  # only these scripts (a pre-commit hook passes the changed ones)
    include_addons: bool = False
    fail_on: str | None = None
    quiet: bool = False
    settings: dict = field(default_factory=dict)  # RetrieveConfig settings by name
    cache: Path | None = None
    refresh: bool = False
    max_chunk_chars: int = DEFAULT_MAX_CHARS
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # a larger .gd file is listed as skipped (--max-file-bytes)
    extends_hint: bool = True  # pass the file's `extends` with the chunks that lack one
    shown_root: str | None = None  # a scan for a client (HTTP): the root's name in the outputs, which show no server path
    project_symbols: bool = True  # pass each chunk its project's symbol table, file and Godot version (the context)
    baseline: Path | None = None  # an earlier scan's SARIF: its findings are not reported again (`triage.py`)
    # The database `run_scan` opens itself when it is given neither a database nor a retriever (the CLI's --dsn and
    # --data-dir; None: the embedded server's default).
    dsn: str | None = None
    data_dir: str | Path | None = None


@dataclass
class ScanResult:
    summary: dict
    files: list[dict]  # per file: its chunks (text, lines, accepted record ids, findings)
    findings: list[dict]
    out: Path

    @property
    def failed(self) -> bool:
        return bool(self.summary.get("failed"))


@dataclass
class ScanRun:
    """One scan under way: its options, checked, and what planning found."""
    opts: ScanOptions
    strategy: str
    base_cfg: dict
    disc: Discovery
    files: list[dict]  # the file entries of `plan`, their chunks filled in step by step
    out_dir: Path
    db: Any  # store.db.Database
    t0: float  # perf_counter at the start
    started: str  # the start, ISO 8601 UTC
    baseline: frozenset[str] = frozenset()  # the fingerprints of `opts.baseline`


@dataclass
class Retrieved:
    """What the retrieval step hands the outputs."""
    results: dict[str, dict]  # compact result by cache key
    from_cache: int
    computed: int
    workers: int
    seconds: float
    cache_path: Path
    tables: dict[str, ProjectSymbols] = field(default_factory=dict)  # each project's symbol table by its rel
