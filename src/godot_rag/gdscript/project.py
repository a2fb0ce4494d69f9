"""The request's `context`: what the project around a chunk says about it.

A chunk alone cannot tell the project's own `func change_scene` from Godot 3's `SceneTree.change_scene`;
the project can. Every field is optional and validated (an unknown field is an error that lists the
valid ones), and the trace shows what was given:

- `project_symbols`: the names the project declares, each with its kind, file and line (`godot-rag scan`
  and `retrieve --project DIR` build them with `scan/symbols.py`); classes carry their `extends`, so a
  project class resolves through the project's classes down to its engine class;
- `file_path`: the chunk's file, relative to the project (`player/player.gd`);
- `extends`: the file's `extends` as written (`Node2D`, `MyBase`, `res://base.gd`);
- `godot_version`: the project's Godot version (`"4.3"`, from `project.godot`'s `config/features`).

`ProjectIndex` is the lookups the version decisions make on the symbols, built once per context.
"""
from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..errors import ConfigError, clip

SYMBOL_KINDS = ("script", "class_name", "class", "autoload", "func", "static_func", "signal", "var", "const", "enum",
                "enum_value")
CLASS_KINDS = ("script", "class_name", "class", "autoload")
TYPED_SYMBOL_KINDS = ("var", "const")  # the kinds whose `type` the table keeps
TYPE_NAME = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"  # a stated type: `Label`, `Outer.Inner`
GLOBAL_CLASS_KINDS = ("class_name", "autoload")  # project classes any script can name (an inner class: through its outer)
RES = "res://"
UID = "uid://"  # an autoload declared by uid (Godot 4.4+); the scan resolves it through the project's `.uid` files
# A res:// path as long as the file system allows (Linux's PATH_MAX, 4096 bytes), with `::Outer.Inner` after it:
# a script's own symbol is named by its path, so the table takes any path Godot can open.
MAX_PATH_CHARS = 4096 + len(RES) + 1000
MAX_CHAIN = 32  # extends hops followed through the project's classes (a cycle stops there)


class ContextError(ConfigError):
    """A bad `context` object: one line naming the field."""


class Symbol(BaseModel):
    """One name the project declares. `scope`: the class it belongs to (`res://path.gd` for a script's
    top level, `res://path.gd::Inner` for an inner class); classes (`script`, `class_name`, `class`,
    `autoload`) name their own scope in `scope` and their parent as written in `extends`; a `var` or `const` may
    carry its stated `type`."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., min_length=1, max_length=MAX_PATH_CHARS)
    kind: Literal["script", "class_name", "class", "autoload", "func", "static_func", "signal", "var", "const", "enum",
                  "enum_value"]
    file: str | None = Field(None, max_length=MAX_PATH_CHARS)
    line: int | None = Field(None, ge=1)
    scope: str | None = Field(None, max_length=MAX_PATH_CHARS)
    extends: str | None = Field(None, max_length=MAX_PATH_CHARS)
    # var / const: the type its declaration states (`@onready var label: Label`, `:= Label.new()`, `as Label`), an
    # engine or a project class; a chunk that uses the name without declaring it reaches that class's members
    type: str | None = Field(None, max_length=300, pattern=TYPE_NAME)

    def where(self) -> str:
        return f"{self.file or '?'}:{self.line}" if self.line else (self.file or "the project")


class RequestContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project_symbols: list[Symbol] | None = Field(None, max_length=500_000, description="names the project declares")
    file_path: str | None = Field(None, max_length=MAX_PATH_CHARS, description="the chunk's file, relative to the project")
    extends: str | None = Field(None, max_length=MAX_PATH_CHARS, description="the file's `extends` as written")
    godot_version: str | None = Field(None, pattern=r"^[34](\.\d+){0,2}$", description='the project\'s Godot version, e.g. "4.3"')
    _index: ProjectIndex | None = PrivateAttr(None)

    @classmethod
    def parse(cls, data: object) -> RequestContext | None:
        """The context from a request's JSON object (None for none); a ContextError names the bad field."""
        if data is None or isinstance(data, RequestContext):
            return data
        if not isinstance(data, dict):
            raise ContextError("context must be an object with the fields " + ", ".join(cls.model_fields))
        unknown = [k for k in data if k not in cls.model_fields]
        if unknown:
            raise ContextError(f"unknown context field(s) {', '.join(clip(k) for k in unknown[:5])}; "
                               f"valid: {', '.join(cls.model_fields)}")
        try:
            return cls(**data)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise ContextError(f"context.{loc} = {clip(repr(err.get('input')), 40)}: {err['msg']}") from None

    @property
    def major(self) -> str | None:
        """'3' or '4' when the context states the Godot version."""
        return self.godot_version[0] if self.godot_version else None

    def index(self) -> ProjectIndex | None:
        if self.project_symbols is None:
            return None
        if self._index is None:
            self._index = ProjectIndex(self.project_symbols)
        return self._index

    def own_scope(self) -> str | None:
        """The scope of the chunk's file (`res://path.gd`)."""
        return RES + self.file_path.removeprefix(RES) if self.file_path else None

    def engine_extends(self) -> str | None:
        """The engine class the chunk's script extends, through the project's classes: `extends MyBase`
        (a project class extending Node2D) is a Node2D."""
        index = self.index()
        start = self.extends or (self.own_scope() if index and self.own_scope() in index.scopes else None)
        if not start:
            return None
        return index.engine_class(start) if index else (None if start.startswith(RES) else start)

    def to_trace(self) -> dict:
        index = self.index()
        return {"file_path": self.file_path, "extends": self.extends, "godot_version": self.godot_version,
                "engine_extends": self.engine_extends(),
                "project_symbols": None if index is None else {"names": len(index.declared), "classes": len(index.scopes),
                                                               "kinds": index.kind_counts}}


