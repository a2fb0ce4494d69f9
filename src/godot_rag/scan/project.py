"""Find the projects and scripts under a directory.

A directory with `project.godot` is a Godot project: `config_version=4` is Godot 3.x, `config_version=5`
Godot 4.x (Godot 3.0 wrote 3). A scan root may hold several projects (a folder of demos); each script
belongs to the nearest project above it, and one that has none is `auto`. Every `.gitignore` on the way
is honoured (pathspec, git's rules), and `.godot/`, `.import/`, `.git/` and, unless asked, `addons/` are
skipped. Nothing outside the scan root is read: links to directories are not followed, and a file
whose real path leaves the root (a link) is listed but never opened. Whatever cannot be named, followed or
opened (a name that is not UTF-8, a dangling link, a link loop, a folder whose path is over the system's
limit) is listed with the reason as a `Script` with a `problem`, never read: one bad path costs that path.
"""
from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.scan_files import read_small_text

ALWAYS_SKIPPED = (".godot", ".import", ".git")
VERSION_OF_CONFIG = {3: "3", 4: "3", 5: "4"}
CONFIG_RE = re.compile(r"(?m)^\s*config_version\s*=\s*(\d+)\s*$")
NAME_RE = re.compile(r'(?m)^\s*config/name\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass
class Project:
    dir: Path  # absolute
    rel: str  # relative to the scan root, posix ('.' for the root itself)
    name: str
    config_version: int | None
    godot_version: str  # "3" | "4" | "auto"
    source: str  # how the version was decided, for the report

    def to_dict(self) -> dict:
        return {"dir": self.rel, "name": self.name, "config_version": self.config_version,
                "godot_version": self.godot_version, "version_source": self.source}


@dataclass
class Script:
    path: Path
    rel: str  # relative to the scan root, posix
    project: Project
    outside: bool = False  # a link whose target is outside the scan root: never read
    problem: str | None = None  # why it cannot be scanned (a name that is not UTF-8, a broken link): listed, never read


def inside(root: Path, path: Path) -> bool:
    """Whether `path`'s real path (links resolved) is `root` (itself a real path) or under it."""
    real = os.path.realpath(path)
    return real == str(root) or real.startswith(str(root).rstrip(os.sep) + os.sep)


@dataclass
class Discovery:
    root: Path
    projects: list[Project]
    scripts: list[Script]
    skipped_dirs: dict[str, int] = field(default_factory=dict)  # reason -> directories skipped
    ignored_files: int = 0  # .gd files excluded by a .gitignore


def shown_path(root: Path, path: Path) -> str:
    """`path` relative to `root`, posix, as text any report can hold: bytes that are not UTF-8 as \\xNN."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def name_problem(path: Path) -> str | None:
    """Why a path found on disk cannot be scanned by its name, or None."""
    try:
        os.fsencode(path.name).decode("utf-8")
    except UnicodeDecodeError as e:
        return f"the file name is not UTF-8 (byte {e.start} of the name): not read"
    return None


def link_problem(entry: os.DirEntry) -> str | None:
    """Why a link cannot be followed (dangling, a loop), or None (not a link, or one that resolves)."""
    if not entry.is_symlink():
        return None
    try:
        os.stat(entry.path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a link loop: not followed"
        if e.errno == errno.ENOENT:
            return "a dangling link (its target does not exist): not followed"
        return f"a link that cannot be followed ({e.strerror or e}): not followed"
    return None


def read_project(project_dir: Path, rel: str, root: Path | None = None) -> Project:
    path = project_dir / "project.godot"
    if root is not None and not inside(root, path):
        return Project(project_dir, rel, project_dir.name, None, "auto",
                       "project.godot is a link out of the scanned folder (not read): auto")
    text = read_small_text(path) or ""
    m = CONFIG_RE.search(text)
    name_m = NAME_RE.search(text)
    name = name_m.group(1) if name_m else project_dir.name
    if m is None:
        return Project(project_dir, rel, name, None, "auto", "project.godot has no config_version: auto")
    cv = int(m.group(1))
    version = VERSION_OF_CONFIG.get(cv)
    if version is None:
        return Project(project_dir, rel, name, cv, "auto", f"project.godot config_version={cv} is not Godot 3 or 4: auto")
    return Project(project_dir, rel, name, cv, version, f"project.godot config_version={cv}: Godot {version}.x")


def no_project(root: Path) -> Project:
    return Project(root, ".", root.name, None, "auto", "no project.godot: auto")


def _gitignore(dir_: Path, root: Path) -> Any:
    path = dir_ / ".gitignore"
    text = read_small_text(path) if inside(root, path) else None
    if text is None:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def _ignored(specs: list[tuple[Path, Any]], path: Path, is_dir: bool) -> bool:
    """git's rule: the deepest .gitignore that has an opinion wins; within one file, the last matching line."""
    verdict = False
    for base, spec in specs:
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if hasattr(spec, "check_file"):  # pathspec >= 0.12: negations (`!keep.gd`) say False
            res = spec.check_file(rel).include
            if res is not None:
                verdict = bool(res)
        elif spec.match_file(rel):
            verdict = True
    return verdict


def _fallback(projects: list[Project], fallback: Project) -> Project:
    """The project of a script with none above it: the root's `auto` project, listed once."""
    if fallback not in projects:
        projects.append(fallback)
    return fallback


def _enter(root: Path, dir_: Path, project: Project | None, specs: list,
           projects: list[Project]) -> tuple[Project | None, list, list[os.DirEntry]]:
    """(the project in force, the .gitignore specs in force, the sorted entries) of one directory; OSError
    when it cannot be read."""
    spec = _gitignore(dir_, root)
    if spec is not None:
        specs = [*specs, (dir_, spec)]
    if (dir_ / "project.godot").is_file():
        rel = "." if dir_ == root else dir_.relative_to(root).as_posix()
        project = read_project(dir_, rel, root)
        projects.append(project)
    return project, specs, sorted(os.scandir(dir_), key=lambda e: e.name)


@dataclass
class _Walk:
    """What `discover` gathers as it walks the folders."""
    root: Path
    include_addons: bool
    fallback: Project  # the project of scripts with none above them
    projects: list[Project] = field(default_factory=list)
    scripts: list[Script] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    ignored_files: int = 0

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def owner(self, project: Project | None) -> Project:
        return project or _fallback(self.projects, self.fallback)


def discover(root: Path, include_addons: bool = False) -> Discovery:
    root = Path(root).resolve()
    walk = _Walk(root, include_addons, no_project(root))
    # (directory, project in force, gitignore specs in force)
    stack: list[tuple[Path, Project | None, list]] = [(root, None, [])]
    while stack:
        dir_, project, specs = stack.pop()
        try:
            project, specs, entries = _enter(root, dir_, project, specs, walk.projects)
        except OSError as err:  # a path over the system's limit, a folder that went away: listed, the rest goes on
            walk.skip("unreadable")
            owner = walk.owner(project)
            walk.scripts.append(Script(dir_, shown_path(root, dir_) + "/", owner,
                                       problem=f"a folder that cannot be read ({err.strerror or type(err).__name__}): "
                                               "not scanned"))
            continue
        subdirs = [sub for sub in (_visit(walk, e, project, specs) for e in entries) if sub is not None]
        for sub in reversed(subdirs):
            stack.append((sub, project, specs))
    walk.scripts.sort(key=lambda s: s.rel)
    walk.projects.sort(key=lambda p: p.rel)
    return Discovery(root, walk.projects, walk.scripts, walk.skipped, walk.ignored_files)


def _visit(walk: _Walk, e: os.DirEntry, project: Project | None, specs: list) -> Path | None:
    """One entry of a folder: a script is listed (or counted as ignored), a folder to walk is returned."""
    root = walk.root
    path = Path(e.path)
    broken = link_problem(e)
    if broken is not None:
        walk.scripts.append(Script(path, shown_path(root, path), walk.owner(project), problem=broken))
        return None
    try:
        is_dir = e.is_dir(follow_symlinks=False)
        is_file = e.is_file()
    except OSError:
        return None
    if is_dir:
        if e.name in ALWAYS_SKIPPED:
            walk.skip(e.name + "/")
        elif e.name == "addons" and not walk.include_addons:
            walk.skip("addons/")
        elif specs and _ignored(specs, path, True):
            walk.skip(".gitignore")
        else:
            return path
    elif is_file and e.name.endswith(".gd"):
        if specs and _ignored(specs, path, False):
            walk.ignored_files += 1
            return None
        owner = walk.owner(project)
        outside = e.is_symlink() and not inside(root, path)
        walk.scripts.append(Script(path, shown_path(root, path), owner, outside, problem=name_problem(path)))
    return None
