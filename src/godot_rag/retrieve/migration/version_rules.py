"""The version decisions, per occurrence: is an occurrence of a Godot 3 name in the chunk really Godot 3 use?
Named rules in ordered tables (`VERSION_RULES`, `OCCURRENCE_RULES`, `GODOT3_OVERRULES`): each a name, a test
that gives the reason when it applies, and an outcome; the first that applies decides, and the trace names it.

Decided from the corpus, per occurrence, and traced:
- where it is: code, comment or string. A comment counts only where it writes a name Godot 4 no
  longer has as code (`# call get_tree().get_rpc_sender_id()`, not `# Spawn RigidBody scenes.`) and
  the chunk's code is Godot 3: the converter renames it there too, and it is weak evidence that never
  carries a finding. Strings count only for
  string-based APIs (project settings, input actions, theme overrides) and at the argument where
  a call takes a signal name, a node path or a class name (`connect("hide", self, "_on")` index 0,
  `yield(obj, "hide")` index 1, `add_custom_type("Mover", "KinematicBody", ...)` index 1); a signal
  name Godot 4 has no signal of (`hide`, now only a method) is Godot 3 use;
- what it resolves to in Godot 4 (the resolve stage): a use that resolves as valid Godot 4
  API is not evidence (`hide()` on a CanvasItem, `Viewport.SCALING_3D_MODE_FSR`), unless it names a
  Godot 4 signal or theme item as a plain value (`button.pressed = true`: ambiguous); a receiver
  whose Godot 4 class lacks the member is (`get_tree().change_scene()`); a name Godot 4 does
  not have at all is (`KinematicBody2D`, `deg2rad`);
- a change the migration page states for one class (`PathFollow2D's rotate is now rotates`)
  concerns only a receiver of that class: read from the script's `extends` (a Godot 3 name through
  the converter's class renames), a typed, constructed or literal local, or a class name. For a name
  Godot 4 still has, an unknown receiver says nothing; a bare call of a global function
  (`load(...)`) is the global;
- what is left is ambiguous (a name valid in both versions): the chunk's version markers
  decide (`@export`, `await`, `super()` against `export var`, `yield(`, `connect("s", o, "m")`,
  and the unambiguous Godot 3 names found in the same chunk), sharpened by the request's
  `godot_version` hint. Nothing is accepted without a literal occurrence;
- a declaration of a renamed virtual is Godot 3 use when the script's class has the new virtual and
  not the old name (`func make_visible(visible):` in an EditorPlugin, whose Godot 4 virtual is `_make_visible`);
- a renamed constant whose Godot 4 name the receiver's class does not have is not this use's
  migration (`Label.ALIGN_CENTER` would become `Label.ALIGNMENT_CENTER`, which Godot 4 does not have:
  Label's alignment went elsewhere), so it is no evidence for it;
- a scene node named after a class Godot 4 no longer has (`$KinematicBody2D`) is weak evidence: nodes
  keep their names through a port, so the chunk's Godot 4 markers or a hint of 4 overrule it. Only a
  whole node name counts: `"RigidBody%s" % kind` and `"Camera Rig"` name other nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Callable

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts, NameOccurrence
from ...gdscript.resolution import Resolution
from ..engine.trace import OccurrenceStatus
from .version import CLASS_TYPES, CONVERTER_TYPES, METHOD_TYPES, SIGNAL_TYPES, STRING_TYPES, VersionContext

if TYPE_CHECKING:
    from ...gdscript.project import RequestContext

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


def _part_at(facts: GDScriptFacts, start: int):
    """(chain, index) of the chain part that starts at this offset, or (chain, -1) for a chain root."""
    for ch in facts.chains:
        if ch.root_start == start and ch.root_kind == "identifier":
            return ch, -1
        for i, p in enumerate(ch.parts):
            if p.start == start:
                return ch, i
    return None, None


def _call_at(facts: GDScriptFacts, start: int):
    return next((c for c in facts.calls if c.start == start), None)


def _next_part(chain, idx) -> str | None:
    """The name after this part (or after the root, idx -1) of its chain: `connect` in `hidden.connect(...)`."""
    return chain.parts[idx + 1].name if chain is not None and idx is not None and idx + 1 < len(chain.parts) else None


def _awaited(facts: GDScriptFacts, chain) -> bool:
    return chain is not None and facts.code[:chain.root_start].rstrip().endswith("await")


def _string_argument(facts: GDScriptFacts, offset: int, args: dict[str, set[int]]) -> bool:
    """Whether the string at `offset` is passed where one of these calls takes it."""
    arg = facts.call_argument(offset)
    return arg is not None and arg[1] in args.get(arg[0], ())


def _names_class(facts: GDScriptFacts, offset: int, name: str) -> bool:
    """Whether the string at `offset` is exactly `name`, passed where a call takes a class name."""
    whole = any(s <= offset < e and v == name for s, e, v in facts.strings)
    return whole and _string_argument(facts, offset, CLASS_NAME_ARGS)


def _godot4_class(name: str | None, ref: ClassReference, renamed: dict[str, str]) -> str | None:
    """The Godot 4 class a class name stands for: itself, or what the converter renamed it to (`Camera`)."""
    if not name:
        return None
    if ref.has_class(name):
        return name
    return renamed.get(name) if ref.has_class(renamed.get(name, "")) else None


ROOT_KINDS = {"call": "the value a call returns", "get_node": "a scene node ($...)", "string": "a string",
              "other": "an expression"}


def _receiver(facts: GDScriptFacts, res: Resolution, call, chain, idx, start: int) -> tuple[str | None, str]:
    """(class name as written, description) of the object whose member this code occurrence is;
    (None, description) when the chunk does not say."""
    def own() -> tuple[str | None, str]:
        if res.extends_name:
            return res.extends_name, f"the script itself, whose class is {res.extends_name}"
        return None, "the script itself, and the chunk has no `extends`"

    if chain is None and call is None and facts.code[:start].rstrip().endswith("."):
        return None, "a member of an expression"  # `a.b[0].rotate`: the parser's chains stop at a subscript
    if call is not None or chain is None or idx == -1:
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


def _off_changed_class(facts: GDScriptFacts, res: Resolution, ref: ClassReference, renamed: dict[str, str],
                       classes: list[str], src: str, call, chain, idx, where: str, start: int) -> tuple[str | None, bool]:
    """(why, receiver known): why a code use is not a use of the class a prose change concerns
    (`rotate()` on a Camera for `PathFollow2D's rotate is now rotates`), or None when it is or may be.
    For a name Godot 4 still has, the name alone says nothing: only a use on that class (or a class
    of its lineage) is evidence, so an unknown receiver is a reason too."""
    glob = ref.global_member(src) if call is not None else None
    if glob:  # a bare call: the global function, unless the script's own class has that method
        own4 = _godot4_class(res.extends_name, ref, renamed)
        if not (own4 and ref.member(own4, src)):
            return f"{where}: '{src}()' is the global function {glob[0]}.{src}, not {' or '.join(classes)}'s", True
    cls, desc = _receiver(facts, res, call, chain, idx, start)
    if cls is None:
        return (f"{where}: the receiver is {desc}; '{src}' is still Godot 4 API on other classes "
                f"({', '.join(ref.where(src))}), so only a use on {' or '.join(classes)} is evidence"), False
    cls4 = _godot4_class(cls, ref, renamed)
    if cls4 is None:
        if cls in classes:
            return None, True
        # A Godot 3 class Godot 4 dropped is known; any other name may be the user's own class or an autoload.
        return (f"{where}: the receiver is {desc}, not a Godot 4 class, so not {' or '.join(classes)}",
                cls in renamed)
    if _concerns(ref, renamed, classes, cls4):
        return None, True
    shown = cls if cls4 == cls else f"{cls} ({cls4} in Godot 4)"
    return f"{where}: the receiver is {shown.join(desc.rsplit(cls, 1))}, and the change concerns {' or '.join(classes)}", True


def _concerns(ref: ClassReference, renamed: dict[str, str], classes: list[str], cls4: str) -> bool:
    """Whether a change stated for these classes concerns an object of Godot 4 class `cls4` (their lineage)."""
    return any(ref.related(c4, cls4) for c in classes if (c4 := _godot4_class(c, ref, renamed)))


def _whole_node_name(facts: GDScriptFacts, start: int, end: int) -> bool:
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


def _godot3_override(ref: ClassReference, renamed: dict[str, str], res: Resolution, mapping: dict,
                     classes: list[str]) -> str | None:
    """Why a declaration is the Godot 3 override of a renamed virtual, or None: in an EditorPlugin,
    Godot 4 calls `_make_visible` and has no `make_visible`, so `func make_visible(visible):` is
    written for Godot 3. Needs the script's class (its `extends`, or the request's hint), and, for a
    change the migration page states for one class, a script of that class (`AnimationNode's process
    is now _process` says nothing of `func process()` in a Node)."""
    src, to = mapping["source_api"], str(mapping.get("target_api") or "")
    own = _godot4_class(res.extends_name, ref, renamed)
    if not own or not to.startswith("_") or ref.member(own, src) or (classes and not _concerns(ref, renamed, classes, own)):
        return None
    found = ref.member(own, to)
    if found is None or found[1]["kind"] != "method":
        return None
    return f"the script's class {own} has the virtual {found[0]}.{to} in Godot 4 and no '{src}': this is its Godot 3 override"


def _target_absent(ref: ClassReference, renamed: dict[str, str], mapping: dict, cls: str | None) -> str | None:
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


# -- rules that read the project around the chunk, and the Godot 4-only syntax of the chunk -------------------
@dataclass
class Occurrence:
    """One occurrence with what the rules read: the chunk, its resolution, the mapping, the version
    context and the request's project context (None without one)."""
    facts: GDScriptFacts
    res: Resolution
    ref: ClassReference
    mapping: dict
    occ: NameOccurrence
    renamed: dict[str, str]
    version: VersionContext | None
    context: RequestContext | None

    def __post_init__(self):
        self.src, self.change = self.mapping["source_api"], self.mapping["change_type"]
        self.where = f"line {self.occ['line']}:{self.occ['col']}"
        self.code = self.occ["region"] == "code"
        self.chain, self.idx = _part_at(self.facts, self.occ["start"])
        self.call = _call_at(self.facts, self.occ["start"])
        self.is_call = self.call is not None or (self.chain is not None and self.idx is not None and self.idx >= 0
                                                 and self.chain.parts[self.idx].call)
        self.declaration = (self.code and not self.is_call
                            and self.facts.line_text(self.occ["line"]).lstrip().startswith(("func ", "static func ")))
        self.index = self.context.index() if self.context is not None else None

    @cached_property
    def place(self) -> str:
        """The region, where a string passed as a node path (`get_node("Camera")`) counts as a node path."""
        region = self.occ["region"]
        if region == "string" and _string_argument(self.facts, self.occ["start"], NODE_ARGS):
            return "node_path"
        return region

    @cached_property
    def classes(self) -> list[str]:
        """The classes a change the migration page states for one class concerns (its `Class.member` terms)."""
        return _classes(self.mapping)

    @property
    def prose(self) -> bool:
        """A change the migration page states in prose, not one of the converter's renames."""
        return self.change not in CONVERTER_TYPES

    @cached_property
    def use(self):
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
        """(why, receiver known): why a code use is not a use of the class a prose change concerns (`_off_changed_class`)."""
        if not (self.prose and self.classes and not self.declaration):
            return None, False
        return _off_changed_class(self.facts, self.res, self.ref, self.renamed, self.classes, self.src, self.call,
                                  self.chain, self.idx, self.where, self.occ["start"])

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

    def missing(self):
        return next((u for u in self.res.unresolved if u.missing_on and u.line == self.occ["line"]
                     and u.col == self.occ["col"] and u.name == self.src), None)

    def resolved(self):
        line, col = self.occ["line"], self.occ["col"]
        return next((u for u in self.res.uses if u.line == line and u.member == self.src
                     and (u.col == col or (self.call is not None and u.col == self.call.col))), None)

    def receiver(self) -> str | None:
        """The receiver's class as written, when the chunk states one (None for the script itself or unknown)."""
        if self.call is not None or self.chain is None or self.idx in (None, -1):
            return None
        cls, _ = _receiver(self.facts, self.res, self.call, self.chain, self.idx, self.occ["start"])
        return None if self.idx == 0 and self.chain.root_kind in ("self", "super") else cls


