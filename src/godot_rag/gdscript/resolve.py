"""Resolve stage: the chunk's Godot API uses, as `Class.member`, through the Godot 4 class reference.

What is resolved (from the parsed facts, nothing guessed from a list):
- `Class.member` on a class or singleton (`Input.is_action_pressed`, `Vector2.ZERO`);
- `Class.new()`;
- bare calls of methods of the script's own class: its `extends` (the chunk's, or the
  request's `extends` hint, e.g. the scan's file header), walking the inheritance chain.
  Without either, a bare call resolves only when every class that documents the name
  agrees with the other bare calls on one lineage (`get_tree()` is only ever `Node.get_tree`);
- call chains through the documented return type (`get_tree().quit()` is `SceneTree.quit`),
  up to `max_hops` calls deep;
- locals and parameters typed or constructed in the chunk (`var t: Timer`, `var t := Timer.new()`, `for l: Label in ...`);
- a name an `is` test narrows, where the test holds (`if event is InputEventKey: event.keycode`); a member the
  class lacks there is no missing member (the value may be a project subclass's);
- bare names of the script's own class's members (`velocity = ...`, `modulate.a`, `pressed.connect(...)`):
  a name the chunk does not declare that the own class or an ancestor documents as a property, constant,
  signal or enum (`CharacterBody2D.velocity`); without `extends`, only where the inferred classes agree on
  its owner, as for bare calls. A chain rooted at such a property goes on through the property's documented
  type (`velocity.x` is `Vector2.x`);
- with the project around the chunk (the request's `context`), a member variable the chunk uses but does not
  declare, typed by its declaration elsewhere in the file (`@onready var label: Label = $Score`): `project_var`,
  flagged `ApiUse.project`, since the chunk alone does not say it.

Everything else stays unresolved and is listed with the reason. A receiver that resolves to
a class which does not document the member is a *missing* member: Godot 4 has no such API
there, which is what the migration validator needs (`get_tree().change_scene(...)`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .classref import ClassReference
from .facts import GDScriptFacts
from .project import TYPED_SYMBOL_KINDS

SHARE_DIGITS = 4  # a receiver's share of candidate classes, rounded as the trace rounds ratios

# Kinds of member whose documented type is a value one can keep calling into.
TYPED_KINDS = {"method", "property", "constructor"}
# Kinds of own-class member a bare name refers to (a bare method name is a call, resolved as one; a theme item is
# reached only through the theme API).
OWN_NAME_KINDS = {"property", "constant", "signal", "enum"}
# Decided: without `extends`, a bare call resolves to the class that documents it for this share of the classes
# that have every bare-called method (`get_tree()`: all but TreeItem).
OWNER_SHARE = 0.95
# GDScript reads a Dictionary's string key with dot syntax (`result.response_code` is `result["response_code"]`): a
# name that is no documented member there is a key, not a missing member. A call still needs a method.
KEYED_BY_DOT = frozenset({"Dictionary"})
# Roots whose object may be a project script's (which may declare what its engine class lacks): no *missing* member.
ROOM_FOR_SUBCLASS = {"narrowed": "the `is` test", "value_type": "a call's value", "cast": "the cast",
                     "project_var": "the project's declaration"}
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
    via: str  # class | constructor | local_type | narrowed | own_class | inferred_own_class | own_class_property | return_type | self | value_type | cast | project_var
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

    def chunk_alone(self) -> "Resolution":
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

    def to_trace(self) -> dict:
        return {"own_class": self.own_class, "own_class_from": self.own_class_from,
                "uses": [asdict(u) for u in self.uses][:USES_SHOWN],
                "unresolved": [asdict(u) for u in self.unresolved][:USES_SHOWN],
                "globals": self.globals[:GLOBALS_SHOWN]}


def _own_class(facts: GDScriptFacts, ref: ClassReference, hint: str | None, project=None) -> tuple[str | None, str]:
    if facts.extends and ref.has_class(facts.extends):
        return facts.extends, "chunk"
    written = facts.extends or facts.extends_path
    if written and project is not None and project.is_class(written):
        engine = project.engine_class(written)  # `extends MyBase`: the engine class at the end of the project's chain
        if engine and ref.has_class(engine):
            return engine, "project"
    if hint and ref.has_class(hint):
        return hint, "hint"
    return None, "none"


def _bare_call_names(facts: GDScriptFacts, ref: ClassReference) -> list[str]:
    """The bare calls the chunk does not define itself and that some class documents as a method."""
    out = []
    for call in facts.calls:
        n = call.name
        if n in facts.functions or n in facts.declared or n in out or ref.global_member(n) is not None:
            continue
        if ref.resolver_map(n):
            out.append(n)
    return out


def _infer_owners(names: list[str], candidates: set[str], ref: ClassReference,
                  share: float = OWNER_SHARE) -> dict[str, tuple[str, float]]:
    """Without `extends`: the script's class must be one that has every bare-called method.
    Over those classes, a name resolves when one documenting class serves at least `share` of
    them (`get_tree()` is `Node.get_tree` for every class that has it but TreeItem). A deduction
    from the class reference, traced with its share; a name that stays split stays unresolved."""
    maps = [ref.resolver_map(n) for n in names]
    out: dict[str, tuple[str, float]] = {}
    if not candidates:
        return out
    for n, m in zip(names, maps):
        counts: dict[str, int] = {}
        for cls in candidates:
            counts[m[cls]] = counts.get(m[cls], 0) + 1
        owner, hits = max(counts.items(), key=lambda kv: kv[1])
        if hits / len(candidates) >= share:
            out[n] = (owner, round(hits / len(candidates), SHARE_DIGITS))
    return out


def _infer_candidates(names: list[str], ref: ClassReference) -> set[str]:
    """The classes the script may be without `extends`: those that have every bare-called method."""
    if not names:
        return set()
    candidates = set(ref.resolver_map(names[0]))
    for n in names[1:]:
        candidates &= set(ref.resolver_map(n))
    return candidates


def _own_member(ref: ClassReference, cls: str, name: str) -> tuple[str, dict] | None:
    """(owner, info) of a member a bare name of `cls`'s script refers to (property, constant, signal, enum)."""
    found = ref.member(cls, name, code=True)
    return found if found is not None and found[1]["kind"] in OWN_NAME_KINDS else None


