"""Where an access chain starts: the class of its receiver (a typed or cast local, a class or singleton, a
project class, an own-class property, a member variable the project types, a call's documented return type,
`self`), or None with the reason listed as unresolved."""
from __future__ import annotations

from typing import NamedTuple

from .elements import Chain
from .project import TYPED_SYMBOL_KINDS, ProjectIndex, Symbol
from .resolution import CODE_QUOTED, ResolveRun, Unresolved, Where, api_use, declared_by_project

Root = tuple[str, str, int]  # (class, via, hops): the class a chain starts from, how it was found, hops taken
ValueTypes = dict[int, tuple[str, int]]  # a call's or chain's start -> its documented type and the hops it took


class ProjectVar(NamedTuple):
    """A typed `var` or `const` the project declares on the chunk's own script."""
    project: ProjectIndex
    symbol: Symbol
    type: str


def chain_root(run: ResolveRun, chain: Chain, call_types: dict[int, str | None], value_types: ValueTypes) -> Root | None:
    """(class, via, hops) a chain starts from: a name, an own-class property, a call's documented return type or
    `self`; None where the chunk does not say (listed as unresolved)."""
    if chain.root_kind == "identifier" and chain.root in run.members:
        return _own_member_root(run, chain, run.members[chain.root])
    if chain.root_kind == "identifier":
        return _identifier_root(run, chain, value_types)
    if chain.root_kind == "call":
        typ = call_types.get(chain.root_start)
        return (typ, "return_type", 1) if typ is not None and run.ref.has_class(typ) else None
    first = chain.parts[0] if chain.parts else None
    if chain.root_kind == "self" and run.own is not None:
        if first is not None and (why := declared_by_project(run.scope.project, run.scope.own_scope, first.name)):
            run.unresolved(first.name, Where(first.line, first.col, chain.text[:CODE_QUOTED]), why)
            return None
        return run.own, "self", 0
    if first is not None:
        run.unresolved(first.name, Where(first.line, first.col, chain.text[:CODE_QUOTED]),
                       f"receiver is {chain.root_kind.replace('_', ' ')}, whose class is not known")
    return None


def _identifier_root(run: ResolveRun, chain: Chain, value_types: ValueTypes) -> Root | None:
    """(class, via, hops) of a chain rooted at a name: a project class (through its engine class), a typed local,
    a class, a singleton by its global name, a local cast with `as`, a local whose value is a call the resolver
    typed (`value_types`: the call's or chain's start -> its documented return type and the hops it took, which the
    local's chain goes on from), or a member variable of the chunk's own script whose declaration elsewhere in the
    project states its type (`_project_var_root`); None where neither the chunk nor the project says (its first part
    listed as unresolved). The local is the one the use sees (`binding_at`)."""
    facts, ref, name = run.facts, run.ref, chain.root
    narrowed = facts.narrowed_type(name, chain.root_start)
    local = narrowed or facts.local_types.get(name)
    first = chain.parts[0] if chain.parts else None
    project_class = _project_class(run, name, local)
    if project_class is not None and first is not None:
        return _project_class_root(run, chain, *project_class)
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
    if name not in facts.declared and first is not None and (var := _project_var(run, name)) is not None:
        return _project_var_root(run, chain, var)
    if first is not None:
        why = "a local whose type the chunk does not state" if name in facts.declared else "an untyped name"
        run.unresolved(f"{name}.{first.name}", Where(first.line, first.col, chain.text[:CODE_QUOTED]), why)
    return None


def _project_class(run: ResolveRun, name: str, local: str | None) -> tuple[ProjectIndex, str] | None:
    """(the project, the project class) a chain's root is: its local's type, or the name itself where the chunk
    declares no such name and the class reference has no such class."""
    project, ref = run.scope.project, run.ref
    if project is None:
        return None
    if local and not ref.has_class(local) and project.is_class(local):
        return project, local
    if name not in run.facts.declared and not ref.has_class(name) and project.is_class(name):
        return project, name
    return None


