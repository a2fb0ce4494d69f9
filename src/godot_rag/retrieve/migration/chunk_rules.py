"""The version rules of the chunk alone (`OCCURRENCE_RULES`): what an occurrence's place (comment, node path,
string, code), its resolution and the class reference say of it."""
from __future__ import annotations

from ...gdscript.resolve import Unresolved
from .version import CLASS_TYPES, METHOD_TYPES, SIGNAL_TYPES, STRING_TYPES
from .version_occurrence import (
    COMMENT_TYPES,
    NAMES_CITED,
    SETTING_TYPES,
    SHORT_NAME_CHARS,
    SIGNAL_ARGS,
    SIGNAL_USES,
    OccurrenceCase,
    VersionRule,
    awaited,
    godot3_override,
    godot4_class,
    names_class,
    next_part,
    string_argument,
    target_absent,
    whole_node_name,
    written_receiver,
)


def _comment_writes_dropped_name(o: OccurrenceCase) -> str | None:
    if (o.place == "comment" and o.change in COMMENT_TYPES and o.facts.written_as_code(o.occ["start"], o.occ["end"])
            and not o.ref.exists(o.src)):
        return f"{o.where}: a comment writes '{o.src}' as code, and Godot 4 documents no '{o.src}'"
    return None


def _in_comment(o: OccurrenceCase) -> str | None:
    if o.place != "comment":
        return None
    return f"{o.where} is in a comment" + (" (a word of prose)" if o.change in COMMENT_TYPES else "")


def _node_path_not_class(o: OccurrenceCase) -> str | None:
    return f"{o.where} is a node name in a node path" if o.place == "node_path" and o.change not in CLASS_TYPES else None


def _part_of_node_name(o: OccurrenceCase) -> str | None:
    if o.place == "node_path" and not whole_node_name(o.facts, o.occ["start"], o.occ["end"]):
        return f"{o.where}: '{o.src}' is only part of a node name (node path)"
    return None


# A node path names scene nodes, and a node keeps the name it was given (often its class's, `$Light`, through a
# port too): a segment of a node path is never evidence of engine API, for a mapping or a finding.
def _node_path_is_no_api(o: OccurrenceCase) -> str | None:
    if o.place == "node_path":
        return f"{o.where}: '{o.src}' names a scene node (node path); a node's name is not engine API"
    return None


def _class_name_string(o: OccurrenceCase) -> bool:
    return o.place == "string" and o.change in CLASS_TYPES and names_class(o.facts, o.occ["start"], o.src)


def _string_names_dropped_class(o: OccurrenceCase) -> str | None:
    if _class_name_string(o) and not o.ref.has_class(o.src):
        return f"{o.where}: the string names the class '{o.src}' in a class-name argument, and Godot 4 has no such class"
    return None


def _string_names_class(o: OccurrenceCase) -> str | None:
    return f"{o.where}: the string names the class '{o.src}', still a Godot 4 class" if _class_name_string(o) else None


def _string_not_string_api(o: OccurrenceCase) -> str | None:
    if o.place == "string" and o.change not in STRING_TYPES:
        return f"{o.where} is in a string, and {o.change} is not a string-based API"
    return None


def _string_not_signal_argument(o: OccurrenceCase) -> str | None:
    if o.place == "string" and o.change in SIGNAL_TYPES and not string_argument(o.facts, o.occ["start"], SIGNAL_ARGS):
        return f"{o.where} is a string that is not a signal argument"
    return None


def _string_names_dropped(o: OccurrenceCase) -> str | None:
    if o.place == "string" and (o.change in SETTING_TYPES or not o.ref.exists(o.src)):
        return f"{o.where}: the string names '{o.src}', which Godot 4 no longer has"
    return None


def _signal_name_not_a_signal(o: OccurrenceCase) -> str | None:
    if o.place == "string" and o.change in SIGNAL_TYPES and not o.ref.signals_named(o.src):
        return (f"{o.where}: the signal name '{o.src}': Godot 4 has no signal of that name "
                f"(only {', '.join(o.ref.where(o.src))}, which are not signals)")
    return None


def _signal_name_exists(o: OccurrenceCase) -> str | None:
    if o.place != "string":
        return None
    signals = ", ".join(o.ref.signals_named(o.src)[:NAMES_CITED])
    return f"{o.where}: the signal name '{o.src}' still exists in Godot 4 ({signals})"