def _infer_member_owners(names: list[str], candidates: set[str], ref: ClassReference,
                         share: float = OWNER_SHARE) -> dict[str, tuple[str, float]]:
    """Bare names without `extends`: a name resolves when one documenting class serves at least `share` of the
    classes the bare calls allow (`name` is `Node.name` for every class with `get_tree()` but TreeItem). A name
    none of them documents is the script's own, declared outside the chunk: it stays unresolved."""
    out: dict[str, tuple[str, float]] = {}
    for n in dict.fromkeys(names):
        counts: dict[str, int] = {}
        for cls in candidates:
            if (found := _own_member(ref, cls, n)) is not None:
                counts[found[0]] = counts.get(found[0], 0) + 1
        if counts:
            owner, hits = max(counts.items(), key=lambda kv: kv[1])
            if hits / len(candidates) >= share:
                out[n] = (owner, round(hits / len(candidates), SHARE_DIGITS))
    return out


def _declared_by_project(project, scope: str | None, name: str) -> str | None:
    """Why `name` on this project class (or scope) is the project's own member, or None."""
    if project is None or not scope:
        return None
    found = project.member(scope, name)
    return f"declared by the project at {found.where()}" if found is not None else None


def resolve_uses(facts: GDScriptFacts, ref: ClassReference, extends_hint: str | None = None,
                 max_hops: int = 1, infer_own_class: bool = True, project=None, own_scope: str | None = None) -> Resolution:
    """`project`: the request context's ProjectIndex (None without one); `own_scope`: the chunk's file
    in it (`res://path.gd`). A receiver of a project class resolves through the project's class first
    (its own members are no engine API), then through its engine ancestor."""
    own, own_from = _own_class(facts, ref, extends_hint, project)
    res = Resolution(own, own_from, extends_name=own if own_from == "project" else (facts.extends or extends_hint))
    if project is not None and own_scope not in project.scopes and own_scope not in project.members:
        own_scope = None
    if project is not None and own_scope is None and project.is_class(facts.extends or facts.extends_path):
        own_scope = facts.extends or facts.extends_path  # the chunk's own `extends` names a project class
    if not ref:
        res.own_class_from = "no class reference loaded"
        return res
    inferred: dict[str, tuple[str, float]] = {}
    candidates: set[str] = set()  # without an own class: the classes the bare calls allow
    if own is None and infer_own_class:
        bare = _bare_call_names(facts, ref)
        candidates = _infer_candidates(bare, ref)
        inferred = _infer_owners(bare, candidates, ref)
        if inferred:
            res.own_class_from = "inferred"
    members = _own_members(facts, ref, own, candidates, project)
    seen: set[tuple[str, int, int]] = set()

    def add(api_cls: str, member: str, info_kind: str, line: int, col: int, text: str, via: str, project: bool = False) -> None:
        key = (f"{api_cls}.{member}", line, col)
        if key in seen:
            return
        seen.add(key)
        res.uses.append(ApiUse(f"{api_cls}.{member}", api_cls, member, info_kind, line, col, text, via, project))

    scope = ProjectScope(project, own_scope)
    call_types = _resolve_bare_calls(facts, ref, res, own, inferred, add, scope)
    _resolve_bare_names(facts, res, members, add, scope)
    _resolve_chains(facts, ref, res, own, call_types, max_hops, add, scope, members)
    res.uses.sort(key=lambda u: (u.line, u.col))
    return res