def godot4_signal_syntax(o: Occurrence) -> str | None:
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


def static_method_declaration(o: Occurrence) -> str | None:
    """`static func get_plugin_name()`: a static function overrides no engine virtual."""
    if o.change in METHOD_TYPES and o.declaration and o.facts.line_text(o.occ["line"]).lstrip().startswith("static func "):
        return f"{o.where}: `static func {o.src}` is the script's own static function: no virtual is static"
    return None


def typed_declaration_in_godot4(o: Occurrence) -> str | None:
    """`func get_preset_name() -> String:` in Godot 4 code: the script's own method, not Godot 3 evidence."""
    if o.change not in METHOD_TYPES or not o.declaration:
        return None
    decl = next((d for d in o.facts.declarations if d.name == o.src and d.line == o.occ["line"]), None)
    why4 = o.godot4
    if decl is None or not decl.typed or why4 is None:
        return None
    return f"{o.where}: `{o.src}` is declared with typed syntax and {why4}: not a Godot 3 override"


def _engine_receiver(o: Occurrence) -> str | None:
    """The engine class a receiver resolves this occurrence to, or None (the script itself, a project
    class, or a receiver the chunk does not state)."""
    if (u := o.resolved()) is not None:
        return u.cls
    if (m := o.missing()) is not None:
        return m.missing_on
    cls = o.receiver()
    if cls and not (o.index is not None and o.index.is_class(cls)) and _godot4_class(cls, o.ref, o.renamed):
        return cls
    return None


