"""A scan's plan: its projects and scripts, every file entry with its chunks and their settings, and each
chunk's context (its project's symbol table, file, `extends` and Godot version)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.scan_files import git_changed_files, read_script
from .chunking import EXTENDS_RE, chunk_text
from .options import ScanError, ScanOptions
from .project import Discovery, Script, discover, inside
from .triage import parse_suppressions

if TYPE_CHECKING:
    from .symbols import ProjectSymbols


def _real(path: Path) -> Path:
    """`path` with its links resolved, or as given when they cannot be (a loop)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def plan(opts: ScanOptions, strategy: str, base_cfg: dict) -> tuple[Discovery, list[dict], list[Script]]:
    """Projects, scripts and chunks: every file entry with its chunks and their settings."""
    disc, scripts = _select(opts)
    return disc, [_file_entry(opts, disc, s, base_cfg) for s in scripts], scripts


def _select(opts: ScanOptions) -> tuple[Discovery, list[Script]]:
    """The projects found under the root, and the scripts the options choose."""
    root = Path(opts.root)
    if not root.exists():
        raise ScanError(f"{root}: no such directory")
    if not root.is_dir():
        raise ScanError(f"{root}: not a directory (give the project's folder)")
    disc = discover(root, include_addons=opts.include_addons)
    if not disc.scripts:
        skipped = ", ".join(f"{k} x{v}" for k, v in sorted(disc.skipped_dirs.items()))
        raise ScanError(f"{root}: no .gd files found" + (f" (skipped: {skipped})" if skipped else "")
                        + (f" ({disc.ignored_files} excluded by .gitignore)" if disc.ignored_files else ""))
    scripts = disc.scripts
    if opts.changed_since:
        try:
            changed = git_changed_files(disc.root, opts.changed_since)
        except ValueError as e:
            raise ScanError(str(e)) from None
        scripts = [s for s in scripts if _real(s.path) in changed]
    if opts.files:
        chosen = {_real(Path(f)) for f in opts.files}
        scripts = [s for s in scripts if _real(s.path) in chosen]
    return disc, scripts


def _file_entry(opts: ScanOptions, disc: Discovery, s: Script, base_cfg: dict) -> dict:
    """One script's entry: read, chunked, each chunk with its settings; or the reason it was not read."""
    version = opts.godot_version or s.project.godot_version
    entry: dict[str, Any] = {"file": s.rel, "project": s.project.rel, "godot_version": version,
             "version_source": "--godot-version" if opts.godot_version else s.project.source,
             "chunker": None, "parse_error_lines": [], "error": None, "extends": None, "chunks": []}
    text: str | None
    err: str | None
    if s.problem is not None:
        text, err = None, s.problem
    elif s.outside or not inside(disc.root, s.path):  # checked again just before the read: it may have changed
        text, err = None, "a link to a file outside the scanned folder: not read"
    else:
        text, err = read_script(s.path, opts.max_file_bytes)
    if err is not None or text is None:
        entry["error"] = err
        return entry
    fc = chunk_text(text, opts.max_chunk_chars)
    entry.update(chunker=fc.chunker, parse_error_lines=fc.parse_error_lines[:20], extends=fc.extends,
                 suppressions=parse_suppressions(text))
    for c in fc.chunks:
        cfg = dict(base_cfg, godot_version=version)
        if (opts.extends_hint and fc.extends and not base_cfg.get("extends") and c.kind != "class"
                and not EXTENDS_RE.search(c.text)):
            cfg["extends"] = fc.extends
        entry["chunks"].append({**c.to_dict(), "text": c.text, "cfg": cfg})
    return entry


def symbol_tables(opts: ScanOptions, disc: Discovery, files: list[dict], cache: Any) -> dict[str, ProjectSymbols]:
    """Each project's symbol table (through the cache), and each chunk's context reference
    (project, file, extends, Godot version): the scan passes them with every chunk."""
    from ..gdscript.project import RES, RequestContext
    from .symbols import build_project_symbols, chunk_symbols_key

    if not opts.project_symbols:
        return {}
    built: dict[str, ProjectSymbols] = {}
    wanted = {e["project"] for e in files if e["chunks"]}
    for p in disc.projects:
        if p.rel in wanted:
            built[p.rel] = build_project_symbols(p, cache, opts.max_file_bytes)
    t0 = time.perf_counter()
    indexes = {rel: RequestContext(project_symbols=t.symbols).index() for rel, t in built.items()}
    by_rel = {p.rel: p for p in disc.projects}
    memos: dict[str, dict] = {rel: {} for rel in indexes}  # each name's part of the keys, once per project
    for entry in files:
        table = built.get(entry["project"])
        if table is None:
            continue
        project = by_rel[entry["project"]]
        file_rel = (disc.root / entry["file"]).relative_to(project.dir).as_posix()
        script = next((s for s in table.symbols if s.kind == "script" and s.file == file_rel), None)
        version = opts.godot_version if opts.godot_version not in (None, "auto") else table.godot_version
        if opts.godot_version == "auto":
            version = None
        ref = (entry["project"], file_rel, script.extends if script is not None else None, version)
        for c in entry["chunks"]:
            c["context"] = ref
            scopes = [RES + file_rel] + ([ref[2]] if ref[2] else [])
            c["context_key"] = [chunk_symbols_key(indexes[entry["project"]], c["text"], scopes, memos[entry["project"]]),
                                *ref[1:]]
    if built:  # the keys' time is the symbol table's too
        first = next(iter(built.values()))
        first.seconds += time.perf_counter() - t0
    return built