AddUse = Callable[..., None]  # (class, member, kind, line, col, code, via, project=False)
OwnMembers = dict[str, tuple[str, dict, str]]  # bare name -> (owner class, member info, via)


def _bare_member_names(facts: GDScriptFacts, ref: ClassReference, project) -> list[str]:
    """The bare names (values and chain roots) that may be members of the script's own class: not declared by
    the chunk, no class, singleton or global, no project class."""
    names = [n.name for n in facts.names] + [c.root for c in facts.chains if c.root_kind == "identifier"]
    return [n for n in dict.fromkeys(names) if n not in facts.declared and not ref.has_class(n)
            and ref.global_member(n) is None and not (project is not None and project.is_class(n))]


def _own_members(facts: GDScriptFacts, ref: ClassReference, own: str | None, candidates: set[str], project) -> OwnMembers:
    """The bare names that are documented members of the script's own class (or, without one, of the class
    the bare calls infer), with the owner that documents each."""
    names = _bare_member_names(facts, ref, project)
    out: OwnMembers = {}
    if own is not None:
        for n in names:
            if (found := _own_member(ref, own, n)) is not None:
                out[n] = (found[0], found[1], "own_class_property")
    elif candidates and names:
        for n, (owner, share) in _infer_member_owners(names, candidates, ref).items():
            out[n] = (owner, ref.classes[owner]["members"][n],
                      f"inferred_own_class_property ({share:.0%} of the classes with these calls)")
    return out


def _resolve_bare_names(facts: GDScriptFacts, res: Resolution, members: OwnMembers, add: AddUse, scope: ProjectScope) -> None:
    """Bare names of the own class's members (`velocity = ...`, `if visible:`), except what the project declares."""
    for ref_ in facts.names:
        if ref_.name not in members:
            continue
        text = facts.line_text(ref_.line).strip()[:CODE_QUOTED]
        if why := _declared_by_project(scope.project, scope.own_scope, ref_.name):
            res.unresolved.append(Unresolved(ref_.name, ref_.line, ref_.col, text, why))
            continue
        owner, info, via = members[ref_.name]
        add(owner, ref_.name, info["kind"], ref_.line, ref_.col, text, via)


@dataclass(frozen=True)
class ProjectScope:
    """The project around the chunk, as the resolver reads it: its index (None without a context) and the
    chunk's own scope in it (its file, or the project class it extends)."""
    project: Any = None  # project_context.ProjectIndex
    own_scope: str | None = None


