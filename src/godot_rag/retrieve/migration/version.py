"""Version awareness: the chunk's Godot 3 / Godot 4 markers (`VersionMarkers`), the kinds of change the
api_mapping records hold, and how the markers and the `godot_version` hint decide an ambiguous occurrence and
overrule weak evidence. The decision for each occurrence, rule by rule, is in `version_rules.py`."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts
from ...gdscript.project import RequestContext
from ...gdscript.resolution import Resolution

# Change types whose Godot 3 use is a string literal (a setting path, an action, a theme key, a signal name).
STRING_TYPES = {"project_setting_rename", "input_map_rename", "theme_override_rename", "signal_rename",
                "signal_change", "project_godot_rename", "shader_rename"}
CLASS_TYPES = {"class_rename", "builtin_type_rename"}
SIGNAL_TYPES = {"signal_rename", "signal_change"}
METHOD_TYPES = {"method_rename", "method_change"}
# The converter's renames of names used in GDScript code, and all of its rename tables (the rest are strings).
CODE_RENAME_TYPES = {"class_rename", "builtin_type_rename", "method_rename", "property_rename", "signal_rename",
                     "enum_rename", "color_rename"}
CONVERTER_TYPES = CODE_RENAME_TYPES | {"project_setting_rename", "input_map_rename", "theme_override_rename",
                                       "project_godot_rename", "shader_rename"}
# The occurrence statuses that count as Godot 3 use (the validator's evidence); the last two are weak (`godot3_node`
# only in results cached before node paths stopped counting).
EVIDENCE_STATUSES = ("godot3", "godot3_node", "godot3_comment")
MARKERS_SHOWN = 12  # version markers the trace lists, per version
MARKERS_CITED = 3  # version markers a reason cites


@dataclass
class VersionMarkers:
    """The chunk-level signals that weigh ambiguous occurrences."""
    hint: str = "auto"  # "3" | "4" | "auto"
    godot3: list[str] = field(default_factory=list)
    godot4: list[str] = field(default_factory=list)

    def lean(self) -> str:
        """`3`, `4` or `none`: what the chunk itself says about its version."""
        if self.godot3 and not self.godot4:
            return "3"
        if self.godot4 and not self.godot3:
            return "4"
        return "mixed" if self.godot3 else "none"

    def to_trace(self) -> dict:
        return {"hint": self.hint, "godot3_markers": self.godot3[:MARKERS_SHOWN], "godot4_markers": self.godot4[:MARKERS_SHOWN],
                "lean": self.lean()}


@dataclass(frozen=True)
class ConverterRenames:
    """The converter's renames, read once from the api_mapping records; each reader takes its view."""
    code: dict[str, frozenset[str]]  # a name code writes, Godot 3 -> the Godot 4 names it became (`get_len` -> `get_length`)
    classes: dict[str, str]  # a Godot 3 class -> its Godot 4 class (`Camera` -> `Camera3D`)
    new: frozenset[str]  # Godot 4 names whose use says the chunk is Godot 4 code (`version_names`)

    @property
    def old(self) -> AbstractSet[str]:
        """The Godot 3 names the converter renames (a view of `code`'s keys: read per chunk, never copied)."""
        return self.code.keys()

    def to_plain(self) -> dict[str, Any]:
        """A plain-data form (the derived cache's marshal)."""
        return {"code": {k: sorted(v) for k, v in self.code.items()}, "classes": self.classes, "new": sorted(self.new)}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> ConverterRenames:
        return cls({k: frozenset(v) for k, v in data["code"].items()}, dict(data["classes"]), frozenset(data["new"]))


def converter_renames(mappings: Iterable[Mapping[str, Any]], ref: ClassReference) -> ConverterRenames:
    mappings = list(mappings)
    code: dict[str, set[str]] = {}
    for r in mappings:
        if r["change_type"] in CODE_RENAME_TYPES:
            code.setdefault(r["source_api"], set()).add(r["target_api"])
    classes = {r["source_api"]: r["target_api"] for r in mappings if r["change_type"] in CLASS_TYPES}
    return ConverterRenames({k: frozenset(v) for k, v in code.items()}, classes, frozenset(version_names(mappings, ref)[1]))


def version_names(mappings: Iterable[Mapping[str, Any]], ref: ClassReference) -> tuple[set[str], set[str]]:
    """(Godot 3 names the converter renames, the Godot 4 names they became) from the api_mapping records.
    A new name counts only where Godot 4 documents it by itself: `set_one_shot` was Timer's method in
    Godot 3 too, and in Godot 4 it is only the `one_shot` setter, so calling it says nothing of the version.
    A colour counts too: Godot 3's Color constants were lower case (`Color.white`), so `Color.WHITE` is
    Godot 4 code."""
    recs = [r for r in mappings if r["change_type"] in CODE_RENAME_TYPES]
    old = {r["source_api"] for r in recs}
    new = {r["target_api"] for r in recs if r["target_api"] not in old and ref.exists(r["target_api"])
           and r["change_type"] in ("class_rename", "builtin_type_rename", "method_rename")}
    new |= {f"Color.{r['target_api']}" for r in recs if r["change_type"] == "color_rename"
            and ref.member("Color", r["target_api"])}
    return old, new