class ProjectIndex:
    """Lookups over the symbols: who declares a name, which scope a class name stands for, a scope's
    members and parent, and the engine class at the end of a project class's `extends` chain."""

    def __init__(self, symbols: list[Symbol]):
        self.declared: dict[str, list[Symbol]] = {}
        self.scopes: dict[str, str] = {}  # class name, autoload or res:// path -> scope
        self.parent: dict[str, str | None] = {}  # scope -> its `extends` as written
        self.members: dict[str, dict[str, Symbol]] = {}
        self.kind_counts: dict[str, int] = {}
        for s in symbols:
            self.kind_counts[s.kind] = self.kind_counts.get(s.kind, 0) + 1
            if s.kind in CLASS_KINDS:
                scope = s.scope or (RES + s.file if s.kind == "script" and s.file else s.name)
                self.scopes.setdefault(s.name, scope)
                self.scopes.setdefault(scope, scope)
                if s.extends is not None:
                    self.parent[scope] = s.extends
                else:
                    self.parent.setdefault(scope, None)
                if s.kind == "script":
                    continue
            else:
                self.members.setdefault(s.scope or "", {}).setdefault(s.name, s)
            self.declared.setdefault(s.name, []).append(s)

    def declares(self, name: str) -> list[Symbol]:
        return self.declared.get(name, [])

    def is_class(self, name: str | None) -> bool:
        return bool(name) and name in self.scopes

    def _chain(self, name: str) -> Iterator[str | None]:
        """The project scopes from `name` up its `extends`, then the first name that is not the project's."""
        seen: set[str] = set()
        cur: str | None = name
        while cur and cur in self.scopes and len(seen) < MAX_CHAIN:
            scope = self.scopes[cur]
            if scope in seen:
                return
            seen.add(scope)
            yield scope
            cur = self.parent.get(scope)
        yield cur

    @cached_property
    def engine_classes(self) -> frozenset[str]:
        """The engine classes the project's classes end on: what kind of project it is (an XR one has scripts
        on `XROrigin3D` or `XRController3D`)."""
        return frozenset(c for scope in set(self.scopes.values()) if (c := self.engine_class(scope)))

    def engine_class(self, name: str) -> str | None:
        """The engine class a project class (or path) ends on; a name that is not the project's is itself.
        A script with no `extends` is a RefCounted; a script the project could not read (`unread`) ends on none."""
        *scopes, last = list(self._chain(name))
        if last is None:
            return "RefCounted" if scopes and not (scopes[-1] or "").startswith(UID) else None
        return None if last.startswith(RES) else last

    def unread(self, name: str | None) -> bool:
        """Whether `name` is the project's autoload whose script could not be found (declared by a `uid://` that no
        `.uid` file or scene of the project resolves): what it declares is unknown, and all of it is the project's."""
        return bool(name) and self.scopes.get(name or "", "").startswith(UID)

    def chain(self, name: str) -> list[str]:
        """`name`'s project scopes up its `extends`, and the name it ends on."""
        return [x or "" for x in self._chain(name)]

    def type_scope(self, var: Symbol) -> str | None:
        """The project scope a declaration's stated type names: an inner class of the declaring file (`Inner`, or
        `Outer.Inner` in it) before a class of that name elsewhere, `Outer.Inner` through the class `Outer` names,
        else a `class_name` or autoload; None for a type the project does not define as a class (an enum's)."""
        if not var.type:
            return None
        file = (var.scope or "").split("::", 1)[0]
        outer, _, inner = var.type.rpartition(".")
        candidates = [f"{file}::{var.type}"] if file else []
        if outer and (outer_scope := self._global_class(outer)):
            candidates.append(f"{outer_scope}::{inner}")
        if not outer and (global_scope := self._global_class(var.type)):
            candidates.append(global_scope)
        return next((c for c in candidates if c in self.scopes), None)

    def _global_class(self, name: str) -> str | None:
        return next((s.scope for s in self.declares(name) if s.kind in GLOBAL_CLASS_KINDS and s.scope), None)

    def member(self, cls: str, name: str) -> Symbol | None:
        """`name` as declared by the project class `cls` or one of its project ancestors. A scope the symbols name
        only as their members' (a `var` of `res://main.gd` given without the script's own symbol) holds its own."""
        for scope in list(self._chain(cls))[:-1] or ([cls] if cls in self.members else []):
            if scope is None:  # only a chain's end is ever None, and the end is left out
                continue
            found = self.members.get(scope, {}).get(name)
            if found is not None:
                return found
        return None
