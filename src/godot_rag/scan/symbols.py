"""The project's symbol table: every name its scripts declare, with kind, file and line.

Each script is read once and parsed once (`godot_rag.gdscript.facts`): `class_name`, inner `class`, `func`
(static ones too), `signal`, member `var` and `const`, `enum` and its values; each script's and inner
class's `extends` as written (a class name or a `res://` path), so a project class resolves through
the project's classes down to its engine class. `project.godot` adds the `[autoload]` names and the
Godot version (`config/features`, else `config_version`). A file's declarations are cached in the scan
cache under the file's sha256, so a rescan parses only the files that changed.
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..gdscript.facts import parse_script
from ..gdscript.lexicon import IDENT_RE
from ..gdscript.project import RES, TYPE_NAME, TYPED_SYMBOL_KINDS, UID, Symbol
from ..store.scan_files import DEFAULT_MAX_FILE_BYTES, read_script, read_small_text
from .project import VERSION_OF_CONFIG, Project, discover

SYMBOLS_FORMAT = 2  # bump when a file's cached declarations change shape
FEATURES_RE = re.compile(r'(?m)^\s*config/features\s*=\s*PackedStringArray\(([^)]*)\)')
SECTION_RE = re.compile(r"(?m)^\[([^\]]+)\]\s*$")
AUTOLOAD_RE = re.compile(r'(?m)^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"\*?([^"]+)"')
VERSION_RE = re.compile(r"^\d+\.\d+$")
TYPE_NAME_RE = re.compile(TYPE_NAME)  # a stated type the table keeps (one `Symbol.type` accepts)
TSCN_ROOT_RE = re.compile(r'(?m)^\[node name="[^"]*"(?![^\]]*\bparent=)([^\]]*)\]')
TSCN_TYPE_RE = re.compile(r'\btype="([A-Za-z_][A-Za-z0-9_]*)"')
TSCN_SCRIPT_RE = re.compile(r'(?m)^script\s*=\s*ExtResource\(\s*"?([^")\s]+)"?\s*\)')
TSCN_EXT_RE = re.compile(r'(?m)^\[ext_resource\b([^\]]*)\]')
UID_FILE_RE = re.compile(r"^\s*(uid://[a-z0-9]+)\s*$")  # a `.uid` file beside a script (Godot 4.4+)
SCENE_UID_RE = re.compile(r'^\[gd_(?:scene|resource)\b[^\]]*\buid="(uid://[a-z0-9]+)"')  # a .tscn's header
HEADER_CHARS = 400  # what a `.uid` file or a scene's header is read of


@dataclass
class ProjectSymbols:
    symbols: list[Symbol]
    godot_version: str | None  # "4.3" from config/features, else "4" or "3" from config_version
    files: int = 0
    parsed: int = 0  # files parsed now (the rest came from the cache)
    digest: str = ""  # changes when any script or project.godot changes
    seconds: float = 0.0
    autoloads: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict:
        kinds: dict[str, int] = {}
        for s in self.symbols:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        return {"symbols": len(self.symbols), "kinds": kinds, "files": self.files, "parsed": self.parsed,
                "godot_version": self.godot_version, "autoloads": len(self.autoloads), "seconds": round(self.seconds, 3)}


def project_godot_version(text: str, config_version: int | None) -> str | None:
    """`config/features=PackedStringArray("4.3", ...)` gives "4.3"; else config_version 5 is "4", 3 or 4 is "3"."""
    m = FEATURES_RE.search(text)
    if m:
        for item in re.findall(r'"([^"]*)"', m.group(1)):
            if VERSION_RE.match(item) and item[0] in "34":
                return item
    return VERSION_OF_CONFIG.get(config_version) if config_version else None


def autoloads(text: str) -> dict[str, str]:
    """`[autoload]` name -> path (`res://...`; the `*` of an enabled singleton dropped)."""
    out: dict[str, str] = {}
    sections = list(SECTION_RE.finditer(text))
    for i, m in enumerate(sections):
        if m.group(1).strip() == "autoload":
            end = sections[i + 1].start() if i + 1 < len(sections) else len(text)
            for a in AUTOLOAD_RE.finditer(text, m.end(), end):
                out[a.group(1)] = a.group(2)
    return out


def _res(path: str, file: str) -> str:
    """A script path as `res://...`: `extends "base.gd"` is relative to the file's folder."""
    if path.startswith(RES):
        return path
    folder = file.rsplit("/", 1)[0] + "/" if "/" in file else ""
    return RES + folder + path