def _resolve_bare_calls(facts: GDScriptFacts, ref: ClassReference, res: Resolution, own: str | None,
                        inferred: dict[str, tuple[str, float]], add: AddUse, scope: ProjectScope) -> dict[int, str | None]:
    """Bare calls: the script's own methods, or global functions. Returns call start offset -> documented return type."""
    call_types: dict[int, str | None] = {}  # call start offset -> documented return type
    for call in facts.calls:
        n = call.name
        if n in facts.functions or n in facts.declared or n in ("super", "yield", "preload", "assert"):
            continue
        if why := _declared_by_project(scope.project, scope.own_scope, n):
            res.unresolved.append(Unresolved(n, call.line, call.col, f"{n}()", why))
            continue
        hit = None
        if own is not None:
            found = ref.member(own, n)
            if found and found[1]["kind"] == "method":
                hit = (found[0], found[1], "own_class")
        elif n in inferred:
            owner, share = inferred[n]
            hit = (owner, ref.classes[owner]["members"][n], f"inferred_own_class ({share:.0%} of the classes with these calls)")
        if hit:
            cls, info, via = hit
            add(cls, n, info["kind"], call.line, call.col, f"{n}()", via)
            call_types[call.start] = ref.type_of(info)
            continue
        if ref.global_member(n) is not None:
            res.globals.append(n)  # global functions are listed, not followed: their page is not the class's
            continue
        if ref.has_class(n):
            continue  # a built-in constructor call such as `Vector2(1, 0)`
        reason = (f"not a method of {own} or its ancestors, nor a global function" if own
                  else "no `extends` to resolve a bare call against")
        res.unresolved.append(Unresolved(n, call.line, call.col, f"{n}()", reason))

    return call_types


def _identifier_root(facts: GDScriptFacts, ref: ClassReference, res: Resolution, chain, scope: ProjectScope,
                     value_types: dict[int, tuple[str, int]]) -> tuple[str, str, int] | None:
    """(class, via, hops) of a chain rooted at a name: a project class (through its engine class), a typed local,
    a class, a singleton by its global name, a local cast with `as`, a local whose value is a call the resolver
    typed (`value_types`: the call's or chain's start -> its documented return type and the hops it took, which the
    local's chain goes on from), or a member variable of the chunk's own script whose declaration elsewhere in the
    project states its type (`_project_var_root`); None where neither the chunk nor the project says (its first part
    listed as unresolved). The local is the one the use sees (`binding_at`)."""
    project = scope.project
    name = chain.root
    narrowed = facts.narrowed_type(name, chain.root_start)
    local = narrowed or facts.local_types.get(name)
    pcls = (local if local and not ref.has_class(local) and project is not None and project.is_class(local)
            else name if name not in facts.declared and not ref.has_class(name) and project is not None
            and project.is_class(name) else None)
    first = chain.parts[0] if chain.parts else None
    if pcls is not None and first is not None:
        if why := _declared_by_project(project, pcls, first.name):
            res.unresolved.append(Unresolved(f"{name}.{first.name}", first.line, first.col, chain.text[:CODE_QUOTED],
                                             f"{why} (class {pcls})"))
            return None
        engine = project.engine_class(pcls)
        if engine and ref.has_class(engine):
            return engine, f"project_class ({pcls} extends {engine})", 0
        res.unresolved.append(Unresolved(f"{name}.{first.name}", first.line, first.col, chain.text[:CODE_QUOTED],
                                         f"the project class {pcls} has no engine class the reference knows"))
        return None
    if local and ref.has_class(local):
        return local, "narrowed" if narrowed else "local_type", 0
    if ref.has_class(name) and name not in facts.declared:
        return name, "class", 0
    if name not in facts.declared and (glob := ref.global_member(name)) and (typ := ref.type_of(glob[1])):
        return typ, "class", 0  # a singleton by its global name
    bound = facts.binding_at(name, chain.root_start) if not local else None
    if bound is not None and bound.cast and ref.has_class(bound.cast):
        return bound.cast, "cast", 0
    if bound is not None and bound.value_start is not None and (typed := value_types.get(bound.value_start)) is not None:
        return typed[0], "value_type", typed[1]
    if name not in facts.declared and first is not None and (var := _project_var(facts, scope, name)) is not None:
        return _project_var_root(ref, res, chain, scope, var)
    if first is not None:
        why = "a local whose type the chunk does not state" if name in facts.declared else "an untyped name"
        res.unresolved.append(Unresolved(f"{name}.{first.name}", first.line, first.col, chain.text[:CODE_QUOTED], why))
    return None


def _project_var(facts: GDScriptFacts, scope: ProjectScope, name: str):
    """The typed `var` or `const` of the chunk's own script (or a project ancestor) named `name`, or None. Not in a
    chunk that declares an inner class: code in it sees that class's members, not the file's."""
    if scope.project is None or not scope.own_scope or facts.declares_inner_class:
        return None
    found = scope.project.member(scope.own_scope, name)
    return found if found is not None and found.kind in TYPED_SYMBOL_KINDS and found.type else None