def declared_by_project(o: Occurrence) -> str | None:
    """A name the project declares is the project's, unless a receiver resolves it to an engine class."""
    if o.index is None:
        return None
    signal_string = (o.occ["region"] == "string" and o.change in SIGNAL_TYPES
                     and _string_argument(o.facts, o.occ["start"], SIGNAL_ARGS))
    if not (o.code or signal_string):
        return None
    engine = _engine_receiver(o)
    if engine is not None:
        # A receiver typed as an engine class that lacks the name may be an object of a project class below
        # it that declares it (`get_parent().change_scene()` on the project's own scene manager): a downcast.
        missing = o.missing()
        below = [s for s in o.index.declares(o.src) if missing is not None and s.scope
                 and (e := o.index.engine_class(s.scope)) and o.ref.has_class(e) and missing.missing_on in o.ref.lineage(e)]
        if not below:
            return None
        s = below[0]
        return (f"{o.where}: '{o.src}' is declared by the project at {s.where()} ({s.kind.replace('_', ' ')}), "
                f"in a class below {missing.missing_on}")
    if o.declaration and o.change in METHOD_TYPES and _godot3_override(o.ref, o.renamed, o.res, o.mapping, _classes(o.mapping)):
        return None  # the declaration overrides an engine virtual: the engine's name, not the project's
    cls = o.receiver()
    found = o.index.member(cls, o.src) if cls and o.index.is_class(cls) else None
    found = found or next((s for s in o.index.declares(o.src) if not _overrides_engine_virtual(o, s)), None)
    if found is None:
        return None
    return f"{o.where}: '{o.src}' is declared by the project at {found.where()} ({found.kind.replace('_', ' ')})"


