"""The script's own class, and the bare names and calls that are its members: from the chunk's `extends`, the
project's classes or the request's hint; without any, inferred from the classes that document every bare call."""
from __future__ import annotations

from .classref import ClassReference
from .facts import GDScriptFacts
from .project import ProjectIndex
from .resolution import OwnMembers

SHARE_DIGITS = 4  # a receiver's share of candidate classes, rounded as the trace rounds ratios
# Kinds of own-class member a bare name refers to (a bare method name is a call, resolved as one; a theme item is
# reached only through the theme API).
OWN_NAME_KINDS = {"property", "constant", "signal", "enum"}
# Decided: without `extends`, a bare call resolves to the class that documents it for this share of the classes
# that have every bare-called method (`get_tree()`: all but TreeItem).
OWNER_SHARE = 0.95


def own_class(facts: GDScriptFacts, ref: ClassReference, hint: str | None,
              project: ProjectIndex | None = None) -> tuple[str | None, str]:
    """(the script's class, where it comes from: `chunk`, `project`, `hint` or `none`)."""
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


def bare_call_names(facts: GDScriptFacts, ref: ClassReference) -> list[str]:
    """The bare calls the chunk does not define itself and that some class documents as a method."""
    out = []
    for call in facts.calls:
        n = call.name
        if n in facts.functions or n in facts.declared or n in out or ref.global_member(n) is not None:
            continue
        if ref.resolver_map(n):
            out.append(n)
    return out


def infer_owners(names: list[str], candidates: set[str], ref: ClassReference,
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


def infer_candidates(names: list[str], ref: ClassReference) -> set[str]:
    """The classes the script may be without `extends`: those that have every bare-called method."""
    if not names:
        return set()
    candidates = set(ref.resolver_map(names[0]))
    for n in names[1:]:
        candidates &= set(ref.resolver_map(n))
    return candidates


def own_member(ref: ClassReference, cls: str, name: str) -> tuple[str, dict] | None:
    """(owner, info) of a member a bare name of `cls`'s script refers to (property, constant, signal, enum)."""
    found = ref.member(cls, name, code=True)
    return found if found is not None and found[1]["kind"] in OWN_NAME_KINDS else None


def infer_member_owners(names: list[str], candidates: set[str], ref: ClassReference,
                         share: float = OWNER_SHARE) -> dict[str, tuple[str, float]]:
    """Bare names without `extends`: a name resolves when one documenting class serves at least `share` of the
    classes the bare calls allow (`name` is `Node.name` for every class with `get_tree()` but TreeItem). A name
    none of them documents is the script's own, declared outside the chunk: it stays unresolved."""
    out: dict[str, tuple[str, float]] = {}
    for n in dict.fromkeys(names):
        counts: dict[str, int] = {}
        for cls in candidates:
            if (found := own_member(ref, cls, n)) is not None:
                counts[found[0]] = counts.get(found[0], 0) + 1
        if counts:
            owner, hits = max(counts.items(), key=lambda kv: kv[1])
            if hits / len(candidates) >= share:
                out[n] = (owner, round(hits / len(candidates), SHARE_DIGITS))
    return out


def bare_member_names(facts: GDScriptFacts, ref: ClassReference, project: ProjectIndex | None) -> list[str]:
    """The bare names (values and chain roots) that may be members of the script's own class: not declared by
    the chunk, no class, singleton or global, no project class."""
    names = [n.name for n in facts.names] + [c.root for c in facts.chains if c.root_kind == "identifier"]
    return [n for n in dict.fromkeys(names) if n not in facts.declared and not ref.has_class(n)
            and ref.global_member(n) is None and not (project is not None and project.is_class(n))]


def own_members(facts: GDScriptFacts, ref: ClassReference, own: str | None, candidates: set[str],
                project: ProjectIndex | None) -> OwnMembers:
    """The bare names that are documented members of the script's own class (or, without one, of the class
    the bare calls infer), with the owner that documents each."""
    names = bare_member_names(facts, ref, project)
    out: OwnMembers = {}
    if own is not None:
        for n in names:
            if (found := own_member(ref, own, n)) is not None:
                out[n] = (found[0], found[1], "own_class_property")
    elif candidates and names:
        for n, (owner, share) in infer_member_owners(names, candidates, ref).items():
            out[n] = (owner, ref.classes[owner]["members"][n],
                      f"inferred_own_class_property ({share:.0%} of the classes with these calls)")
    return out
