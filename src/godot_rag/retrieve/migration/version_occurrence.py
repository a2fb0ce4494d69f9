"""One occurrence of a Godot 3 name as the version rules read it (`OccurrenceCase`), the predicates over the chunk
the rules share (where a string is passed, what receiver a member has, whether a prose change concerns it), and
the shape of a named rule (`VersionRule`). The rule tables are in `project_rules.py` and `chunk_rules.py`; the order
they are read in is `version_rules.py`'s."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...gdscript.classref import ClassReference
from ...gdscript.facts import Call, Chain, GDScriptFacts, NameOccurrence
from ...gdscript.project import RequestContext
from ...gdscript.resolution import ApiUse, Resolution, Unresolved
from ..engine.trace import OccurrenceStatus
from .version import CONVERTER_TYPES, VersionMarkers

# String renames whose Godot 3 string is no name of the Godot 4 API (a setting path, a theme key, an action).
SETTING_TYPES = {"project_setting_rename", "theme_override_rename", "input_map_rename", "project_godot_rename"}
# Decided, not fitted: a prose change's name shorter than this, without an underscore (`rotate`, `process`),
# is too common to stand for that change without a receiver of its class.
SHORT_NAME_CHARS = 8
NAMES_CITED = 4  # Godot 4 signals a reason cites
ARGUMENT_WINDOW = 200  # characters after `sig.connect` read for its first argument
# Renames a comment may write as code (the converter renames them in comments too); signal names and
# colours are not names a comment writes as code.
COMMENT_TYPES = {"class_rename", "builtin_type_rename", "method_rename", "property_rename", "enum_rename"}
SIGNAL_USES = ("connect", "emit", "disconnect", "is_connected")  # `sig.connect(...)`: a Godot 4 signal used as one
# Arguments that hold a node path or a signal name (callee -> argument indexes): `get_node("Camera")`,
# `connect("hide", self, "_on_hide")` (the method name at index 2 is no signal), `yield(obj, "hide")`.
NODE_ARGS = {"get_node": {0}, "get_node_or_null": {0}, "has_node": {0}, "find_node": {0}, "find_child": {0}}
SIGNAL_ARGS = {"connect": {0}, "disconnect": {0}, "is_connected": {0}, "emit_signal": {0}, "has_signal": {0},
               "yield": {1}}
# Arguments that name a class: there the string is the use (`add_custom_type("Shadow", "KinematicBody", ...)`,
# `is_class("Spatial")`, `ClassDB.class_exists("Position2D")`); callee -> argument indexes.
CLASS_NAME_ARGS = {"add_custom_type": {1}, "is_class": {0}, "class_exists": {0}, "can_instance": {0},
                   "can_instantiate": {0}, "get_parent_class": {0}, "is_parent_class": {0, 1},
                   "get_inheriters_from_class": {0}, "class_has_method": {0}, "class_has_signal": {0},
                   "class_get_property_list": {0}, "class_get_method_list": {0}, "class_get_signal_list": {0}}


def part_at(facts: GDScriptFacts, start: int) -> tuple[Chain | None, int | None]:
    """(chain, index) of the chain part that starts at this offset, or (chain, -1) for a chain root."""
    for ch in facts.chains:
        if ch.root_start == start and ch.root_kind == "identifier":
            return ch, -1
        for i, p in enumerate(ch.parts):
            if p.start == start:
                return ch, i
    return None, None


def call_at(facts: GDScriptFacts, start: int) -> Call | None:
    return next((c for c in facts.calls if c.start == start), None)


def next_part(chain: Chain | None, idx: int | None) -> str | None:
    """The name after this part (or after the root, idx -1) of its chain: `connect` in `hidden.connect(...)`."""
    return chain.parts[idx + 1].name if chain is not None and idx is not None and idx + 1 < len(chain.parts) else None


def awaited(facts: GDScriptFacts, chain: Chain | None) -> bool:
    return chain is not None and facts.code[:chain.root_start].rstrip().endswith("await")


def string_argument(facts: GDScriptFacts, offset: int, args: dict[str, set[int]]) -> bool:
    """Whether the string at `offset` is passed where one of these calls takes it."""
    arg = facts.call_argument(offset)
    return arg is not None and arg[1] in args.get(arg[0], ())


def names_class(facts: GDScriptFacts, offset: int, name: str) -> bool:
    """Whether the string at `offset` is exactly `name`, passed where a call takes a class name."""
    whole = any(s <= offset < e and v == name for s, e, v in facts.strings)
    return whole and string_argument(facts, offset, CLASS_NAME_ARGS)


def godot4_class(name: str | None, ref: ClassReference, renamed: dict[str, str]) -> str | None:
    """The Godot 4 class a class name stands for: itself, or what the converter renamed it to (`Camera`)."""
    if not name:
        return None
    if ref.has_class(name):
        return name
    return renamed.get(name) if ref.has_class(renamed.get(name, "")) else None


ROOT_KINDS = {"call": "the value a call returns", "get_node": "a scene node ($...)", "string": "a string",
              "other": "an expression"}


def written_receiver(facts: GDScriptFacts, res: Resolution, call: Call | None, chain: Chain | None, idx: int | None,
                     start: int) -> tuple[str | None, str]:
    """(class name as written, description) of the object whose member this code occurrence is;
    (None, description) when the chunk does not say."""
    def own() -> tuple[str | None, str]:
        if res.extends_name:
            return res.extends_name, f"the script itself, whose class is {res.extends_name}"
        return None, "the script itself, and the chunk has no `extends`"

    if chain is None and call is None and facts.code[:start].rstrip().endswith("."):
        return None, "a member of an expression"  # `a.b[0].rotate`: the parser's chains stop at a subscript
    if call is not None or chain is None or idx is None or idx == -1:  # idx is None only without a chain
        return own()  # a bare call or a bare name is a member of the script itself
    if idx == 0:
        if chain.root_kind in ("self", "super") or (chain.root_kind == "identifier" and chain.root == "super"):
            return own()
        if chain.root_kind == "identifier":
            name = chain.root
            typ = facts.local_types.get(name) or facts.literal_types.get(name)
            if typ:
                return typ, f"'{name}', of class {typ}"
            if name not in facts.declared and name[:1].isupper():
                return name, f"the class {name}"
            return None, f"'{name}', whose class the chunk does not state"
        return None, f"{ROOT_KINDS.get(chain.root_kind, 'an expression')}, whose class the chunk does not state"
    return None, f"a member of '{chain.parts[idx - 1].name}', whose class the chunk does not state"


def off_changed_class(o: OccurrenceCase) -> tuple[str | None, bool]:
    """(why, receiver known): why a code use is not a use of the class a prose change concerns
    (`rotate()` on a Camera for `PathFollow2D's rotate is now rotates`), or None when it is or may be.
    For a name Godot 4 still has, the name alone says nothing: only a use on that class (or a class
    of its lineage) is evidence, so an unknown receiver is a reason too."""
    ref, renamed, classes, src, where = o.ref, o.renamed, o.classes, o.src, o.where
    glob = ref.global_member(src) if o.call is not None else None
    if glob:  # a bare call: the global function, unless the script's own class has that method
        own4 = godot4_class(o.res.extends_name, ref, renamed)
        if not (own4 and ref.member(own4, src)):
            return f"{where}: '{src}()' is the global function {glob[0]}.{src}, not {' or '.join(classes)}'s", True
    cls, desc = written_receiver(o.facts, o.res, o.call, o.chain, o.idx, o.occ["start"])
    if cls is None:
        return (f"{where}: the receiver is {desc}; '{src}' is still Godot 4 API on other classes "
                f"({', '.join(ref.where(src))}), so only a use on {' or '.join(classes)} is evidence"), False
    cls4 = godot4_class(cls, ref, renamed)
    if cls4 is None:
        if cls in classes:
            return None, True
        # A Godot 3 class Godot 4 dropped is known; any other name may be the user's own class or an autoload.
        return (f"{where}: the receiver is {desc}, not a Godot 4 class, so not {' or '.join(classes)}",
                cls in renamed)
    if concerns(ref, renamed, classes, cls4):
        return None, True
    shown = cls if cls4 == cls else f"{cls} ({cls4} in Godot 4)"
    return f"{where}: the receiver is {shown.join(desc.rsplit(cls, 1))}, and the change concerns {' or '.join(classes)}", True


def concerns(ref: ClassReference, renamed: dict[str, str], classes: list[str], cls4: str) -> bool:
    """Whether a change stated for these classes concerns an object of Godot 4 class `cls4` (their lineage)."""
    return any(ref.related(c4, cls4) for c in classes if (c4 := godot4_class(c, ref, renamed)))


def whole_node_name(facts: GDScriptFacts, start: int, end: int) -> bool:
    """Whether the name at [start, end) is a whole node name of its path (`$Top/Area`, `"Camera"`),
    not part of a longer one: `"Camera Rig"`, `"RigidBody%s" % kind` and `"Camera" + str(i)` name other nodes."""
    before, after = facts.text[start - 1:start], facts.text[end:end + 1]
    if before not in ("/", "$", "%", '"', "'"):
        return False
    span = next(((s, e) for s, e in facts.node_paths if s <= start < e), None)
    if span is not None and facts.text[span[0] + 1:][:1] not in ('"', "'"):
        return True  # an unquoted `$Top/Area.get_size()`: the name ends where the identifier does
    string = next(((s, e) for s, e, _ in facts.strings if s <= start < e), None)
    if string is not None and (facts.code[string[1]:].lstrip()[:1] in ("%", "+") or facts.code[:string[0]].rstrip()[-1:] == "+"):
        return False  # the string is only part of the path the code builds
    return after in ("/", ":", '"', "'", "")


def godot3_override(ref: ClassReference, renamed: dict[str, str], res: Resolution, mapping: Mapping[str, Any],
                     classes: list[str]) -> str | None:
    """Why a declaration is the Godot 3 override of a renamed virtual, or None: in an EditorPlugin,
    Godot 4 calls `_make_visible` and has no `make_visible`, so `func make_visible(visible):` is
    written for Godot 3. Needs the script's class (its `extends`, or the request's hint), and, for a
    change the migration page states for one class, a script of that class (`AnimationNode's process
    is now _process` says nothing of `func process()` in a Node)."""
    src, to = mapping["source_api"], str(mapping.get("target_api") or "")
    own = godot4_class(res.extends_name, ref, renamed)
    if not own or not to.startswith("_") or ref.member(own, src) or (classes and not concerns(ref, renamed, classes, own)):
        return None
    found = ref.member(own, to)
    if found is None or found[1]["kind"] != "method":
        return None
    return f"the script's class {own} has the virtual {found[0]}.{to} in Godot 4 and no '{src}': this is its Godot 3 override"


def target_absent(ref: ClassReference, renamed: dict[str, str], mapping: Mapping[str, Any], cls: str | None) -> str | None:
    """Why the converter's renamed constant is not there on the receiver's class, or None. The converter
    renames by name and keeps the qualifier: `Label.ALIGN_CENTER` would become `Label.ALIGNMENT_CENTER`,
    which Godot 4 does not have, so that rename is not this use's migration. Methods and properties are not
    checked: they may have moved to another object the migration reaches differently (SceneTree's
    `is_network_server()` is `multiplayer.is_server()`). A prose change states its class itself."""
    to = str(mapping.get("target_api") or "")
    if mapping["change_type"] != "enum_rename" or not cls or not ref.exists(to):
        return None  # a target no Godot 4 page documents says the table is out of date, not the receiver wrong
    classes = [c for c in dict.fromkeys((cls, renamed.get(cls))) if c and ref.has_class(c)]
    if not classes or ref.global_member(to) or any(ref.member(c, to) or ref.on_subclass(c, to) for c in classes):
        return None
    return f"Godot 4 has no '{to}' on {cls} (nor on a class below it), so the rename to it is not this use's migration"


def stated_classes(mapping: Mapping[str, Any]) -> list[str]:
    return [t.split(".", 1)[0] for t in mapping.get("match_terms") or [] if "." in t and not t.startswith("re:")]



@dataclass
class ChunkScope:
    """The chunk as the occurrence decisions read it: its facts, its resolved uses, the Godot 4 API."""
    facts: GDScriptFacts
    resolution: Resolution
    ref: ClassReference
    renamed_classes: dict[str, str] = field(default_factory=dict)  # Godot 3 class name -> Godot 4 name
    version: VersionMarkers | None = None  # the chunk's own markers (the version stage's, before the mappings')
    context: RequestContext | None = None  # the project around the chunk (project_context.py)


@dataclass
class OccurrenceCase:
    """One occurrence with what the rules read: the chunk, its resolution, the mapping, the version
    context and the request's project context (None without one)."""
    facts: GDScriptFacts
    res: Resolution
    ref: ClassReference
    mapping: dict[str, Any]  # the api_mapping record
    occ: NameOccurrence  # GDScriptFacts.occurrences' entry: start, end, line, col, region
    renamed: dict[str, str]
    version: VersionMarkers | None
    context: RequestContext | None

    def __post_init__(self) -> None:
        self.src, self.change = self.mapping["source_api"], self.mapping["change_type"]
        self.where = f"line {self.occ['line']}:{self.occ['col']}"
        self.code = self.occ["region"] == "code"
        self.chain, self.idx = part_at(self.facts, self.occ["start"])
        self.call = call_at(self.facts, self.occ["start"])
        self.is_call = self.call is not None or (self.chain is not None and self.idx is not None and self.idx >= 0
                                                 and self.chain.parts[self.idx].call)
        self.declaration = (self.code and not self.is_call
                            and self.facts.line_text(self.occ["line"]).lstrip().startswith(("func ", "static func ")))
        self.index = self.context.index() if self.context is not None else None

    @cached_property
    def place(self) -> str:
        """The region, where a string passed as a node path (`get_node("Camera")`) counts as a node path."""
        region = self.occ["region"]
        if region == "string" and string_argument(self.facts, self.occ["start"], NODE_ARGS):
            return "node_path"
        return region

    @cached_property
    def classes(self) -> list[str]:
        """The classes a change the migration page states for one class concerns (its `Class.member` terms)."""
        return stated_classes(self.mapping)

    @property
    def prose(self) -> bool:
        """A change the migration page states in prose, not one of the converter's renames."""
        return self.change not in CONVERTER_TYPES

    @cached_property
    def use(self) -> ApiUse | None:
        """The Godot 4 API this code occurrence resolves to (the resolve stage), or None."""
        return self.resolved() if self.place == "code" else None

    @cached_property
    def exists(self) -> bool:
        """Whether Godot 4 documents the name (a colour: as a Color constant)."""
        if self.change == "color_rename":
            return self.src in self.ref.classes.get("Color", {}).get("members", {})
        return self.ref.exists(self.src)

    @cached_property
    def off_class(self) -> tuple[str | None, bool]:
        """(why, receiver known): why a code use is not a use of the class a prose change concerns (`off_changed_class`)."""
        if not (self.prose and self.classes and not self.declaration):
            return None, False
        return off_changed_class(self)

    @property
    def godot4(self) -> str | None:
        """Why the code is known to be Godot 4 (the project's version, the hint, the chunk's markers), or None."""
        if self.context is not None and self.context.major == "4":
            return f"the project is Godot {self.context.godot_version}"
        if self.version is not None and self.version.hint == "4":
            return "the godot_version hint is 4"
        if self.version is not None and self.version.lean() == "4":
            return "the chunk has Godot 4 markers"
        return None

    def missing(self) -> Unresolved | None:
        return next((u for u in self.res.unresolved if u.missing_on and u.line == self.occ["line"]
                     and u.col == self.occ["col"] and u.name == self.src), None)

    def resolved(self) -> ApiUse | None:
        line, col = self.occ["line"], self.occ["col"]
        return next((u for u in self.res.uses if u.line == line and u.member == self.src
                     and (u.col == col or (self.call is not None and u.col == self.call.col))), None)

    def receiver(self) -> str | None:
        """The receiver's class as written, when the chunk states one (None for the script itself or unknown)."""
        if self.call is not None or self.chain is None or self.idx in (None, -1):
            return None
        cls, _ = written_receiver(self.facts, self.res, self.call, self.chain, self.idx, self.occ["start"])
        return None if self.idx == 0 and self.chain.root_kind in ("self", "super") else cls


@dataclass(frozen=True)
class VersionRule:
    """A named decision: when `applies` gives a reason, the occurrence's status is `outcome`."""
    name: str
    applies: Callable[[OccurrenceCase], str | None]
    outcome: OccurrenceStatus