def _overrides_engine_virtual(o: Occurrence, s) -> bool:
    """Whether the project's declaration is its Godot 3 override of a renamed engine virtual (`func make_visible`
    in an EditorPlugin, whose Godot 4 virtual is `_make_visible`): the engine's name, which a call uses too."""
    to = str(o.mapping.get("target_api") or "")
    if s.kind != "func" or not to.startswith("_") or o.change not in METHOD_TYPES or not s.scope:
        return False
    engine = _godot4_class(o.index.engine_class(s.scope), o.ref, o.renamed) if o.index is not None else None
    if not engine:
        return False
    found = o.ref.member(engine, to)
    return found is not None and found[1]["kind"] == "method" and o.ref.member(engine, o.src) is None


@dataclass(frozen=True)
class VersionRule:
    """A named decision: when `applies` gives a reason, the occurrence's status is `outcome`."""
    name: str
    applies: Callable[[Occurrence], str | None]
    outcome: OccurrenceStatus


# Checked in order before the chunk-only decisions of `classify_occurrence`; the first that applies decides.
VERSION_RULES = (
    VersionRule("godot4_signal_syntax", godot4_signal_syntax, "valid_godot4"),
    VersionRule("static_method_declaration", static_method_declaration, "ignored"),
    VersionRule("typed_declaration_in_godot4", typed_declaration_in_godot4, "ignored"),
    VersionRule("declared_by_project", declared_by_project, "ignored"),
)


