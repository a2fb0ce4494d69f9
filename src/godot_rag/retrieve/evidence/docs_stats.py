"""How widely the docs use each member, class and construct (`DocsApiStats`, counted once when the records load),
and the facts of the class hierarchy the guide features read: hub classes, the 2D and 3D worlds, the docs
sections that are a feature of their own, the pages of engine (C/C++) code."""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ...gdscript.classref import NO_TYPE, ClassReference
from ...gdscript.lexicon import IDENT
from ...gdscript.record_api import record_api
from ..engine.trace import RATIO_DIGITS
from ..recall.codematch import code_identifiers

SECTION_SHARE = 0.8  # a class is a docs section's own when this share of the guide records that name it are there
MIN_OWN_RECORDS = 5  # ... and at least this many records name it (`XRServer`: 31 records, all in tutorials/xr)
MIN_SECTION_CLASSES = 5  # a section with this many classes of its own is a feature of its own (XR: 17, navigation: 8)
# Classes a record's prose may name and still be about them: the largest topics are 15 ("Packed arrays", the GUI
# feature list); the guides above are lists (a build's disabled GUI classes: 30, the 3 -> 4 rename tables: 18-21,
# C#'s Variant types: 32), the class index 284.
MAX_TOPIC_CLASSES = 15
GENERIC_DESCENDANTS = 20  # a class with this many descendants is a hub of the hierarchy, not a family
DOTTED_RE = re.compile(rf"(?:([$%]?)\b({IDENT})\s*)?\.({IDENT})\b")  # (node sigil, receiver name, member)
GENERIC_MEMBER_SHARE = 0.25  # what a member of a hub class keeps of its specificity (CanvasItem.draw_line is no get_node)
COMMON_CHUNK_SHARE = 0.25  # a member used by this share of real chunks has no specificity left
FAMILY_ROOTS = {"Node2D": "2D", "Node3D": "3D"}  # the roots of the two worlds' node families
NATIVE_LANGUAGES = frozenset({"cpp", "c"})  # code of the engine or of a GDExtension, not of a script
NATIVE_PAGE_SHARE = 0.8  # a page whose program code is this share C/C++ is about the engine's or an extension's code
SCRIPT_LANGUAGES = frozenset({"gdscript", "csharp"})  # the languages of a project's scripts
MIN_WORLD_USES = 3  # members of the two families typed with a class that can make it one world's
WORLD_SHARE = 0.85  # the share of those uses (per class of each family) one world must hold (Vector2, not bool or String)