def _project_class_root(run: ResolveRun, chain: Chain, project: ProjectIndex, project_class: str) -> Root | None:
    """A chain rooted at an object of a project class: its own members are the project's, the rest its engine
    class's."""
    first = chain.parts[0]
    where = Where(first.line, first.col, chain.text[:CODE_QUOTED])
    if why := declared_by_project(project, project_class, first.name):
        run.unresolved(f"{chain.root}.{first.name}", where, f"{why} (class {project_class})")
        return None
    engine = project.engine_class(project_class)
    if engine and run.ref.has_class(engine):
        return engine, f"project_class ({project_class} extends {engine})", 0
    run.unresolved(f"{chain.root}.{first.name}", where,
                   f"the project class {project_class} has no engine class the reference knows")
    return None


def _project_var(run: ResolveRun, name: str) -> ProjectVar | None:
    """The typed `var` or `const` of the chunk's own script (or a project ancestor) named `name`, or None. Not in a
    chunk that declares an inner class: code in it sees that class's members, not the file's."""
    project, own_scope = run.scope.project, run.scope.own_scope
    if project is None or not own_scope or run.facts.declares_inner_class:
        return None
    found = project.member(own_scope, name)
    if found is None or found.kind not in TYPED_SYMBOL_KINDS or not found.type:
        return None
    return ProjectVar(project, found, found.type)


def _project_var_root(run: ResolveRun, chain: Chain, var: ProjectVar) -> Root | None:
    """A chain rooted at a member variable the chunk does not declare, whose declaration in the project states its
    type (`@onready var label: Label = $Label` elsewhere in the file). The type is an engine object class, or a
    project class read through to its engine class (`ProjectIndex.type_scope`), its own members first. A value type
    (`var items: Array[Item]`, `var lookup: Dictionary`, `var offset: Vector2`) is not followed: it says what the
    file keeps, not which engine feature the chunk uses, and its members are the language's basics (`size`,
    `clear`, `has`): on the demos' scan, every class-page entry and guide such a type added was graded 1 or 0. Like
    a cast, it leaves room for a subclass: the node may carry a script, so a member the class lacks is not reported
    missing."""
    ref, first, declared_at = run.ref, chain.parts[0], var.symbol.where()

    def unresolved(why: str) -> None:
        run.res.unresolved.append(Unresolved(f"{chain.root}.{first.name}", first.line, first.col, chain.text[:CODE_QUOTED],
                                             why, project=True))

    if ref.has_class(var.type):
        if ref.value_type(var.type):
            unresolved(f"declared at {declared_at} as {var.type}, a value type: not followed")
            return None
        return var.type, "project_var", 0
    typ = var.project.type_scope(var.symbol)
    if typ is None:
        unresolved(f"declared at {declared_at} as {var.type}, a type that neither the project nor the class "
                   "reference defines as a class")
        return None
    if why := declared_by_project(var.project, typ, first.name):
        unresolved(f"{why} (class {var.type}, the type of {chain.root} at {declared_at})")
        return None
    engine = var.project.engine_class(typ)
    return (engine, "project_var", 0) if engine and ref.has_class(engine) else None


def _own_member_root(run: ResolveRun, chain: Chain, member: tuple[str, dict, str]) -> Root | None:
    """A chain rooted at a member of the own class (`velocity.x`): the member is a use; the chain goes on through
    its documented type, one hop as through a call's return type."""
    owner, info, via = member
    where = Where(run.facts.line_of_offset(chain.root_start), run.facts.col_of_offset(chain.root_start), chain.text[:CODE_QUOTED])
    if why := declared_by_project(run.scope.project, run.scope.own_scope, chain.root):
        run.unresolved(chain.root, where, why)
        return None
    run.add(api_use(owner, chain.root, info["kind"], where, via))
    typ = run.ref.type_of(info) if info["kind"] == "property" else None
    return (typ, "property_type", 1) if typ is not None and run.ref.has_class(typ) else None