def file_declarations(text: str) -> dict:
    """What one script declares (JSON-ready, cached by the file's hash)."""
    facts = parse_script(text)
    return {"extends": facts.extends or facts.extends_path,
            "path_extends": facts.extends is None and facts.extends_path is not None,
            "decl": [[d.name, d.kind, d.line, d.scope, d.extends, d.type] for d in facts.declarations if not d.local]}


def file_symbols(rel: str, entry: dict) -> list[Symbol]:
    """The symbols of one script (path `rel` relative to the project) from its declarations."""
    own = RES + rel
    ext = entry.get("extends")
    if ext and entry.get("path_extends"):
        ext = _res(ext, rel)
    out = [Symbol(name=own, kind="script", file=rel, line=1, scope=own, extends=ext)]
    for name, kind, line, scope, extends, typ in entry["decl"]:
        at = own + ("::" + scope if scope else "")
        if kind == "class":
            inner = f"{at}::{name}" if not scope else f"{own}::{scope}.{name}"
            parent = _res(extends, rel) if extends and ("/" in extends or extends.endswith(".gd")) else extends
            out.append(Symbol(name=name, kind="class", file=rel, line=line, scope=inner, extends=parent))
        elif kind == "class_name":
            out.append(Symbol(name=name, kind="class_name", file=rel, line=line, scope=own))
        else:
            stated = typ if kind in TYPED_SYMBOL_KINDS and typ and TYPE_NAME_RE.match(typ) else None
            out.append(Symbol(name=name, kind=kind, file=rel, line=line, scope=at, type=stated))
    return out


def uid_paths(project_dir: Path, wanted: set[str]) -> dict[str, str]:
    """`uid://...` -> its `res://` path, for the uids wanted: the `.uid` file Godot 4.4+ writes beside a script
    (`ggt.gd.uid`), else a scene's header (`[gd_scene ... uid="uid://..."]`)."""
    out: dict[str, str] = {}
    for pattern, rx, path_of in (("*.uid", UID_FILE_RE, lambda f: f.with_suffix("")), ("*.tscn", SCENE_UID_RE, lambda f: f)):
        for f in sorted(project_dir.rglob(pattern)) if wanted - out.keys() else ():
            m = rx.match(read_small_text(f, HEADER_CHARS) or "")
            if m and m.group(1) in wanted:
                out.setdefault(m.group(1), RES + path_of(f).relative_to(project_dir).as_posix())
    return out


def _autoload_symbol(project_dir: Path, name: str, path: str) -> Symbol:
    if path.startswith(UID):  # not found in the project: still the project's name, its script unknown (`unread`)
        return Symbol(name=name, kind="autoload", file=path, scope=path)
    rel = path.removeprefix(RES)
    if rel.endswith(".gd"):
        return Symbol(name=name, kind="autoload", file=rel, scope=RES + rel)
    # A scene: its root node's script, else the root node's class.
    text = read_small_text(project_dir / rel) or ""
    root = TSCN_ROOT_RE.search(text)
    if root:
        section = SECTION_RE.search(text, root.end())
        body = text[root.end():section.start() if section else len(text)]
        sm = TSCN_SCRIPT_RE.search(body)
        if sm:
            for ext in TSCN_EXT_RE.finditer(text):
                attrs = dict(re.findall(r'(\w+)="([^"]*)"', ext.group(1)))
                if attrs.get("id") == sm.group(1) and attrs.get("path", "").endswith(".gd"):
                    return Symbol(name=name, kind="autoload", file=attrs["path"].removeprefix(RES), scope=attrs["path"])
        tm = TSCN_TYPE_RE.search(root.group(1))
        if tm:
            return Symbol(name=name, kind="autoload", file=rel, scope=RES + rel, extends=tm.group(1))
    return Symbol(name=name, kind="autoload", file=rel, scope=RES + rel)