def _project_var_root(ref: ClassReference, res: Resolution, chain, scope: ProjectScope, var) -> tuple[str, str, int] | None:
    """A chain rooted at a member variable the chunk does not declare, whose declaration in the project states its
    type (`@onready var label: Label = $Label` elsewhere in the file). The type is an engine object class, or a
    project class read through to its engine class (`ProjectIndex.type_scope`), its own members first. A value type
    (`var items: Array[Item]`, `var lookup: Dictionary`, `var offset: Vector2`) is not followed: it says what the
    file keeps, not which engine feature the chunk uses, and its members are the language's basics (`size`,
    `clear`, `has`): on the demos' scan, every class-page entry and guide such a type added was graded 1 or 0. Like
    a cast, it leaves room for a subclass: the node may carry a script, so a member the class lacks is not reported
    missing."""
    project, first = scope.project, chain.parts[0]

    def unresolved(why: str) -> None:
        res.unresolved.append(Unresolved(f"{chain.root}.{first.name}", first.line, first.col, chain.text[:CODE_QUOTED],
                                         why, project=True))

    if ref.has_class(var.type):
        if ref.value_type(var.type):
            unresolved(f"declared at {var.where()} as {var.type}, a value type: not followed")
            return None
        return var.type, "project_var", 0
    typ = project.type_scope(var)
    if typ is None:
        unresolved(f"declared at {var.where()} as {var.type}, a type that neither the project nor the class "
                   "reference defines as a class")
        return None
    if why := _declared_by_project(project, typ, first.name):
        unresolved(f"{why} (class {var.type}, the type of {chain.root} at {var.where()})")
        return None
    engine = project.engine_class(typ)
    return (engine, "project_var", 0) if engine and ref.has_class(engine) else None


def _own_member_root(facts: GDScriptFacts, ref: ClassReference, res: Resolution, scope: ProjectScope, chain,
                     member: tuple[str, dict, str], add: AddUse) -> tuple[str, str, int] | None:
    """A chain rooted at a member of the own class (`velocity.x`): the member is a use; the chain goes on through
    its documented type, one hop as through a call's return type."""
    owner, info, via = member
    line, col = facts.line_of_offset(chain.root_start), facts.col_of_offset(chain.root_start)
    text = chain.text[:CODE_QUOTED]
    if why := _declared_by_project(scope.project, scope.own_scope, chain.root):
        res.unresolved.append(Unresolved(chain.root, line, col, text, why))
        return None
    add(owner, chain.root, info["kind"], line, col, text, via)
    typ = ref.type_of(info) if info["kind"] == "property" else None
    return (typ, "property_type", 1) if typ is not None and ref.has_class(typ) else None


def _chain_root(facts: GDScriptFacts, ref: ClassReference, res: Resolution, own: str | None,
                call_types: dict[int, str | None], scope: ProjectScope, chain, members: OwnMembers,
                add: AddUse, value_types: dict[int, tuple[str, int]]) -> tuple[str, str, int] | None:
    """(class, via, hops) a chain starts from: a name, an own-class property, a call's documented return type or
    `self`; None where the chunk does not say (listed as unresolved)."""
    if chain.root_kind == "identifier" and chain.root in members:
        return _own_member_root(facts, ref, res, scope, chain, members[chain.root], add)
    if chain.root_kind == "identifier":
        return _identifier_root(facts, ref, res, chain, scope, value_types)
    if chain.root_kind == "call":
        typ = call_types.get(chain.root_start)
        return (typ, "return_type", 1) if typ is not None and ref.has_class(typ) else None
    first = chain.parts[0] if chain.parts else None
    if chain.root_kind == "self" and own is not None:
        if first is not None and (why := _declared_by_project(scope.project, scope.own_scope, first.name)):
            res.unresolved.append(Unresolved(first.name, first.line, first.col, chain.text[:CODE_QUOTED], why))
            return None
        return own, "self", 0
    if first is not None:
        res.unresolved.append(Unresolved(first.name, first.line, first.col, chain.text[:CODE_QUOTED],
                                         f"receiver is {chain.root_kind.replace('_', ' ')}, whose class is not known"))
    return None


