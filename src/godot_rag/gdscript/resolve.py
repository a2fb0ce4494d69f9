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

from dataclasses import replace

from .chain_roots import Root, ValueTypes, chain_root
from .classref import ClassReference
from .elements import Chain, Part
from .facts import GDScriptFacts
from .own_class import bare_call_names, infer_candidates, infer_owners, own_class, own_members
from .project import ProjectIndex, RequestContext
from .resolution import CODE_QUOTED, ProjectScope, Resolution, ResolveRun, Unresolved, Where, api_use, declared_by_project

# Kinds of member whose documented type is a value one can keep calling into.
TYPED_KINDS = {"method", "property", "constructor"}
# GDScript reads a Dictionary's string key with dot syntax (`result.response_code` is `result["response_code"]`): a
# name that is no documented member there is a key, not a missing member. A call still needs a method.
KEYED_BY_DOT = frozenset({"Dictionary"})
# Roots whose object may be a project script's (which may declare what its engine class lacks): no *missing* member.
ROOM_FOR_SUBCLASS = {"narrowed": "the `is` test", "value_type": "a call's value", "cast": "the cast",
                     "project_var": "the project's declaration"}
NOT_RESOLVED_CALLS = ("super", "yield", "preload", "assert")  # language forms written as calls, no API


def resolve_uses(facts: GDScriptFacts, ref: ClassReference, extends_hint: str | None = None,
                 max_hops: int = 1, project: ProjectIndex | None = None, own_scope: str | None = None) -> Resolution:
    """`project`: the request context's ProjectIndex (None without one); `own_scope`: the chunk's file
    in it (`res://path.gd`). A receiver of a project class resolves through the project's class first
    (its own members are no engine API), then through its engine ancestor."""
    own, own_from = own_class(facts, ref, extends_hint, project)
    res = Resolution(own, own_from, extends_name=own if own_from == "project" else (facts.extends or extends_hint))
    scope = ProjectScope(project, _own_scope(facts, project, own_scope))
    if not ref:
        res.own_class_from = "no class reference loaded"
        return res
    inferred: dict[str, tuple[str, float]] = {}
    candidates: set[str] = set()  # without an own class: the classes the bare calls allow
    if own is None:
        bare = bare_call_names(facts, ref)
        candidates = infer_candidates(bare, ref)
        inferred = infer_owners(bare, candidates, ref)
        if inferred:
            res.own_class_from = "inferred"
    run = ResolveRun(facts, ref, res, scope, max_hops, own_members(facts, ref, own, candidates, project))
    call_types = _resolve_bare_calls(run, inferred)
    _resolve_bare_names(run)
    _resolve_chains(run, call_types)
    res.uses.sort(key=lambda u: (u.line, u.col))
    return res


def _own_scope(facts: GDScriptFacts, project: ProjectIndex | None, own_scope: str | None) -> str | None:
    """The chunk's scope in the project: the given one where the project has it, else the project class the
    chunk's own `extends` names; None without a project's scope."""
    if project is None:
        return own_scope
    if own_scope not in project.scopes and own_scope not in project.members:
        own_scope = None
    if own_scope is None and project.is_class(facts.extends or facts.extends_path):
        own_scope = facts.extends or facts.extends_path  # the chunk's own `extends` names a project class
    return own_scope


def _resolve_bare_names(run: ResolveRun) -> None:
    """Bare names of the own class's members (`velocity = ...`, `if visible:`), except what the project declares."""
    for name in run.facts.names:
        if name.name not in run.members:
            continue
        where = Where(name.line, name.col, run.facts.line_text(name.line).strip()[:CODE_QUOTED])
        if why := declared_by_project(run.scope.project, run.scope.own_scope, name.name):
            run.unresolved(name.name, where, why)
            continue
        owner, info, via = run.members[name.name]
        run.add(api_use(owner, name.name, info["kind"], where, via))


def _resolve_bare_calls(run: ResolveRun, inferred: dict[str, tuple[str, float]]) -> dict[int, str | None]:
    """Bare calls: the script's own methods, or global functions. Returns call start offset -> documented return type."""
    facts, ref, res = run.facts, run.ref, run.res
    call_types: dict[int, str | None] = {}  # call start offset -> documented return type
    for call in facts.calls:
        n = call.name
        if n in facts.functions or n in facts.declared or n in NOT_RESOLVED_CALLS:
            continue
        where = Where(call.line, call.col, f"{n}()")
        if why := declared_by_project(run.scope.project, run.scope.own_scope, n):
            run.unresolved(n, where, why)
        elif hit := _own_method(run, n, inferred):
            cls, info, via = hit
            run.add(api_use(cls, n, info["kind"], where, via))
            call_types[call.start] = ref.type_of(info)
        elif ref.global_member(n) is not None:
            res.globals.append(n)  # global functions are listed, not followed: their page is not the class's
        elif not ref.has_class(n):  # a class's name is a built-in constructor call such as `Vector2(1, 0)`
            run.unresolved(n, where, f"not a method of {run.own} or its ancestors, nor a global function" if run.own
                           else "no `extends` to resolve a bare call against")
    return call_types