def version_context(facts: GDScriptFacts, res: Resolution, godot4_only_names: AbstractSet[str], godot3_names: AbstractSet[str],
                    hint: str) -> VersionMarkers:
    ctx = VersionMarkers(hint=hint)
    for m in facts.markers:
        (ctx.godot3 if m.version == "3" else ctx.godot4).append(f"line {m.line}: {m.what}")
    # A Godot 4 name that a Godot 3 name was renamed to, used as resolved API, is Godot 4 code. The class
    # counts only where the script writes it (the chunk, or the file's `extends` the hint carries): the
    # bare calls of `extends EditorSpatialGizmoPlugin` are inferred to be EditorNode3DGizmoPlugin's, and
    # a return type is the resolver's reading; neither says anything of the chunk's version.
    for use in res.uses:
        written = use.cls in facts.identifiers or (res.own_class_from == "hint" and use.cls == res.own_class)
        if use.member in godot4_only_names or use.api in godot4_only_names or (use.cls in godot4_only_names and written):
            ctx.godot4.append(f"line {use.line}: {use.api} (a Godot 4 name)")
    # A member missing on its Godot 4 class is Godot 3 use only when Godot 3 had it under that name
    # (a rename source): `get_parent().my_method()` is just a dynamic call.
    for u in res.missing():
        if u.name in godot3_names:
            ctx.godot3.append(f"line {u.line}: {u.missing_on} has no '{u.name}' in Godot 4")
    return ctx


def effective_hint(hint: str, context: RequestContext | None) -> str:
    """The godot_version hint: the setting, else the project's major version from the request context."""
    if hint != "auto" or context is None or context.major is None:
        return hint
    return context.major


def decide_ambiguous(ctx: VersionMarkers) -> tuple[bool, str]:
    lean = ctx.lean()
    if ctx.hint == "4":
        return False, "godot_version hint is 4"
    if lean == "3":
        return True, "the chunk has Godot 3 markers: " + "; ".join(ctx.godot3[:MARKERS_CITED])
    if lean == "4":
        return False, "the chunk has Godot 4 markers: " + "; ".join(ctx.godot4[:MARKERS_CITED])
    if lean == "mixed":
        return False, "the chunk has both Godot 3 and Godot 4 markers"
    if ctx.hint == "3":
        return True, "no version markers; godot_version hint is 3"
    return False, "no version markers, and the name is valid in both versions"


EVIDENCE_ORDER = ("godot3", "ambiguous", "godot3_node", "godot3_comment")  # "ambiguous": a godot3 the markers decided


def evidence_rank(d: dict) -> int:
    """Strength of an occurrence taken as Godot 3 use, strongest first: a sure use in code, an ambiguous
    one the markers decided, a node name, a comment. The evidence shown and the judge's question take the strongest."""
    return EVIDENCE_ORDER.index("ambiguous" if d["status"] == "godot3" and d.get("ambiguous") else d["status"])


def comment_reference_overruled(ctx: VersionMarkers) -> str | None:
    """Why a comment's code reference to a Godot 3 name is not taken as Godot 3 use, or None. A comment
    is not code: it counts only in a chunk whose code is Godot 3 (its markers, or a hint of 3 where the
    code says nothing), so a stale comment in ported code (`# get_size_override() returns...`) says nothing."""
    lean = ctx.lean()
    if ctx.hint == "4":
        return "a comment is weak evidence, and the godot_version hint is 4"
    if lean == "3" or (lean == "none" and ctx.hint == "3"):
        return None
    return ("a comment is weak evidence, and the chunk's code "
            + {"4": "has Godot 4 markers", "mixed": "has both Godot 3 and Godot 4 markers",
               "none": "has no Godot 3 markers"}[lean])


@dataclass(frozen=True)
class WeakOverrule:
    """A named overrule of weak evidence: when `applies` gives a reason on the chunk's version markers and the
    hint, the occurrence is `ignored`."""
    name: str
    applies: Callable[[VersionMarkers], str | None]


# The weak evidence statuses, each with the named rule that overrules it.
# (`godot3_node`, a node named after a Godot 3 class, is no longer decided: a node path is never evidence of engine
# API, chunk_rules.py `node_path_is_no_api`; the status stays readable in results cached before.)
WEAK_OVERRULES = {"godot3_comment": WeakOverrule("comment_reference_overruled", comment_reference_overruled)}