def _resolve_chains(facts: GDScriptFacts, ref: ClassReference, res: Resolution, own: str | None,
                    call_types: dict[int, str | None], max_hops: int, add: AddUse, scope: ProjectScope,
                    members: OwnMembers) -> None:
    """Call chains, from a class, a typed local, an own-class property, a call's return type or `self`, through
    documented types. A local whose value is a bare call or a chain (`var t := create_tween()`) has the type that
    call documents, its hops counted, within `max_hops`: chains are in text order, and a use sees only a binding
    before it, so a local's value is typed before its uses."""
    value_types = {start: (typ, 1) for start, typ in call_types.items() if typ is not None and ref.has_class(typ)}
    for chain in facts.chains:
        root = _chain_root(facts, ref, res, own, call_types, scope, chain, members, add, value_types)
        before = len(res.unresolved)
        end = _follow_chain(ref, res, chain, root, max_hops, add) if root is not None else None
        if root is not None and root[1] == "project_var":  # what only the project's declaration reached
            res.unresolved[before:] = [replace(u, project=True) for u in res.unresolved[before:]]
        # A value that starts with a bare call and goes on (`get_tree().create_timer(1)`) is the chain's, not the call's.
        # A value through the project's declarations types no local (`ApiUse.project` would not follow it).
        if end is None or (root is not None and root[1] == "project_var"):
            value_types.pop(chain.root_start, None)
        else:
            value_types[chain.root_start] = end


def _follow_chain(ref: ClassReference, res: Resolution, chain, root: tuple[str, str, int], max_hops: int,
                  add: AddUse) -> tuple[str, int] | None:
    """The chain's members, part by part from its root's class, on through documented return types. Returns the
    documented type of the chain's value, and the hops it took, when every part resolves and the last is a call
    within `max_hops`. A root that may be a project script's object (an `is` test's, a cast's, a call's value:
    `get_parent()` is some Node) has no *missing* member: the script may declare it."""
    typ: str | None
    typ, via, hops = root
    root_hops, text = hops, chain.text[:CODE_QUOTED]
    for i, part in enumerate(chain.parts):
        if typ is None or not ref.has_class(typ):
            break
        if part.name == "new" and part.call and via == "class" and i == 0:
            add(typ, "new", "constructor", part.line, part.col, text, "constructor")
            continue  # the chain goes on with an instance of the same class
        # As code reaches it: a theme item does not hide an ancestor's property (`Button.disabled` is BaseButton's).
        found = ref.member(typ, part.name, code=True) or ref.member(typ, part.name)
        if found is None and typ in KEYED_BY_DOT and not part.call:
            res.unresolved.append(Unresolved(part.name, part.line, part.col, text, f"a key of the {typ} (dot syntax reads a key)"))
            break
        if found is None:
            sub = ref.on_subclass(typ, part.name)
            if sub is not None:  # a downcast access, valid Godot 4: not a missing member
                res.unresolved.append(Unresolved(part.name, part.line, part.col, text, f"{typ} has no '{part.name}', its subclass {sub} has"))
                break
            if via in ROOM_FOR_SUBCLASS and hops == root_hops:  # `if body is CharacterBody3D:` may be a project class's body
                res.unresolved.append(Unresolved(part.name, part.line, part.col, text,
                                                 f"{typ} has no '{part.name}'; {ROOM_FOR_SUBCLASS[via]} leaves room for a subclass that has"))
                break
            res.unresolved.append(Unresolved(part.name, part.line, part.col, text,
                                             f"{typ} has no member '{part.name}' in Godot 4", missing_on=typ))
            break
        owner, info = found
        add(owner, part.name, info["kind"], part.line, part.col, text, via if hops == root_hops else "return_type",
            project=root[1] == "project_var")
        # Chains go on only through a call's documented return type (`get_tree().quit()`).
        nxt = ref.type_of(info) if part.call and info["kind"] in TYPED_KINDS else None
        if nxt is None or hops >= max_hops:
            break
        typ, hops = nxt, hops + 1
    else:
        return (typ, hops) if chain.parts and chain.complete and chain.parts[-1].call and ref.has_class(typ) else None
    return None


def extends_hint(facts: GDScriptFacts, setting: str | None, context) -> str | None:
    """The script's class for a chunk without `extends`: the `extends` setting, read through the project's
    classes (the scan passes the file's `extends` as written, maybe a project class), else the context's
    engine class. An inner class is not the file's class: a chunk that declares one gets only the setting."""
    if context is None or facts.declares_inner_class:
        return setting
    index = context.index()
    if setting and index is not None and index.is_class(setting):
        return index.engine_class(setting)
    return setting or context.engine_extends()
