"""What the resolver finds, and the state of one resolution: `ApiUse` (a use resolved to `Class.member`),
`Unresolved` (with the reason), `Resolution` (a chunk's uses, as the stages and the trace read them), the
project around the chunk as the resolver sees it (`ProjectScope`), and `ResolveRun`, what every step of one
chunk's resolution reads and adds to."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from .classref import ClassReference
from .facts import GDScriptFacts
from .project import ProjectIndex

CODE_QUOTED = 80  # characters of the code a use or an unresolved name quotes
USES_SHOWN, GLOBALS_SHOWN = 60, 30  # resolved and unresolved uses, and global functions, the query trace lists
@dataclass(frozen=True)
class ApiUse:
    api: str  # `Owner.member`, or `Class.new`
    cls: str  # the class whose page documents it
    member: str
    kind: str
    line: int
    col: int
    text: str  # the code that uses it
    # class | constructor | local_type | narrowed | own_class | inferred_own_class | own_class_property | return_type |
    # self | value_type | cast | project_var
    via: str
    # Resolved only through the project's declarations (a `project_var` root and the hops after it): what the chunk
    # alone does not say. The class-reference entries read these uses; the version, mapping and guide decisions do
    # not (`Resolution.chunk_alone`).
    project: bool = False


@dataclass(frozen=True)
class Unresolved:
    name: str
    line: int
    col: int
    text: str
    reason: str
    missing_on: str | None = None  # the class that resolved but lacks the member in Godot 4
    project: bool = False  # reached only through the project's declarations (as `ApiUse.project`)


@dataclass
class Resolution:
    own_class: str | None
    own_class_from: str  # chunk | hint | inferred | none
    uses: list[ApiUse] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    globals: list[str] = field(default_factory=list)  # global functions called (`load`, `randf_range`)
    extends_name: str | None = None  # the class the script extends as written (a Godot 3 name stays as it is)

    @property
    def classes(self) -> set[str]:
        return {u.cls for u in self.uses}

    @property
    def apis(self) -> list[str]:
        return list(dict.fromkeys(u.api for u in self.uses))

    def chunk_alone(self) -> Resolution:
        """The same resolution without what only the project's declarations reached (`ApiUse.project`,
        `Unresolved.project`): what the version, mapping and guide decisions read. A Godot 3 use is the chunk's to
        show, and the guide model was fitted on chunks alone (its specificities count the uses a chunk resolves by
        itself; a file's `label: Label` makes `.text` look rare)."""
        if not any(u.project for u in self.uses) and not any(u.project for u in self.unresolved):
            return self
        return Resolution(self.own_class, self.own_class_from, [u for u in self.uses if not u.project],
                          [u for u in self.unresolved if not u.project], self.globals, self.extends_name)

    def missing(self) -> list[Unresolved]:
        return [u for u in self.unresolved if u.missing_on]

    def to_trace(self) -> dict[str, object]:
        return {"own_class": self.own_class, "own_class_from": self.own_class_from,
                "uses": [asdict(u) for u in self.uses][:USES_SHOWN],
                "unresolved": [asdict(u) for u in self.unresolved][:USES_SHOWN],
                "globals": self.globals[:GLOBALS_SHOWN]}



class Where(NamedTuple):
    """Where a use is: its line and column, and the code it quotes."""
    line: int
    col: int
    text: str


def api_use(owner: str, member: str, kind: str, where: Where, via: str, project: bool = False) -> ApiUse:
    """The use of `owner.member` (a `kind` of member) at `where`, resolved through `via`."""
    return ApiUse(f"{owner}.{member}", owner, member, kind, where.line, where.col, where.text, via, project)


@dataclass(frozen=True)
class ProjectScope:
    """The project around the chunk, as the resolver reads it: its index (None without a context) and the
    chunk's own scope in it (its file, or the project class it extends)."""
    project: ProjectIndex | None = None
    own_scope: str | None = None


def declared_by_project(project: ProjectIndex | None, scope: str | None, name: str) -> str | None:
    """Why `name` on this project class (or scope) is the project's own member, or None."""
    if project is None or not scope:
        return None
    found = project.member(scope, name)
    return f"declared by the project at {found.where()}" if found is not None else None


OwnMembers = dict[str, tuple[str, dict, str]]  # bare name -> (owner class, member info, via)


@dataclass
class ResolveRun:
    """One chunk's resolution under way: the facts, the class reference, the project, the own class's members
    the bare names may be, and the resolution so far (`add` keeps each use at a place once)."""
    facts: GDScriptFacts
    ref: ClassReference
    res: Resolution
    scope: ProjectScope
    max_hops: int
    members: OwnMembers
    seen: set[tuple[str, int, int]] = field(default_factory=set)

    @property
    def own(self) -> str | None:
        """The script's own class (its `extends`, the project's or the hint's), None where none is known."""
        return self.res.own_class

    def add(self, use: ApiUse) -> None:
        key = (use.api, use.line, use.col)
        if key in self.seen:
            return
        self.seen.add(key)
        self.res.uses.append(use)

    def unresolved(self, name: str, where: Where, reason: str) -> None:
        self.res.unresolved.append(Unresolved(name, where.line, where.col, where.text, reason))