def _own_method(run: ResolveRun, name: str, inferred: dict[str, tuple[str, float]]) -> tuple[str, dict, str] | None:
    """(owner, info, via) of a bare call that is a method of the script's own class, or of the class inferred."""
    if run.own is not None:
        found = run.ref.member(run.own, name)
        return (found[0], found[1], "own_class") if found and found[1]["kind"] == "method" else None
    if name in inferred:
        owner, share = inferred[name]
        return owner, run.ref.classes[owner]["members"][name], f"inferred_own_class ({share:.0%} of the classes with these calls)"
    return None


def _resolve_chains(run: ResolveRun, call_types: dict[int, str | None]) -> None:
    """Call chains, from a class, a typed local, an own-class property, a call's return type or `self`, through
    documented types. A local whose value is a bare call or a chain (`var t := create_tween()`) has the type that
    call documents, its hops counted, within `max_hops`: chains are in text order, and a use sees only a binding
    before it, so a local's value is typed before its uses."""
    res = run.res
    value_types: ValueTypes = {start: (typ, 1) for start, typ in call_types.items() if typ is not None and run.ref.has_class(typ)}
    for chain in run.facts.chains:
        root = chain_root(run, chain, call_types, value_types)
        before = len(res.unresolved)
        end = _follow_chain(run, chain, root) if root is not None else None
        through_project = root is not None and root[1] == "project_var"  # what only the project's declaration reached
        if through_project:
            res.unresolved[before:] = [replace(u, project=True) for u in res.unresolved[before:]]
        # A value that starts with a bare call and goes on (`get_tree().create_timer(1)`) is the chain's, not the call's.
        # A value through the project's declarations types no local (`ApiUse.project` would not follow it).
        if end is None or through_project:
            value_types.pop(chain.root_start, None)
        else:
            value_types[chain.root_start] = end


def _follow_chain(run: ResolveRun, chain: Chain, root: Root) -> tuple[str, int] | None:
    """The chain's members, part by part from its root's class, on through documented return types. Returns the
    documented type of the chain's value, and the hops it took, when every part resolves and the last is a call
    within `max_hops`. A root that may be a project script's object (an `is` test's, a cast's, a call's value:
    `get_parent()` is some Node) has no *missing* member: the script may declare it."""
    ref = run.ref
    typ: str | None
    typ, via, hops = root
    root_hops, text = hops, chain.text[:CODE_QUOTED]
    for i, part in enumerate(chain.parts):
        if typ is None or not ref.has_class(typ):
            break
        where = Where(part.line, part.col, text)
        if part.name == "new" and part.call and via == "class" and i == 0:
            run.add(api_use(typ, "new", "constructor", where, "constructor"))
            continue  # the chain goes on with an instance of the same class
        # As code reaches it: a theme item does not hide an ancestor's property (`Button.disabled` is BaseButton's).
        found = ref.member(typ, part.name, code=True) or ref.member(typ, part.name)
        if found is None:
            run.res.unresolved.append(_unresolved_part(ref, typ, part, text, via if hops == root_hops else None))
            break
        owner, info = found
        run.add(api_use(owner, part.name, info["kind"], where, via if hops == root_hops else "return_type",
                        project=via == "project_var"))
        # Chains go on only through a call's documented return type (`get_tree().quit()`).
        nxt = ref.type_of(info) if part.call and info["kind"] in TYPED_KINDS else None
        if nxt is None or hops >= run.max_hops:
            break
        typ, hops = nxt, hops + 1
    else:
        return (typ, hops) if chain.parts and chain.complete and chain.parts[-1].call and ref.has_class(typ) else None
    return None


def _unresolved_part(ref: ClassReference, typ: str, part: Part, text: str, root_via: str | None) -> Unresolved:
    """Why `typ` has no member `part`: a Dictionary's key, a subclass's member, a member a project subclass may
    have (`root_via`: how the chain's root was found, None past its first hop), or a *missing* member."""
    def unresolved(reason: str, missing_on: str | None = None) -> Unresolved:
        return Unresolved(part.name, part.line, part.col, text, reason, missing_on=missing_on)

    if typ in KEYED_BY_DOT and not part.call:
        return unresolved(f"a key of the {typ} (dot syntax reads a key)")
    sub = ref.on_subclass(typ, part.name)
    if sub is not None:  # a downcast access, valid Godot 4: not a missing member
        return unresolved(f"{typ} has no '{part.name}', its subclass {sub} has")
    if root_via in ROOM_FOR_SUBCLASS:  # `if body is CharacterBody3D:` may be a project class's body
        return unresolved(f"{typ} has no '{part.name}'; {ROOM_FOR_SUBCLASS[root_via]} leaves room for a subclass that has")
    return unresolved(f"{typ} has no member '{part.name}' in Godot 4", missing_on=typ)


def extends_hint(facts: GDScriptFacts, setting: str | None, context: RequestContext | None) -> str | None:
    """The script's class for a chunk without `extends`: the `extends` setting, read through the project's
    classes (the scan passes the file's `extends` as written, maybe a project class), else the context's
    engine class. An inner class is not the file's class: a chunk that declares one gets only the setting."""
    if context is None or facts.declares_inner_class:
        return setting
    index = context.index()
    if setting and index is not None and index.is_class(setting):
        return index.engine_class(setting)
    return setting or context.engine_extends()