def _not_color_constant(o: OccurrenceCase) -> str | None:
    if o.place == "code" and o.change == "color_rename" and not (o.chain is not None and o.idx == 0 and o.chain.root == "Color"):
        return f"{o.where} is not a `Color.{o.src}` constant"
    return None


def _signal_not_used_as_signal(o: OccurrenceCase) -> str | None:
    if o.place == "code" and o.change in SIGNAL_TYPES and next_part(o.chain, o.idx) not in SIGNAL_USES:
        return f"{o.where} uses '{o.src}' as {'a method call' if o.is_call else 'a name'}, not as the signal"
    return None


def _method_not_called(o: OccurrenceCase) -> str | None:
    if o.place == "code" and o.change in METHOD_TYPES and not o.is_call and not o.declaration:
        return f"{o.where} is not a call of '{o.src}'"
    return None


def _godot3_virtual_override(o: OccurrenceCase) -> str | None:
    if o.declaration and o.change in METHOD_TYPES and (why := godot3_override(o.ref, o.renamed, o.res, o.mapping, o.classes)):
        return f"{o.where}: {why}"
    return None


def _resolves_off_class(o: OccurrenceCase) -> str | None:
    u = o.use
    if u is not None and o.classes and not any(o.ref.related(c, u.cls) for c in o.classes if o.ref.has_class(c)):
        return f"{o.where} resolves to {u.api}, not to {' or '.join(o.classes)}"
    return None


def _godot4_signal_as_value(o: OccurrenceCase) -> str | None:
    """`button.pressed = true`: Godot 4's `pressed` there is a signal (and a theme item, which code reaches
    only through the theme API); used as a plain value it is the Godot 3 property."""
    u = o.use
    if u is None or o.is_call:
        return None
    found = o.ref.member(u.cls, o.src, code=True) if u.kind == "theme_property" else (u.cls, {"kind": u.kind})
    as_signal = next_part(o.chain, o.idx) in SIGNAL_USES or awaited(o.facts, o.chain)
    if found is not None and (found[1]["kind"] != "signal" or o.change in SIGNAL_TYPES or as_signal):
        return None
    what = f"the Godot 4 signal {found[0]}.{o.src}" if found else f"{u.api}, a Godot 4 theme item"
    return f"{o.where} names {what}, but uses it as a plain value"


def _resolves_in_godot4(o: OccurrenceCase) -> str | None:
    return f"{o.where} resolves to {o.use.api}, valid Godot 4 API" if o.use is not None else None


def _enum_target_absent(o: OccurrenceCase) -> str | None:
    if o.place != "code" or o.change != "enum_rename":
        return None
    missing = o.missing()
    written = None if missing else written_receiver(o.facts, o.res, o.call, o.chain, o.idx, o.occ["start"])[0]
    receiver = missing.missing_on if missing else godot4_class(written, o.ref, o.renamed)
    why = target_absent(o.ref, o.renamed, o.mapping, receiver)
    return f"{o.where}: {why}" if why else None


def _missing_here(o: OccurrenceCase) -> Unresolved | None:
    """The member missing on this occurrence's receiver in Godot 4, where it says something: a page's sentence
    without its class says nothing about this receiver."""
    return o.missing() if o.place == "code" and not (o.prose and not o.classes) else None


def _missing_on_other_class(o: OccurrenceCase) -> str | None:
    if (m := _missing_here(o)) is None or not o.classes or not any(o.ref.has_class(c) for c in o.classes):
        return None
    if any(o.ref.has_class(c) and o.ref.related(c, m.missing_on) for c in o.classes):
        return None
    return f"{o.where}: the receiver is {m.missing_on}, and the change concerns {' or '.join(o.classes)}"


def _missing_on_receiver(o: OccurrenceCase) -> str | None:
    return f"{o.where}: {m.missing_on} has no '{o.src}' in Godot 4" if (m := _missing_here(o)) is not None else None


def _class_member_resolves(o: OccurrenceCase) -> str | None:
    if o.place != "code" or o.change not in CLASS_TYPES or not (o.chain is not None and o.idx == -1 and o.chain.parts):
        return None
    first = o.chain.parts[0]
    found = o.ref.member(o.src, first.name) if o.ref.has_class(o.src) else None
    return f"{o.where}: {o.src}.{first.name} resolves in Godot 4 ({found[0]}.{first.name})" if found else None