def engine_api_missing(o: Occurrence) -> bool:
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
    own = _godot4_class(o.res.extends_name, o.ref, o.renamed)
    return not o.ref.exists(o.src) or (own is not None and o.ref.member(own, o.src) is None and not o.ref.global_member(o.src))


def godot4_project_compiles(o: Occurrence) -> str | None:
    """In a known Godot 4 project, a migration finding needs engine API that Godot 4 lacks."""
    if o.context is None or o.context.major != "4" or engine_api_missing(o):
        return None
    return (f"{o.where}: the project is Godot {o.context.godot_version}, and this use compiles there "
            f"(it names no engine API Godot 4 lacks)")


# Checked on a `godot3` decision; the first that applies decides instead.
GODOT3_OVERRULES = (VersionRule("godot4_project_compiles", godot4_project_compiles, "ignored"),)
NOT_COMPILED = "Godot 4 has no such engine API, so this code would not compile in Godot 4"


# -- the chunk-only decisions: what the occurrence's place, its resolution and the class reference say -----------
def _comment_writes_dropped_name(o: Occurrence) -> str | None:
    if (o.place == "comment" and o.change in COMMENT_TYPES and o.facts.written_as_code(o.occ["start"], o.occ["end"])
            and not o.ref.exists(o.src)):
        return f"{o.where}: a comment writes '{o.src}' as code, and Godot 4 documents no '{o.src}'"
    return None


def _in_comment(o: Occurrence) -> str | None:
    if o.place != "comment":
        return None
    return f"{o.where} is in a comment" + (" (a word of prose)" if o.change in COMMENT_TYPES else "")


def _node_path_not_class(o: Occurrence) -> str | None:
    return f"{o.where} is a node name in a node path" if o.place == "node_path" and o.change not in CLASS_TYPES else None


def _part_of_node_name(o: Occurrence) -> str | None:
    if o.place == "node_path" and not _whole_node_name(o.facts, o.occ["start"], o.occ["end"]):
        return f"{o.where}: '{o.src}' is only part of a node name (node path)"
    return None


# Godot names a node after its class, and a node keeps that name through a port: a node named after a class
# Godot 4 no longer has points to Godot 3, but weakly; one named after a live class says nothing.
def _node_named_after_dropped_class(o: Occurrence) -> str | None:
    if o.place == "node_path" and not o.ref.has_class(o.src):
        return f"{o.where}: a scene node named after the Godot 3 class '{o.src}' (node path)"
    return None


