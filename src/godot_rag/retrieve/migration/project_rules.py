"""The version rules that read the project around the chunk and the chunk's Godot 4-only syntax (`VERSION_RULES`,
checked before the chunk-only ones), and the overrules of a `godot3` decision in a Godot 4 project (`GODOT3_OVERRULES`)."""
from __future__ import annotations

from ...gdscript.project import Symbol
from .version import CLASS_TYPES, METHOD_TYPES, SIGNAL_TYPES
from .version_occurrence import (
    ARGUMENT_WINDOW,
    SIGNAL_ARGS,
    OccurrenceCase,
    VersionRule,
    godot3_override,
    godot4_class,
    stated_classes,
    string_argument,
)


def godot4_signal_syntax(o: OccurrenceCase) -> str | None:
    """`sig.emit()`, `sig.connect(callable)`, `await sig`: Godot 4's Signal objects, whoever declared the signal."""
    if o.change not in SIGNAL_TYPES or not o.code:
        return None
    nxt = o.chain.parts[o.idx + 1] if o.chain is not None and o.idx is not None and o.idx + 1 < len(o.chain.parts) else None
    if nxt is not None and nxt.name == "emit" and nxt.call:
        return f"{o.where}: `{o.src}.emit()` is Godot 4 signal syntax (Godot 3 wrote emit_signal(\"{o.src}\"))"
    if nxt is not None and nxt.name == "connect" and nxt.call:
        first = o.facts.text[nxt.end:nxt.end + ARGUMENT_WINDOW].lstrip()[1:].lstrip()[:1]  # the first argument's first character
        if first and first not in ")\"'&^":  # a string there is Godot 3's `obj.connect("signal", ...)`
            return f"{o.where}: `{o.src}.connect(callable)` is Godot 4 signal syntax"
    last = o.chain is None or o.idx == len(o.chain.parts) - 1
    start = o.occ["start"] if o.chain is None or o.idx == -1 else o.chain.root_start
    if last and o.facts.code[:start].rstrip().endswith("await"):
        return f"{o.where}: `await {o.src}` is Godot 4 signal syntax"
    return None


def static_method_declaration(o: OccurrenceCase) -> str | None:
    """`static func get_plugin_name()`: a static function overrides no engine virtual."""
    if o.change in METHOD_TYPES and o.declaration and o.facts.line_text(o.occ["line"]).lstrip().startswith("static func "):
        return f"{o.where}: `static func {o.src}` is the script's own static function: no virtual is static"
    return None


def typed_declaration_in_godot4(o: OccurrenceCase) -> str | None:
    """`func get_preset_name() -> String:` in Godot 4 code: the script's own method, not Godot 3 evidence."""
    if o.change not in METHOD_TYPES or not o.declaration:
        return None
    decl = next((d for d in o.facts.declarations if d.name == o.src and d.line == o.occ["line"]), None)
    why4 = o.godot4
    if decl is None or not decl.typed or why4 is None:
        return None
    return f"{o.where}: `{o.src}` is declared with typed syntax and {why4}: not a Godot 3 override"


def _engine_receiver(o: OccurrenceCase) -> str | None:
    """The engine class a receiver resolves this occurrence to, or None (the script itself, a project
    class, or a receiver the chunk does not state)."""
    if (u := o.resolved()) is not None:
        return u.cls
    if (m := o.missing()) is not None:
        return m.missing_on
    cls = o.receiver()
    if cls and not (o.index is not None and o.index.is_class(cls)) and godot4_class(cls, o.ref, o.renamed):
        return cls
    return None


