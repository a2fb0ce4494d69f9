"""The API check: what a Godot 4 reviewer checks by hand against the class reference, for one chunk's resolved
uses. Pure functions of the facts, the resolution and the class reference.

Kinds (each finding names the rule that fired, its place and the reference entry):
- `deprecated_api` (warning) and `experimental_api` (info): a use of a class or member the reference marks so,
  with the reference's note;
- `missing_engine_member` (error): a member the receiver's class and its ancestors do not document, with the
  closest real members;
- `wrong_argument_count` (error): a method call whose argument count no signature of the method accepts.

Only a receiver whose engine class the code states is evidence: a typed or constructed local, the script's
`extends`, a class or engine singleton by name, a value type. A dynamic receiver, a name the project declares,
a node path and a string are never evidence; a use whose receiver did not resolve is listed as undecided, with
the resolver's reason, never guessed. A member missing on a call's value is decided only where no script can
stand behind the value (`get_node()` returns some Node, which may carry a script that declares it).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .classref import ClassReference
from .elements import Chain
from .facts import GDScriptFacts
from .reference_facts import Mark, ReferenceEntry, accepted_counts, marks_of, reference_entry, signatures_of
from .resolution import ApiUse, Resolution, Unresolved
from .suggest import Suggestion, closest_members

SEVERITY = {"deprecated_api": "warning", "experimental_api": "info", "missing_engine_member": "error",
            "wrong_argument_count": "error"}
MARK_KIND = {"deprecated": "deprecated_api", "experimental": "experimental_api"}
# Ways the resolver reached a receiver that only guess at it: a bare call's class inferred from the other calls.
GUESSED_VIAS = ("inferred_own_class",)
OWN_CLASS_VIAS = ("own_class", "inferred_own_class")  # a bare call or name of the script's own class
INNER_METHOD = "the chunk is indented (a method of an inner class?): the file's class is not its own"
# Classes whose objects may carry a script (a scene's node, a custom resource): a call's value of such a class may
# declare what its engine class lacks. `Object` and `RefCounted` values may be anything.
SCRIPT_HOSTS = ("Node", "Resource")
OPEN_CLASSES = frozenset({"Object", "RefCounted"})
# Receivers no script can stand behind: a class or singleton by name (`Input.x`), a fresh `Class.new().x`.
CLOSED_VIAS = frozenset({"class", "constructor"})
DYNAMIC_CLASSES = frozenset({"Variant"})  # a type that stands for any value: no member is missing on it
QUOTED = 80  # characters of the code a finding quotes
REFERENCE_VERSION = "4.7"  # the Godot version whose class reference the pages are (the docs' `doc_version`)
STRING_FILL = "s"  # what a string's characters read as when arguments are counted
# The `label_prototypes` ids ingest derives from the reference (`ingest/reference_prototypes.py`): a mark's is
# `api:deprecated_api:TileMap.set_cell`, a per-use check's `api:missing_engine_member`.
REFERENCE_PROTOTYPE_PREFIX = "api:"
PER_MARK_KINDS = ("deprecated_api", "experimental_api")


@dataclass(frozen=True)
class ApiFinding:
    kind: str  # deprecated_api | experimental_api | missing_engine_member | wrong_argument_count
    severity: str
    rule: str  # the rule that fired (`deprecated_member`, `missing_member_on_typed_local`, `argument_count`, ...)
    line: int
    col: int
    api: str  # `Class.member`, or `Class`
    receiver: str  # how the receiver's class is known (the resolver's `via`)
    message: str
    reference: ReferenceEntry
    code: str
    note: str = ""  # the reference's note (a mark's)
    suggestions: tuple[str, ...] = ()  # a mark's linked names, or the closest real members
    signature: str = ""  # the reference's signature(s), for an argument count
    arguments: int | None = None  # the arguments the call passes


def prototype_id(finding: ApiFinding) -> str:
    """The id of the derived `label_prototypes` record a finding accepts."""
    tail = f":{finding.api}" if finding.kind in PER_MARK_KINDS else ""
    return f"{REFERENCE_PROTOTYPE_PREFIX}{finding.kind}{tail}"


def is_reference_prototype(prototype: Mapping[str, object]) -> bool:
    """Whether a `label_prototypes` payload is derived from the reference: only the API check decides those."""
    return str(prototype.get("prototype_id") or "").startswith(REFERENCE_PROTOTYPE_PREFIX)


@dataclass(frozen=True)
class Undecided:
    """A use the check could not decide, and why (an unresolved receiver, a value a script may stand behind)."""
    name: str
    line: int
    col: int
    reason: str


@dataclass
class ApiCheck:
    findings: list[ApiFinding] = field(default_factory=list)
    undecided: list[Undecided] = field(default_factory=list)
    checked: int = 0  # engine uses checked (each resolved use and each class name)


def check_api(facts: GDScriptFacts, res: Resolution, ref: ClassReference,
              renames: Mapping[str, str] | None = None) -> ApiCheck:
    """The findings of one chunk: its marked classes, its resolved uses (marks and argument counts) and the
    members its receivers lack. `renames`: Godot 3 member name -> Godot 4 name (`suggest.member_renames`)."""
    out = ApiCheck()
    _check_class_names(facts, ref, out)
    call_text = argument_text(facts)
    inner = inner_method(facts, res)
    for use in res.uses:
        if use.via.startswith(GUESSED_VIAS) or (inner and use.via.startswith(OWN_CLASS_VIAS)):
            why = INNER_METHOD if inner else f"receiver guessed ({use.via}), not stated"
            out.undecided.append(Undecided(use.api, use.line, use.col, why))
            continue
        if use.via == "local_type" and (root := _retyped_root(facts, use)) is not None:
            why = f"the chunk declares '{root}' more than once with other types: the type this use sees is not sure"
            out.undecided.append(Undecided(use.api, use.line, use.col, why))
            continue
        out.checked += 1
        _check_marks(facts, ref, use, out)
        _check_arguments(facts, call_text, ref, use, out)
    for miss in res.unresolved:
        _check_missing(facts, ref, res, miss, renames, out)
    out.findings.sort(key=lambda f: (f.line, f.col, f.kind))
    return out


def _retyped_root(facts: GDScriptFacts, use: ApiUse) -> str | None:
    """The local name a use's chain starts with when the chunk declares it more than once with different types
    (`var line: Array` in one block, `var line: Dictionary` in another): the resolver's types are not scoped by
    block, so the type this use sees is not sure. None otherwise."""
    for chain in facts.chains:
        if chain.root_kind == "identifier" and any((p.line, p.col) == (use.line, use.col) for p in chain.parts):
            types = {d.type for d in facts.declarations if d.name == chain.root and d.local}
            return chain.root if len(types) > 1 else None
    return None


def inner_method(facts: GDScriptFacts, res: Resolution) -> bool:
    """Whether the chunk reads as a method of an inner class (its code starts indented) whose own class came from
    outside the chunk (the file's `extends`): that class is not the inner class's, so nothing the chunk reaches
    through it (`size`, a bare call) is stated."""
    if res.own_class_from == "chunk":
        return False
    first = next((line for line in facts.no_comments.splitlines() if line.strip()), "")
    return first[:1] in (" ", "\t")


# -- marks ------------------------------------------------------------------------------------------
def _check_class_names(facts: GDScriptFacts, ref: ClassReference, out: ApiCheck) -> None:
    """A class the reference marks, named in code (`extends TileMap`, `var t: TileMap`, `TileMap.new()`); not a
    member access (`.TileMap`), a node path (`$TileMap`), a string or a name the chunk declares."""
    for name in sorted(facts.identifiers - facts.declared):
        info = ref.classes.get(name) if ref.has_class(name) else None
        marks = marks_of(info)
        if not marks:
            continue
        for m in re.finditer(rf"(?<![\w.$%/@]){re.escape(name)}(?!\w)", facts.code):
            if facts.region(m.start()) != "code":
                continue
            line = facts.line_of_offset(m.start())
            place = Place(line, facts.col_of_offset(m.start()), "class_name", facts.line_text(line).strip()[:QUOTED])
            out.checked += 1
            out.findings += [_mark_finding(ref, mark, name, place) for mark in marks]
            break  # one finding per class and chunk: its first place


@dataclass(frozen=True)
class Place:
    """Where a finding is, how its receiver is known, and the code it quotes."""
    line: int
    col: int
    receiver: str
    code: str


def _mark_finding(ref: ClassReference, mark: Mark, api: str, place: Place) -> ApiFinding:
    """The finding of one Deprecated or Experimental mark on a class (`api` = `Class`) or a member (`Class.member`)."""
    kind = MARK_KIND[mark.kind]
    cls, _, member = api.partition(".")
    label = str(ref.classes[cls]["members"][member]["kind"]) if member else "class"
    message = f"{api} is {mark.kind} in Godot {REFERENCE_VERSION}" + (f": {mark.note}" if mark.note else ".")
    return ApiFinding(kind, SEVERITY[kind], f"{mark.kind}_{label}", place.line, place.col, api, place.receiver,
                      message, reference_entry(ref, cls, member or None), place.code, mark.note, mark.see)


def used_as_advised(facts: GDScriptFacts, use: ApiUse, mark: Mark) -> bool:
    """Whether the use already follows the mark's note: a deprecated base-class member whose note says to use it
    through a subclass (`XRPositionalTracker.get_input`: "Use through XRControllerTracker"), on a receiver the chunk
    types as that subclass (`tracker: XRControllerTracker`)."""
    root = re.match(r"\s*([A-Za-z_]\w*)\s*\.", use.text)
    return root is not None and facts.local_types.get(root.group(1)) in mark.see


def _check_marks(facts: GDScriptFacts, ref: ClassReference, use: ApiUse, out: ApiCheck) -> None:
    info = (ref.classes.get(use.cls) or {}).get("members", {}).get(use.member)
    place = Place(use.line, use.col, use.via, use.text)
    out.findings += [_mark_finding(ref, mark, use.api, place) for mark in marks_of(info)
                     if not used_as_advised(facts, use, mark)]


# -- argument counts --------------------------------------------------------------------------------
def argument_text(facts: GDScriptFacts) -> str:
    """The chunk's text as `count_arguments` reads it: comments blanked, each string's characters replaced by a
    letter (an argument still, but its commas and brackets do not count); offsets unchanged."""
    chars = list(facts.no_comments)
    for start, end, _ in facts.strings:
        chars[start:end] = STRING_FILL * (end - start)
    return "".join(chars)


def count_arguments(code: str, name_end: int) -> int | None:
    """The arguments of the call whose callee's name ends at `name_end` in `code` (`argument_text`);
    None when no `(` follows the name (a Callable, a property) or its parentheses do not close."""
    i = name_end
    while i < len(code) and code[i] in " \t":
        i += 1
    if i >= len(code) or code[i] != "(":
        return None
    depth, commas, seen = 0, 0, False
    for ch in code[i + 1:]:
        if depth == 0 and ch == ")":
            return commas + 1 if seen else commas  # a trailing comma (`f(a, )`) adds no argument
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            commas, seen = commas + 1, False
            continue
        seen = seen or not ch.isspace()
    return None


def _call_name_end(facts: GDScriptFacts, use: ApiUse) -> int | None:
    """Where the called name of `use` ends in the chunk: a chain's call part, or a bare call, at its place."""
    for chain in facts.chains:
        for part in chain.parts:
            if part.call and part.name == use.member and (part.line, part.col) == (use.line, use.col):
                return part.end
    for call in facts.calls:
        if call.name == use.member and (call.line, call.col) == (use.line, use.col):
            return call.end
    return None


def _check_arguments(facts: GDScriptFacts, call_text: str, ref: ClassReference, use: ApiUse, out: ApiCheck) -> None:
    """`call_text`: the chunk's `argument_text`."""
    if use.kind != "method":
        return
    info = ref.classes[use.cls]["members"].get(use.member)
    signatures = signatures_of(info)
    if any("virtual" in s.qualifiers for s in signatures):
        return  # a script implements a virtual method (`_init`) with parameters of its own
    end = _call_name_end(facts, use) if signatures else None
    given = count_arguments(call_text, end) if end is not None else None
    if given is None or any(s.accepts(given) for s in signatures):
        return
    wanted = accepted_counts(signatures)
    text = " | ".join(s.text(use.member) for s in signatures)
    message = f"{use.api} takes {wanted} argument(s), the call passes {given}: {text}"
    out.findings.append(ApiFinding("wrong_argument_count", SEVERITY["wrong_argument_count"], "argument_count",
                                   use.line, use.col, use.api, use.via, message, reference_entry(ref, use.cls, use.member),
                                   use.text, signature=text, arguments=given))


# -- missing members --------------------------------------------------------------------------------
def _receiver_of(facts: GDScriptFacts, ref: ClassReference, res: Resolution, miss: Unresolved) -> tuple[str | None, str]:
    """(how the receiver's class is stated, or None; why not) for a member the resolver found missing."""
    for chain in facts.chains:
        for i, part in enumerate(chain.parts):
            if (part.line, part.col) == (miss.line, miss.col) and part.name == miss.name:
                return _chain_receiver(_ChainAt(facts, ref, res, chain), i)
    return None, "the use is not in an access chain"


@dataclass(frozen=True)
class _ChainAt:
    """A chain with what deciding its receiver reads: the facts, the reference and the resolution."""
    facts: GDScriptFacts
    ref: ClassReference
    res: Resolution
    chain: Chain


def _chain_receiver(at: _ChainAt, index: int) -> tuple[str | None, str]:
    facts, ref, chain, root = at.facts, at.ref, at.chain, at.chain.root
    if chain.root_kind == "identifier" and index == 0:
        local = facts.local_types.get(root)
        if local and ref.has_class(local):
            # The chunk's local types are not scoped: a name bound twice (a lambda's parameter) may be another type.
            if sum(b.name == root for b in facts.bindings) > 1 or facts.narrowed_type(root, chain.root_start):
                return None, f"the chunk binds '{root}' more than once: the type this use sees is not sure"
            return "local_type", ""
        if root not in facts.declared and (ref.has_class(root) or ref.global_member(root) is not None):
            return "class", ""
    if chain.root_kind == "identifier" and index == 1 and chain.parts[0].name == "new" and ref.has_class(root):
        return "constructor", ""
    if chain.root_kind == "call" and _guessed_call(at):
        return None, f"the class of {root}() is guessed, not stated"
    if chain.root_kind in ("identifier", "call") and inner_method(facts, at.res) and _root_via_own_class(at):
        return None, INNER_METHOD
    if chain.root_kind in ("identifier", "call"):
        return "value", ""  # a call's or a member's value: decided by its class (`_missing_evidence`)
    if chain.root_kind == "self":
        return None, "a member of the script's own class: the script may declare it"
    return None, f"the receiver is a {chain.root_kind.replace('_', ' ')}"


def _guessed_call(at: _ChainAt) -> bool:
    """Whether the bare call a chain starts with resolved only through a guessed own class."""
    line, col = at.facts.line_of_offset(at.chain.root_start), at.facts.col_of_offset(at.chain.root_start)
    return any(u.member == at.chain.root and (u.line, u.col) == (line, col) and u.via.startswith(GUESSED_VIAS)
               for u in at.res.uses)


def _root_via_own_class(at: _ChainAt) -> bool:
    """Whether the chain's root (`size`, `get_rect()`) resolved as a member of the script's own class."""
    line, col = at.facts.line_of_offset(at.chain.root_start), at.facts.col_of_offset(at.chain.root_start)
    return any(u.member == at.chain.root and (u.line, u.col) == (line, col) and u.via.startswith(OWN_CLASS_VIAS)
               for u in at.res.uses)


def _script_may_declare(ref: ClassReference, cls: str) -> bool:
    """Whether a value of `cls` may be an object whose script declares members `cls` lacks."""
    if ref.value_type(cls):
        return False
    return cls in OPEN_CLASSES or any(host in ref.lineage(cls) for host in SCRIPT_HOSTS)


def _missing_evidence(ref: ClassReference, cls: str, via: str | None, near: list[Suggestion]) -> str | None:
    """Why the receiver's class lacking the member is not evidence, or None when it is. A class or singleton by
    name, a value type and a fresh `Class.new()` have no script; any other object may (a typed `body: Node2D` is
    often a scripted enemy: godotengine/godot#65342), so there only a near miss of a real member is evidence
    (`set_textur`, a Godot 3 name: `Suggestion.near_miss`), not a name no member resembles (`take_damage`)."""
    if via is None:
        return "the receiver's class is not stated"
    if cls in DYNAMIC_CLASSES:
        return f"a {cls} holds a value of any type"
    if via in CLOSED_VIAS or ref.value_type(cls):
        return None
    if via == "value" and _script_may_declare(ref, cls):
        return f"a value of class {cls}, which may carry a script that declares it"
    if any(s.near_miss for s in near):
        return None
    return f"no member of {cls} is a near miss of it: a script on the object may declare it"


def _check_missing(facts: GDScriptFacts, ref: ClassReference, res: Resolution, miss: Unresolved,
                   renames: Mapping[str, str] | None, out: ApiCheck) -> None:
    if not miss.missing_on or miss.project:
        if miss.reason and not miss.missing_on:
            out.undecided.append(Undecided(miss.name, miss.line, miss.col, miss.reason))
        return
    cls = miss.missing_on
    via, why = _receiver_of(facts, ref, res, miss)
    near = closest_members(ref, cls, miss.name, renames)
    why = why if via is None else (_missing_evidence(ref, cls, via, near) or "")
    if via is None or why:
        out.undecided.append(Undecided(miss.name, miss.line, miss.col, why))
        return
    out.checked += 1
    names = tuple(s.api for s in near)
    message = f"{cls} has no member '{miss.name}' in Godot {REFERENCE_VERSION}, nor do its ancestors" + (
        f"; closest: {', '.join(names)}" if names else "")
    out.findings.append(ApiFinding("missing_engine_member", SEVERITY["missing_engine_member"], f"missing_member_on_{via}",
                                   miss.line, miss.col, f"{cls}.{miss.name}", via, message, reference_entry(ref, cls),
                                   miss.text, suggestions=names))