@dataclass
class DocsApiStats:
    """How widely each member and class is used, counted once when the records load."""
    ref: ClassReference
    n_records: int
    member_records: dict[str, int]
    class_records: dict[str, int]
    chunk_share: dict[str, float] = field(default_factory=dict)  # Class.member -> share of real chunks using it
    construct_records: dict[str, int] = field(default_factory=dict)  # GDScript construct -> records whose code holds it
    page_nodes: dict[str, list[str]] = field(default_factory=dict)  # page -> the 2D / 3D nodes its records name
    section_classes: dict[str, list[str]] = field(default_factory=dict)  # feature section -> its own classes (feature_sections)
    native_pages: dict[str, list[str]] = field(default_factory=dict)  # page -> its C/C++ languages (native_pages)
    _compatible: dict[tuple[str, str], bool] = field(default_factory=dict, repr=False, compare=False)
    _code_api_names: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)
    _untyped: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, docs: Mapping[str, dict], ref: ClassReference, chunk_share: dict[str, float] | None = None) -> DocsApiStats:
        members: dict[str, int] = {}
        classes: dict[str, int] = {}
        constructs: Counter = Counter()
        page_nodes: dict[str, set[str]] = {}
        page_langs: dict[str, Counter] = {}  # page -> its code blocks' languages (native_pages)
        named: dict[str, Counter] = {}  # class -> the guide sections whose records name it (feature_sections)
        for rec in docs.values():
            api = record_api(rec)
            page = record_page(rec)
            page_langs.setdefault(page, Counter()).update(b.get("language") or "" for b in rec.get("code_blocks") or [])
            page_nodes.setdefault(page, set()).update(
                c for c in set(api["code_classes"]) | set(api["mentions"]) if node_world(ref, c) is not None)
            if page and not page.startswith("classes/"):
                for c in set(api["code_classes"]) | prose_classes(api):
                    named.setdefault(c, Counter())[section_of(page)] += 1
            for m in set(api["code_uses"]) | set(api["code_globals"]) | {x for x in api["mentions"] if "." in x}:
                members[m] = members.get(m, 0) + 1
            for c in set(api["code_classes"]) | {x for x in api["mentions"] if "." not in x}:
                classes[c] = classes.get(c, 0) + 1
            for f in set(api["code_callbacks"]):
                members[callback_key(f)] = members.get(callback_key(f), 0) + 1
            constructs.update(set(api["code_constructs"]))
        return cls(ref, len(docs), members, classes, dict(chunk_share or {}), dict(constructs),
                   {p: sorted(v) for p, v in page_nodes.items() if v}, feature_sections(named), native_pages(page_langs))

    def _idf(self, df: int) -> float:
        """In [0, 1]: 1 for a name one record uses, 0 for one every record uses."""
        return max(0.0, math.log((self.n_records + 1) / (df + 1)) / math.log(self.n_records + 1)) if self.n_records else 0.0

    def _chunk_rarity(self, key: str) -> float:
        """In [0, 1]: 1 for a name no real chunk uses, 0 for one COMMON_CHUNK_SHARE of them use (`chunk_share`)."""
        return 1.0 - min(1.0, self.chunk_share.get(key, 0.0) / COMMON_CHUNK_SHARE)

    def member_specificity(self, api: str) -> float:
        chunk = self._chunk_rarity(api)
        # A member of a hub class (Node, Object, CanvasItem) is shared by every script of its kind.
        hub = GENERIC_MEMBER_SHARE if not api.startswith("@") and self.generic(api.split(".", 1)[0]) else 1.0
        return round(self._idf(self.member_records.get(api, 0)) * chunk * hub, RATIO_DIGITS)

    def evidence_specificity(self, api: str) -> float:
        """A shared member's weight as a guide's evidence: its specificity, but none for a coordinate of a value type
        (`Basis.x`, `Color.r`). Resolved uses of `.x` are rare only because most are untyped, so it would look specific,
        and a guide that shares only coordinates is about something else (a player's `Basis.looking_at` for a gyro's
        `Basis.rotated`). A class page's entry of them keeps `member_specificity`: it does document them."""
        return 0.0 if self.ref.coordinate(api) else self.member_specificity(api)

    def code_api_names(self, code: str, declared: frozenset[str]) -> frozenset[str]:
        """The names a record's code uses that Godot 4 has (classes, members, globals), less what it declares:
        a copy of the code keeps them (remembered per code: a record comes back for many queries)."""
        if code not in self._code_api_names:
            # A setter or getter is API too (`set_target_position`), though `exists` leaves it to its property.
            self._code_api_names[code] = frozenset(t for t in code_identifiers(code) - declared
                                                   if self.ref.has_class(t) or t in self.ref.owners)
        return self._code_api_names[code]

    @cached_property
    def hub_names(self) -> frozenset[str]:
        """Member names only hub classes of the hierarchy have (`free`, `queue_free`, `add_child`, `get_node`):
        every script's, so a copy that keeps one of them as it is keeps nothing of its own (`copy_anchor`)."""
        return frozenset(name for name, owners in self.ref.named_owners.items()
                         if owners and all(self.generic(c) for c in owners))

    def record_untyped(self, code: str) -> frozenset[str]:
        """`untyped_members` of a record's code, remembered per code like `code_api_names`."""
        if code not in self._untyped:
            self._untyped[code] = untyped_members(code, self.ref)
        return self._untyped[code]

    def construct_specificity(self, construct: str) -> float:
        """Like a member's: how few records hold the construct in their code and how few real chunks use it
        (`function_definition`, `if_statement` weigh 0; `enum_definition`, `variadic_parameter` are specific)."""
        return round(self._idf(self.construct_records.get(construct, 0)) * self._chunk_rarity(construct_key(construct)),
                     RATIO_DIGITS)

    def class_specificity(self, cls: str) -> float:
        """Like a member's: how few records and how few real chunks use the class (`SceneTree`, `Input` are common)."""
        return 0.0 if self.generic(cls) else round(self._idf(self.class_records.get(cls, 0)) * self._chunk_rarity(cls),
                                                   RATIO_DIGITS)

    @cached_property
    def descendants(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.ref.classes:
            for a in self.ref.lineage(c)[1:]:
                out[a] = out.get(a, 0) + 1
        return out

    @cached_property
    def worlds(self) -> dict[str, str]:
        """Class -> "2D" or "3D": a node of that world's family, or a class whose uses as the type of the two
        families' members, per class of each family, are WORLD_SHARE of that world's (`Vector3`, `Vector2`)."""
        out: dict[str, str] = {}
        typed: dict[str, Counter] = {w: Counter() for w in FAMILY_ROOTS.values()}
        for c, info in self.ref.classes.items():
            if (world := node_world(self.ref, c)) is not None:
                out[c] = world
                typed[world].update(m.get("type") or "" for m in info["members"].values())
        size = Counter(out.values())
        for t in set().union(*typed.values()) - NO_TYPE - set(out):
            if t not in self.ref.classes or sum(n[t] for n in typed.values()) < MIN_WORLD_USES:
                continue
            rate = {w: typed[w][t] / size[w] for w in typed}  # per class of the family: the 3D one is larger
            world = max(rate, key=lambda w: rate[w])
            if rate[world] >= WORLD_SHARE * sum(rate.values()):
                out[t] = world
        return out

    def world_of(self, classes: set[str], nodes_only: bool = False) -> tuple[str | None, list[str]]:
        """The one world the classes belong to (None when none or both) and the classes that say so: the nodes
        of the two families decide where there are any (a 3D script reads a mouse `Vector2`), else the other
        classes of one world. `nodes_only`: the nodes alone (a guide that writes a `Vector3` teaches no 3D)."""
        found = {c: self.worlds[c] for c in classes if c in self.worlds}
        nodes = {c: w for c, w in found.items() if node_world(self.ref, c) is not None}
        if nodes or nodes_only:
            found = nodes
        kinds = set(found.values())
        return (kinds.pop() if len(kinds) == 1 else None), sorted(found)

    def generic(self, cls: str) -> bool:
        return self.descendants.get(cls, 0) >= GENERIC_DESCENDANTS or cls.startswith("@")

    def compatible(self, a: str, b: str) -> bool:
        """Same class, one an ancestor of the other, or siblings under a parent that is not a hub (remembered:
        a query asks about the same few pairs for every candidate)."""
        if (a, b) not in self._compatible:
            self._compatible[(a, b)] = self._compatible_now(a, b)
        return self._compatible[(a, b)]

    def _compatible_now(self, a: str, b: str) -> bool:
        if a == b or self.ref.related(a, b):
            return True
        up = self.ref.lineage(a)
        common = next((x for x in self.ref.lineage(b) if x in up), None)
        return common is not None and not self.generic(common)


def node_world(ref: ClassReference, cls: str) -> str | None:
    """"2D" or "3D" for a node of that world's family (`Node2D`, `CharacterBody3D`), else None."""
    return next((FAMILY_ROOTS[a] for a in ref.lineage(cls) if a in FAMILY_ROOTS), None)


def record_page(rec: dict) -> str:
    """A docs record's page (`tutorials/xr/xr_room_scale`), or "" for a record without one."""
    return (rec.get("metadata") or {}).get("page_path") or ""


def section_of(page: str) -> str:
    """A guide page's section of the docs: `tutorials/xr/xr_room_scale` -> `tutorials/xr`."""
    return "/".join(page.split("/")[:2])


def feature_sections(named: Mapping[str, Counter]) -> dict[str, list[str]]:
    """The docs sections that are a feature of their own, each with its own classes, from `named` (class -> the
    guide sections whose records name it, counted by `DocsApiStats.build`): the classes that at least
    MIN_OWN_RECORDS guide records name, SECTION_SHARE of them in that section (`XRServer`, `XROrigin3D` in
    `tutorials/xr`; `NavigationServer2D`, `NavigationAgent3D` in `tutorials/navigation`), for the sections with
    MIN_SECTION_CLASSES of them. From the records, not a hand list."""
    own: dict[str, list[str]] = {}
    for c, where in named.items():
        section, n = where.most_common(1)[0]
        if sum(where.values()) >= MIN_OWN_RECORDS and n >= SECTION_SHARE * sum(where.values()):
            own.setdefault(section, []).append(c)
    # The most named first: the trace cites the first few.
    return {sec: sorted(cs, key=lambda c: (-sum(named[c].values()), c)) for sec, cs in sorted(own.items())
            if len(cs) >= MIN_SECTION_CLASSES}


def construct_key(construct: str) -> str:
    """How a GDScript construct is counted beside `Class.member` in the chunk shares (`syntax:enum_definition`)."""
    return "syntax:" + construct


def callback_key(name: str) -> str:
    """How a callback is counted beside `Class.member` (`_input()`): by name, as a record stores it."""
    return name + "()"


def prose_classes(api: dict) -> set[str]:
    """The classes a record's prose names, unless it names more than a topic holds: a list of classes (the class
    index, an "Inherited By" line) says nothing of any one of them, so none counts as shared."""
    named = {m for m in api["mentions"] if "." not in m}
    return named if len(named) <= MAX_TOPIC_CLASSES else set()


def native_pages(page_langs: Mapping[str, Counter]) -> dict[str, list[str]]:
    """Guide pages whose program code (C, C++, GDScript and C# blocks; shell and text are neither) is NATIVE_PAGE_SHARE
    C or C++ (the GDExtension C example: 64 of 65; a custom module in C++: 8 of 10), with those languages. A page
    that shows C++ beside its GDScript (threads: 7 of 10) is not one."""
    out = {}
    for page, langs in page_langs.items():
        native = sum(n for lang, n in langs.items() if lang in NATIVE_LANGUAGES)
        script = sum(n for lang, n in langs.items() if lang in SCRIPT_LANGUAGES)
        if native and not page.startswith("classes/") and native >= NATIVE_PAGE_SHARE * (native + script):
            out[page] = sorted(lang for lang in langs if lang in NATIVE_LANGUAGES)
    return out


def untyped_members(code: str, ref: ClassReference) -> frozenset[str]:
    """The `.member` names code writes on a receiver that may be an instance of a Godot class: not on a capitalised
    name that is no Godot class, which is the code's own class, enum or autoload (`PandoraNanoIDGenerator.new()`
    constructs no `OpenXRSpatialComponentMesh2DList`); a `$Node` or `%Node` is a node of the scene."""
    return frozenset(m for sigil, recv, m in DOTTED_RE.findall(code)
                     if sigil or not recv or not recv[0].isupper() or ref.has_class(recv))