def build_project_symbols(project: Project, cache=None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ProjectSymbols:
    """The symbol table of one project: every script under its folder (addons included: their
    `class_name`s are the project's names too), through the cache when one is given."""
    t0 = time.perf_counter()
    settings = read_small_text(project.dir / "project.godot") or ""
    disc = discover(project.dir, include_addons=True)
    scripts = [s for s in disc.scripts if s.project.dir == project.dir]
    texts: dict[str, str] = {}
    keys: dict[str, str] = {}
    h = hashlib.sha256(f"{SYMBOLS_FORMAT}|{settings}".encode())
    for s in scripts:
        if s.problem is not None:  # listed by the scan; nothing of it is read
            continue
        text, err = read_script(s.path, max_file_bytes)
        if err is not None or text is None:
            continue
        rel = s.path.relative_to(project.dir).as_posix()
        texts[rel] = text
        sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
        keys[rel] = f"symbols:{SYMBOLS_FORMAT}:{sha}"
        h.update(f"|{rel}:{sha}".encode())
    cached = cache.get_many(list(set(keys.values())), "file_symbols") if cache is not None else {}
    symbols: list[Symbol] = []
    parsed = 0
    for rel, text in texts.items():
        entry = cached.get(keys[rel])
        if entry is None:
            entry = file_declarations(text)
            parsed += 1
            cached[keys[rel]] = entry
            if cache is not None:
                cache.put(keys[rel], entry, "file_symbols")
        symbols.extend(file_symbols(rel, entry))
    loads = autoloads(settings)
    uids = uid_paths(project.dir, {p for p in loads.values() if p.startswith(UID)})
    h.update(f"|uids:{sorted(uids.items())}".encode())
    symbols.extend(_autoload_symbol(project.dir, name, uids.get(path, path)) for name, path in loads.items())
    return ProjectSymbols(symbols, project_godot_version(settings, project.config_version), files=len(texts), parsed=parsed,
                          digest=h.hexdigest()[:24], seconds=time.perf_counter() - t0, autoloads=loads)


def load_project_symbols(project_dir: Path, cache=None) -> ProjectSymbols:
    """The table of the project in `project_dir` (the folder holding `project.godot`)."""
    from .project import read_project

    project_dir = Path(project_dir).resolve()
    return build_project_symbols(read_project(project_dir, "."), cache)


def file_context(table: ProjectSymbols | None, file_rel: str | None, godot_version: str | None = None,
                 extends: str | None = None):
    """The request context of a chunk of `file_rel` (relative to the project): the project's symbols,
    the file, the file's `extends` as the table has it, and the project's Godot version."""
    from ..gdscript.project import RequestContext

    if extends is None and table is not None and file_rel:
        script = next((s for s in table.symbols if s.kind == "script" and s.file == file_rel), None)
        extends = script.extends if script is not None else None
    ctx = RequestContext(project_symbols=table.symbols if table is not None else None, file_path=file_rel, extends=extends,
                         godot_version=godot_version or (table.godot_version if table is not None else None))
    return ctx


MANY_DECLARATIONS = 16  # a name declared more often is one digest in a chunk's key: the key's cost stays bounded


def _declared_part(index, name: str) -> tuple[str, frozenset[str]]:
    """A name's declarations as they enter a chunk's key, and the project classes their stated types name
    (`var cam: Cam`, Cam extends Camera2D: a member's type reads through the project's classes too). A name
    declared in many places (the same function in every file, a file of one function repeated) is their digest:
    a key would otherwise grow with the project, and a scan with it as the square of its size."""
    decls = index.declared[name]
    lines = "\n".join(f"{s.name}|{s.kind}|{s.file}|{s.scope}|{s.extends}|{s.type}" for s in decls)
    if len(decls) > MANY_DECLARATIONS:
        lines = f"{name}#{len(decls)}#{hashlib.sha256(lines.encode()).hexdigest()}"
    return lines, frozenset(scope for s in decls if (scope := index.type_scope(s)))


def chunk_symbols_key(index, text: str, starts: list[str], memo: dict | None = None) -> str:
    """What of the project a chunk's decisions can read, as a digest for its cache key: the symbols named
    in the chunk (name, kind, file, scope, extends, type; not their lines, so an edit that only moves lines
    recomputes nothing elsewhere), the `extends` chains of the project classes it names, of its own file
    (`starts`) and of the project classes its named variables' types name (`ProjectIndex.type_scope`), and the
    engine classes the project's classes end on (what kind of project it is: the validator keeps a feature's
    guides for a chunk of a project of that feature). An edit elsewhere in the
    project that changes none of these leaves the chunk's cached result valid. `memo`: kept by the caller
    across the chunks of one index (each name's part is computed once)."""
    names = set(IDENT_RE.findall(text))
    memo = memo if memo is not None else {}
    parts: list[str] = []
    typed: set[str] = set()
    for name in sorted(names & index.declared.keys()):
        if name not in memo:
            memo[name] = _declared_part(index, name)
        part, scopes = memo[name]
        parts.append(part)
        typed |= scopes
    for name in sorted((names & index.scopes.keys()) | {s for s in starts if s} | typed):
        parts.append(name + ">" + ">".join(index.chain(name)))
    parts.append("engine:" + ",".join(sorted(index.engine_classes)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]