def declared_by_project(o: OccurrenceCase) -> str | None:
    """A name the project declares is the project's, unless a receiver resolves it to an engine class."""
    if o.index is None:
        return None
    signal_string = (o.occ["region"] == "string" and o.change in SIGNAL_TYPES
                     and string_argument(o.facts, o.occ["start"], SIGNAL_ARGS))
    if not (o.code or signal_string):
        return None
    engine = _engine_receiver(o)
    if engine is not None:
        # A receiver typed as an engine class that lacks the name may be an object of a project class below
        # it that declares it (`get_parent().change_scene()` on the project's own scene manager): a downcast.
        missing = o.missing()
        below = [s for s in o.index.declares(o.src) if missing is not None and s.scope
                 and (e := o.index.engine_class(s.scope)) and o.ref.has_class(e) and missing.missing_on in o.ref.lineage(e)]
        if missing is None or not below:  # below is empty without a missing member
            return None
        s = below[0]
        return (f"{o.where}: '{o.src}' is declared by the project at {s.where()} ({s.kind.replace('_', ' ')}), "
                f"in a class below {missing.missing_on}")
    overrides = o.declaration and o.change in METHOD_TYPES
    if overrides and godot3_override(o.ref, o.renamed, o.res, o.mapping, stated_classes(o.mapping)):
        return None  # the declaration overrides an engine virtual: the engine's name, not the project's
    cls = o.receiver()
    found = o.index.member(cls, o.src) if cls and o.index.is_class(cls) else None
    found = found or next((s for s in o.index.declares(o.src) if not _overrides_engine_virtual(o, s)), None)
    if found is None:
        return None
    return f"{o.where}: '{o.src}' is declared by the project at {found.where()} ({found.kind.replace('_', ' ')})"


def unread_autoload_receiver(o: OccurrenceCase) -> str | None:
    """`GGT.change_scene()` where `GGT` is the project's autoload and its script could not be found (a `uid://` no
    `.uid` file resolves): the autoload's name is the project's own symbol, and so are its members."""
    if o.index is None or not o.code:
        return None
    cls = o.receiver()
    if not o.index.unread(cls):
        return None
    return (f"{o.where}: '{cls}' is the project's autoload ({o.index.scopes[cls or '']}, its script not found): "
            f"'{o.src}' is its member, not engine API")


def _overrides_engine_virtual(o: OccurrenceCase, s: Symbol) -> bool:
    """Whether the project's declaration is its Godot 3 override of a renamed engine virtual (`func make_visible`
    in an EditorPlugin, whose Godot 4 virtual is `_make_visible`): the engine's name, which a call uses too."""
    to = str(o.mapping.get("target_api") or "")
    if s.kind != "func" or not to.startswith("_") or o.change not in METHOD_TYPES or not s.scope:
        return False
    engine = godot4_class(o.index.engine_class(s.scope), o.ref, o.renamed) if o.index is not None else None
    if not engine:
        return False
    found = o.ref.member(engine, to)
    return found is not None and found[1]["kind"] == "method" and o.ref.member(engine, o.src) is None



# Checked in order before the chunk-only decisions of `classify_occurrence`; the first that applies decides.
VERSION_RULES = (
    VersionRule("godot4_signal_syntax", godot4_signal_syntax, "valid_godot4"),
    VersionRule("static_method_declaration", static_method_declaration, "ignored"),
    VersionRule("typed_declaration_in_godot4", typed_declaration_in_godot4, "ignored"),
    VersionRule("declared_by_project", declared_by_project, "ignored"),
    VersionRule("unread_autoload_receiver", unread_autoload_receiver, "ignored"),
)


def engine_api_missing(o: OccurrenceCase) -> bool:
    """Whether this Godot 3 use names engine API that Godot 4 lacks, so that Godot 4 would not compile it:
    a member missing on a receiver of an engine class, a class Godot 4 does not have, or a call or name
    of the script itself that neither the project nor the script's engine class declares."""
    if not o.code or o.declaration:
        return False
    if o.missing() is not None:
        return True
    if o.change in CLASS_TYPES:
        return not o.ref.has_class(o.src)
    if o.call is None and not (o.chain is not None and o.idx == -1) and not (o.chain is None and not o.is_call):
        return False  # a member of a receiver the chunk does not type: a dynamic call, which compiles
    if o.index is not None and o.index.declares(o.src):
        return False
    own = godot4_class(o.res.extends_name, o.ref, o.renamed)
    return not o.ref.exists(o.src) or (own is not None and o.ref.member(own, o.src) is None and not o.ref.global_member(o.src))


def godot4_project_compiles(o: OccurrenceCase) -> str | None:
    """In a known Godot 4 project, a migration finding needs engine API that Godot 4 lacks."""
    if o.context is None or o.context.major != "4" or engine_api_missing(o):
        return None
    return (f"{o.where}: the project is Godot {o.context.godot_version}, and this use compiles there "
            f"(it names no engine API Godot 4 lacks)")


# Checked on a `godot3` decision; the first that applies decides instead.
GODOT3_OVERRULES = (VersionRule("godot4_project_compiles", godot4_project_compiles, "ignored"),)
NOT_COMPILED = "Godot 4 has no such engine API, so this code would not compile in Godot 4"