def _node_named_after_class(o: Occurrence) -> str | None:
    return f"{o.where}: '{o.src}' names a scene node (node path), not the class itself" if o.place == "node_path" else None


def _class_name_string(o: Occurrence) -> bool:
    return o.place == "string" and o.change in CLASS_TYPES and _names_class(o.facts, o.occ["start"], o.src)


def _string_names_dropped_class(o: Occurrence) -> str | None:
    if _class_name_string(o) and not o.ref.has_class(o.src):
        return f"{o.where}: the string names the class '{o.src}' in a class-name argument, and Godot 4 has no such class"
    return None


def _string_names_class(o: Occurrence) -> str | None:
    return f"{o.where}: the string names the class '{o.src}', still a Godot 4 class" if _class_name_string(o) else None


def _string_not_string_api(o: Occurrence) -> str | None:
    if o.place == "string" and o.change not in STRING_TYPES:
        return f"{o.where} is in a string, and {o.change} is not a string-based API"
    return None


def _string_not_signal_argument(o: Occurrence) -> str | None:
    if o.place == "string" and o.change in SIGNAL_TYPES and not _string_argument(o.facts, o.occ["start"], SIGNAL_ARGS):
        return f"{o.where} is a string that is not a signal argument"
    return None


def _string_names_dropped(o: Occurrence) -> str | None:
    if o.place == "string" and (o.change in SETTING_TYPES or not o.ref.exists(o.src)):
        return f"{o.where}: the string names '{o.src}', which Godot 4 no longer has"
    return None


def _signal_name_not_a_signal(o: Occurrence) -> str | None:
    if o.place == "string" and o.change in SIGNAL_TYPES and not o.ref.signals_named(o.src):
        return (f"{o.where}: the signal name '{o.src}': Godot 4 has no signal of that name "
                f"(only {', '.join(o.ref.where(o.src))}, which are not signals)")
    return None


def _signal_name_exists(o: Occurrence) -> str | None:
    if o.place != "string":
        return None
    signals = ", ".join(o.ref.signals_named(o.src)[:NAMES_CITED])
    return f"{o.where}: the signal name '{o.src}' still exists in Godot 4 ({signals})"


def _not_color_constant(o: Occurrence) -> str | None:
    if o.place == "code" and o.change == "color_rename" and not (o.chain is not None and o.idx == 0 and o.chain.root == "Color"):
        return f"{o.where} is not a `Color.{o.src}` constant"
    return None


def _signal_not_used_as_signal(o: Occurrence) -> str | None:
    if o.place == "code" and o.change in SIGNAL_TYPES and _next_part(o.chain, o.idx) not in SIGNAL_USES:
        return f"{o.where} uses '{o.src}' as {'a method call' if o.is_call else 'a name'}, not as the signal"
    return None


def _method_not_called(o: Occurrence) -> str | None:
    if o.place == "code" and o.change in METHOD_TYPES and not o.is_call and not o.declaration:
        return f"{o.where} is not a call of '{o.src}'"
    return None


def _godot3_virtual_override(o: Occurrence) -> str | None:
    if o.declaration and o.change in METHOD_TYPES and (why := _godot3_override(o.ref, o.renamed, o.res, o.mapping, o.classes)):
        return f"{o.where}: {why}"
    return None


def _resolves_off_class(o: Occurrence) -> str | None:
    u = o.use
    if u is not None and o.classes and not any(o.ref.related(c, u.cls) for c in o.classes if o.ref.has_class(c)):
        return f"{o.where} resolves to {u.api}, not to {' or '.join(o.classes)}"
    return None