def _class_dropped(o: OccurrenceCase) -> str | None:
    if o.place == "code" and o.change in CLASS_TYPES and not o.ref.has_class(o.src):
        return f"{o.where}: Godot 4 has no class '{o.src}'"
    return None


def _class_still_exists(o: OccurrenceCase) -> str | None:
    return f"{o.where}: '{o.src}' is still a Godot 4 class" if o.place == "code" and o.change in CLASS_TYPES else None


def _known_receiver_off_class(o: OccurrenceCase) -> str | None:
    """`map_to_world()` on a TileMap is not `GridMap's map_to_world`."""
    why, known = o.off_class
    return why if o.place == "code" and not o.exists and known else None


def _short_prose_name(o: OccurrenceCase) -> str | None:
    if o.place == "code" and not o.exists and o.prose and len(o.src) < SHORT_NAME_CHARS and "_" not in o.src:
        return (f"{o.where}: '{o.src}' is too short or common to stand for "
                f"{o.classes[0] + '.' if o.classes else ''}{o.src} without a receiver of that class")
    return None


def _name_dropped(o: OccurrenceCase) -> str | None:
    return f"{o.where}: Godot 4 documents no '{o.src}'" if o.place == "code" and not o.exists else None


def _receiver_off_class(o: OccurrenceCase) -> str | None:
    return o.off_class[0] if o.place == "code" else None


def _still_godot4_api(o: OccurrenceCase) -> str | None:
    return f"{o.where}: '{o.src}' is still Godot 4 API ({', '.join(o.ref.where(o.src))})" if o.place == "code" else None


# The chunk-only decisions, in order: the first whose test gives a reason decides. Each place (comment, node
# path, string, code) ends on a rule that always fires there.
OCCURRENCE_RULES = (
    VersionRule("comment_writes_dropped_name", _comment_writes_dropped_name, "godot3_comment"),
    VersionRule("in_comment", _in_comment, "ignored"),
    VersionRule("node_path_not_class", _node_path_not_class, "ignored"),
    VersionRule("part_of_node_name", _part_of_node_name, "ignored"),
    VersionRule("node_path_is_no_api", _node_path_is_no_api, "ignored"),
    VersionRule("string_names_dropped_class", _string_names_dropped_class, "godot3"),
    VersionRule("string_names_class", _string_names_class, "ambiguous"),
    VersionRule("string_not_string_api", _string_not_string_api, "ignored"),
    VersionRule("string_not_signal_argument", _string_not_signal_argument, "ignored"),
    VersionRule("string_names_dropped", _string_names_dropped, "godot3"),
    VersionRule("signal_name_not_a_signal", _signal_name_not_a_signal, "godot3"),
    VersionRule("signal_name_exists", _signal_name_exists, "ambiguous"),
    VersionRule("not_color_constant", _not_color_constant, "ignored"),
    VersionRule("signal_not_used_as_signal", _signal_not_used_as_signal, "ignored"),
    VersionRule("method_not_called", _method_not_called, "ignored"),
    VersionRule("godot3_virtual_override", _godot3_virtual_override, "godot3"),
    VersionRule("resolves_off_class", _resolves_off_class, "ignored"),
    VersionRule("godot4_signal_as_value", _godot4_signal_as_value, "ambiguous"),
    VersionRule("resolves_in_godot4", _resolves_in_godot4, "valid_godot4"),
    VersionRule("enum_target_absent", _enum_target_absent, "ignored"),
    VersionRule("missing_on_other_class", _missing_on_other_class, "ignored"),
    VersionRule("missing_on_receiver", _missing_on_receiver, "godot3"),
    VersionRule("class_member_resolves", _class_member_resolves, "valid_godot4"),
    VersionRule("class_dropped", _class_dropped, "godot3"),
    VersionRule("class_still_exists", _class_still_exists, "ambiguous"),
    VersionRule("known_receiver_off_class", _known_receiver_off_class, "ignored"),
    VersionRule("short_prose_name", _short_prose_name, "ignored"),
    VersionRule("name_dropped", _name_dropped, "godot3"),
    VersionRule("receiver_off_class", _receiver_off_class, "ignored"),
    VersionRule("still_godot4_api", _still_godot4_api, "ambiguous"),
)