def _godot4_signal_as_value(o: Occurrence) -> str | None:
    """`button.pressed = true`: Godot 4's `pressed` there is a signal (and a theme item, which code reaches
    only through the theme API); used as a plain value it is the Godot 3 property."""
    u = o.use
    if u is None or o.is_call:
        return None
    found = o.ref.member(u.cls, o.src, code=True) if u.kind == "theme_property" else (u.cls, {"kind": u.kind})
    as_signal = _next_part(o.chain, o.idx) in SIGNAL_USES or _awaited(o.facts, o.chain)
    if found is not None and (found[1]["kind"] != "signal" or o.change in SIGNAL_TYPES or as_signal):
        return None
    what = f"the Godot 4 signal {found[0]}.{o.src}" if found else f"{u.api}, a Godot 4 theme item"
    return f"{o.where} names {what}, but uses it as a plain value"


def _resolves_in_godot4(o: Occurrence) -> str | None:
    return f"{o.where} resolves to {o.use.api}, valid Godot 4 API" if o.use is not None else None


def _enum_target_absent(o: Occurrence) -> str | None:
    if o.place != "code" or o.change != "enum_rename":
        return None
    missing = o.missing()
    written = None if missing else _receiver(o.facts, o.res, o.call, o.chain, o.idx, o.occ["start"])[0]
    receiver = missing.missing_on if missing else _godot4_class(written, o.ref, o.renamed)
    why = _target_absent(o.ref, o.renamed, o.mapping, receiver)
    return f"{o.where}: {why}" if why else None


def _missing_here(o: Occurrence):
    """The member missing on this occurrence's receiver in Godot 4, where it says something: a page's sentence
    without its class says nothing about this receiver."""
    return o.missing() if o.place == "code" and not (o.prose and not o.classes) else None


def _missing_on_other_class(o: Occurrence) -> str | None:
    if (m := _missing_here(o)) is None or not o.classes or not any(o.ref.has_class(c) for c in o.classes):
        return None
    if any(o.ref.has_class(c) and o.ref.related(c, m.missing_on) for c in o.classes):
        return None
    return f"{o.where}: the receiver is {m.missing_on}, and the change concerns {' or '.join(o.classes)}"


def _missing_on_receiver(o: Occurrence) -> str | None:
    return f"{o.where}: {m.missing_on} has no '{o.src}' in Godot 4" if (m := _missing_here(o)) is not None else None


def _class_member_resolves(o: Occurrence) -> str | None:
    if o.place != "code" or o.change not in CLASS_TYPES or not (o.chain is not None and o.idx == -1 and o.chain.parts):
        return None
    first = o.chain.parts[0]
    found = o.ref.member(o.src, first.name) if o.ref.has_class(o.src) else None
    return f"{o.where}: {o.src}.{first.name} resolves in Godot 4 ({found[0]}.{first.name})" if found else None


def _class_dropped(o: Occurrence) -> str | None:
    if o.place == "code" and o.change in CLASS_TYPES and not o.ref.has_class(o.src):
        return f"{o.where}: Godot 4 has no class '{o.src}'"
    return None


def _class_still_exists(o: Occurrence) -> str | None:
    return f"{o.where}: '{o.src}' is still a Godot 4 class" if o.place == "code" and o.change in CLASS_TYPES else None


def _known_receiver_off_class(o: Occurrence) -> str | None:
    """`map_to_world()` on a TileMap is not `GridMap's map_to_world`."""
    why, known = o.off_class
    return why if o.place == "code" and not o.exists and known else None


def _short_prose_name(o: Occurrence) -> str | None:
    if o.place == "code" and not o.exists and o.prose and len(o.src) < SHORT_NAME_CHARS and "_" not in o.src:
        return (f"{o.where}: '{o.src}' is too short or common to stand for "
                f"{o.classes[0] + '.' if o.classes else ''}{o.src} without a receiver of that class")
    return None


def _name_dropped(o: Occurrence) -> str | None:
    return f"{o.where}: Godot 4 documents no '{o.src}'" if o.place == "code" and not o.exists else None


def _receiver_off_class(o: Occurrence) -> str | None:
    return o.off_class[0] if o.place == "code" else None


def _still_godot4_api(o: Occurrence) -> str | None:
    return f"{o.where}: '{o.src}' is still Godot 4 API ({', '.join(o.ref.where(o.src))})" if o.place == "code" else None


# The chunk-only decisions, in order: the first whose test gives a reason decides. Each place (comment, node
# path, string, code) ends on a rule that always fires there.
OCCURRENCE_RULES = (
    VersionRule("comment_writes_dropped_name", _comment_writes_dropped_name, "godot3_comment"),
    VersionRule("in_comment", _in_comment, "ignored"),
    VersionRule("node_path_not_class", _node_path_not_class, "ignored"),
    VersionRule("part_of_node_name", _part_of_node_name, "ignored"),
    VersionRule("node_named_after_dropped_class", _node_named_after_dropped_class, "godot3_node"),
    VersionRule("node_named_after_class", _node_named_after_class, "ambiguous"),
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


def first_rule(rules: tuple[VersionRule, ...], o: Occurrence) -> tuple[VersionRule, str] | None:
    """The first rule of the table that applies to the occurrence, with its reason."""
    return next(((rule, why) for rule in rules if (why := rule.applies(o))), None)


def decide_occurrence(o: Occurrence) -> tuple[OccurrenceStatus, str, str]:
    """(status, why, rule) from the chunk alone: the first of `OCCURRENCE_RULES` that applies."""
    fired = first_rule(OCCURRENCE_RULES, o)
    if fired is None:
        raise ValueError(f"{o.where}: no occurrence rule applies to region {o.occ['region']!r}")
    return fired[0].outcome, fired[1], fired[0].name


def classify_occurrence(facts: GDScriptFacts, res: Resolution, ref: ClassReference, mapping: dict, occ: NameOccurrence,
                        renamed: dict[str, str] | None = None) -> tuple[OccurrenceStatus, str]:
    """(status, why) for one literal occurrence of the mapping's source, from the chunk alone. `renamed`: the
    converter's class renames (Godot 3 name -> Godot 4 name), to read a receiver written with its Godot 3 class name.

    status: ignored | valid_godot4 | godot3 | godot3_node (a node named after a Godot 3 class) |
    godot3_comment (a comment writes a dropped name as code) | ambiguous"""
    status, why, _ = decide_occurrence(Occurrence(facts, res, ref, mapping, occ, renamed or {}, None, None))
    return status, why


def _classes(mapping: dict) -> list[str]:
    return [t.split(".", 1)[0] for t in mapping.get("match_terms") or [] if "." in t and not t.startswith("re:")]


def classify_in_context(facts: GDScriptFacts, res: Resolution, ref: ClassReference, mapping: dict, occ: NameOccurrence,
                        renamed: dict[str, str] | None = None, version: VersionContext | None = None,
                        context=None) -> tuple[OccurrenceStatus, str, str]:
    """(status, why, rule): the rules that read the project and the Godot 4-only syntax (`VERSION_RULES`), then the
    chunk-only ones (`OCCURRENCE_RULES`), then the overrules of a `godot3` decision. `rule` names the rule that decided."""
    o = Occurrence(facts, res, ref, mapping, occ, renamed or {}, version, context)
    if fired := first_rule(VERSION_RULES, o):
        return fired[0].outcome, f"{fired[1]} [rule {fired[0].name}]", fired[0].name
    status, why, name = decide_occurrence(o)
    if status != "godot3":
        return status, why, name
    if overruled := first_rule(GODOT3_OVERRULES, o):
        return overruled[0].outcome, f"{why}; {overruled[1]} [rule {overruled[0].name}]", overruled[0].name
    if context is not None and context.major == "4":
        return status, f"{why}; {NOT_COMPILED} [rule engine_api_missing]", "engine_api_missing"
    return status, why, name
