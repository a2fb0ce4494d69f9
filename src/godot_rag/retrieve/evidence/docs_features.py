"""A guide's direct evidence as named features (pure functions), and the fitted model that decides on them.

The chunk's side is its resolution (`resolve.py`); the record's side is what ingest stored in its metadata
(`ingest/record_api.py`): the same facts and resolver, so `Class.member` means the same on both sides.
- Shared API counts only as the same `Class.member` on both sides, weighted by its specificity in the
  corpus (`DocsApiStats`: how many records and how many real chunks use it; `Node.get_node` weighs ~0).
- Names either side declares are never evidence; they never reach these sets (the resolver does not
  resolve a declared name as API).
- The same member name on classes that are not related is a clash (`Plane.distance_to` for
  `Vector2.distance_to`): a contradiction, a rule, not a weight.
- Class compatibility comes from the class reference's inheritance: the same class, an ancestor, or a
  sibling under a parent that is not a hub of the hierarchy (`Node`, `Resource` have hundreds of
  descendants: sharing them says nothing).
- The 2D and 3D worlds are facts of the hierarchy too: a node under `Node2D` or `Node3D`, and a class that only
  one family's members are typed with (`Vector3`, `Basis`, `Vector2`, `Shape2D`). A record whose nodes are
  of one world, for a chunk that computes in the other (neither side writes both), is a contradiction, a rule.
- A page's acceptance rate over the dev sets damps hub pages (stored with the model).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from ...gdscript.classref import NO_TYPE, ClassReference
from ...gdscript.lexicon import IDENT, KEYWORDS
from ...gdscript.record_api import global_uses, record_api
from ...records import record_code
from ...store import queries
from ..engine.trace import RATIO_DIGITS
from ..query.segment import split_segments
from ..recall.codematch import clone_match, code_identifiers, code_tokens, is_ident, numbered_code_lines
from ..recall.embedding import VECTORS

FEATURES = ("api_code", "api_prose", "api_in_context", "shared_global", "shared_callback", "shared_class", "shared_construct",
            "incompatible", "foreign_class", "hub_rate", "clone", "bm25_rank", "cosine")
# What a chunk and a guide share: API (code, prose, globals), a callback, a class. For a chunk that uses API, a
# guide with none of them came back on its text's likeness alone: a different feature sharing words (`nothing_shared`).
SHARED_FEATURES = ("api_code", "api_prose", "shared_global", "shared_callback", "shared_class", "shared_construct")
GUIDE_SHARE_RULES = ("nothing_shared", "generic_only")  # decide_guide's rules over what a guide shares, as the trace names them
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
MIN_HEAD_CHARS = 3  # a class name's head (`Navigation` of NavigationAgent2D) that makes two classes rivals
MIN_BLOCK_LINES = 3  # code lines of a top-level block of the chunk that a page may copy on its own
LOGIT_LIMIT = 50.0  # keeps exp() in range; P is 0 or 1 to double precision beyond it
BASIS_SHOWN, CONTRIBUTIONS_CITED = 8, 3  # names the trace lists per kind; feature contributions a rejection cites
FAMILY_ROOTS = {"Node2D": "2D", "Node3D": "3D"}  # the roots of the two worlds' node families
NATIVE_LANGUAGES = frozenset({"cpp", "c"})  # code of the engine or of a GDExtension, not of a script
NATIVE_PAGE_SHARE = 0.8  # a page whose program code is this share C/C++ is about the engine's or an extension's code
SCRIPT_LANGUAGES = frozenset({"gdscript", "csharp"})  # the languages of a project's scripts
MIN_WORLD_USES = 3  # members of the two families typed with a class that can make it one world's
WORLD_SHARE = 0.85  # the share of those uses (per class of each family) one world must hold (Vector2, not bool or String)
QUOTES = "\"'"  # a string token opens with one
CAMEL_HEAD_RE = re.compile(r"^[A-Z][a-z]+|^[A-Z]+(?=[A-Z][a-z]|\d|$)")
MIN_CONSTRUCT_HEAD = 4  # a construct's name head (`enum` of enum_definition) that a heading's word may start with
HEADING_WORD_RE = re.compile(r"[a-z]+")
ANNOTATION_SEP = ".@"  # an annotation as the class reference names it: `@GDScript.@export`


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
    def build(cls, docs: Mapping[str, dict], ref: ClassReference, chunk_share: dict[str, float] | None = None) -> "DocsApiStats":
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


def construct_head(construct: str) -> str:
    """The first word of a construct's name (`enum` of enum_definition, `static` of
    function_definition/static_keyword)."""
    return construct_heads(construct)[-1]


def construct_heads(construct: str) -> list[str]:
    """The head of each part of a construct's name: a keyword's and the node's it modifies (`static`, `function`)."""
    return [part.split("_", 1)[0] for part in construct.split("/")]


def taught_constructs(rec: dict, api: dict) -> set[str]:
    """The constructs a record teaches: those its code holds whose name's heads (`enum` of enum_definition,
    `variadic`, `region`, `lambda`; `static` and `function` of function_definition/static_keyword) each start a word
    of its section path ("Constants / Enums", "Variadic functions", "Code regions", "Static functions"). The
    language reference's section on a construct, as the class reference's entry on a member: a page that merely
    holds an `enum` in its code teaches no enums, and "Static variables" teaches no static function."""
    words = heading_words(rec)
    return {c for c in api["code_constructs"] if len(construct_head(c)) >= MIN_CONSTRUCT_HEAD
            and all(any(w.startswith(head) for w in words) for head in construct_heads(c))}


def heading_words(rec: dict) -> set[str]:
    """The words of a record's section path, lower case (`abstract` of "Abstract classes and methods")."""
    return {w for part in rec.get("section_path") or [] for w in HEADING_WORD_RE.findall(part.lower())}


def heading_annotations(rec: dict, api: dict) -> set[str]:
    """The heads of the annotations a record's code uses that start a word of its section path (`abstract` under
    "Abstract classes and methods", `export` of `@export_enum` under "Exporting enums", `onready` under "`@onready`
    annotation"): what the section is about, beside the constructs it shows them on."""
    words = heading_words(rec)
    return {head for g in api["code_globals"] if ANNOTATION_SEP in g and len(head := annotation_head(g)) >= MIN_CONSTRUCT_HEAD
            and any(w.startswith(head) for w in words)}


def annotation_head(api: str) -> str:
    """The first word of an annotation's name (`export` of `@GDScript.@export_enum`)."""
    return api.split(ANNOTATION_SEP, 1)[1].split("_", 1)[0]


def callback_key(name: str) -> str:
    """How a callback is counted beside `Class.member` (`_input()`): by name, as a record stores it."""
    return name + "()"


def chunk_callbacks(facts, ref: ClassReference) -> set[str]:
    """The functions the chunk defines that override a documented method (`_input`, `_draw`)."""
    return {f for f in facts.functions if f.startswith("_") and f in ref.named_owners}


def missing_cosines(ctx, candidates) -> dict[str, float]:
    """The cosine of the chunk's vector with each docs candidate that the embedding list did not bring (one
    only BM25 found): the guide model reads a record's cosine, not a 0 for a record the HNSW list missed."""
    vectors = ctx.get(VECTORS)
    if vectors is None or not len(vectors):
        return {}
    ids = sorted({c.id for c in candidates if c.table == "docs_chunks" and not c.has_info("embedding")})
    return queries.cosines(ctx.resources.conn(), "docs_chunks", vectors[0], ids)


def chunk_classes(resolution, facts, ref: ClassReference) -> set[str]:
    """The classes the chunk uses: resolved owners, its `extends`, and the types it writes."""
    out = set(resolution.classes)
    out.update(t for t in [facts.extends, *facts.local_types.values()] if t and ref.has_class(t))
    out.update(i for i in facts.identifiers if ref.has_class(i) and i not in facts.declared)
    return out


def member_clashes(ref: ClassReference, chunk_api: set[str], rec_api: set[str], shared_names: set[str]) -> list[dict]:
    """The record uses a member of the chunk's name on a class unrelated to the chunk's, and never the chunk's own."""
    clashes = []
    by_name: dict[str, set[str]] = {}
    for a in chunk_api:
        by_name.setdefault(a.split(".", 1)[1], set()).add(a.split(".", 1)[0])
    for r in sorted(rec_api):
        cls, name = r.split(".", 1)
        owners = by_name.get(name)
        if owners and r not in chunk_api and name not in shared_names and not any(ref.related(cls, o) for o in owners) \
                and not any(f"{o}.{name}" in rec_api for o in owners):
            clashes.append({"record": r, "chunk": f"{sorted(owners)[0]}.{name}"})
    return clashes


@dataclass(frozen=True)
class ChunkSide:
    """What the features read of the chunk alone: the same for every guide of one query."""
    declared: frozenset[str]  # its declarations and functions
    classes: frozenset[str]  # chunk_classes
    dotted: frozenset[str]  # `.member` names it writes
    globals: frozenset[str]  # global_uses
    callbacks: frozenset[str]  # chunk_callbacks
    family: tuple[str, ...]  # its classes that are not hubs (class_fit)
    world: tuple[str | None, list[str]]  # stats.world_of(classes)
    project: frozenset[str] = frozenset()  # the engine classes the project's classes end on (foreign_section)
    migrated: Mapping[str, str] = field(default_factory=dict)  # migrated_api: Godot 4 `Class.member` -> the Godot 3 name written
    constructs: frozenset[str] = frozenset()  # the GDScript constructs its code holds (facts.constructs)


def migrated_api(ref: ClassReference, resolution, renames: list[tuple[str, str, int, int]]) -> dict[str, str]:
    """The Godot 4 API that the chunk's Godot 3 uses become: `renames` holds (source, target, line, col) of each
    occurrence an accepted api_mapping decided is Godot 3 use in code. The target resolves like a use: on the class
    the receiver resolved to (`ResourceLoader.load_interactive` -> `ResourceLoader.load_threaded_request`), as a
    global (`deg2rad` -> `@GlobalScope.deg_to_rad`), on the script's own class (`NOTIFICATION_WM_FOCUS_IN` ->
    `Node.NOTIFICATION_APPLICATION_FOCUS_IN`), or on the one class that documents it. Godot 3 code is compared with
    Godot 4 guides through the API its names were renamed to; a class rename is `chunk_side`'s `renamed`."""
    missing = {(u.line, u.col): u.missing_on for u in resolution.unresolved if u.missing_on}
    out: dict[str, str] = {}
    for source, target, line, col in renames:
        if re.fullmatch(IDENT, target) is None or ref.has_class(target):
            continue
        found = None
        if (on := missing.get((line, col))) is not None:
            found = ref.member(on, target)
        elif (glob := ref.global_member(target)) is not None:
            found = glob
        elif resolution.own_class is not None:
            found = ref.member(resolution.own_class, target)
        if found is None and (owners := set(ref.resolver_map(target).values())) and len(owners) == 1:
            found = ref.member(next(iter(owners)), target)
        if found is not None:
            out[f"{found[0]}.{target}"] = source
    return out


def untyped_members(code: str, ref: ClassReference) -> frozenset[str]:
    """The `.member` names code writes on a receiver that may be an instance of a Godot class: not on a capitalised
    name that is no Godot class, which is the code's own class, enum or autoload (`PandoraNanoIDGenerator.new()`
    constructs no `OpenXRSpatialComponentMesh2DList`); a `$Node` or `%Node` is a node of the scene."""
    return frozenset(m for sigil, recv, m in DOTTED_RE.findall(code)
                     if sigil or not recv or not recv[0].isupper() or ref.has_class(recv))


def chunk_side(stats: DocsApiStats, resolution, facts, renamed: Mapping[str, str] | None = None,
               project: frozenset[str] = frozenset(), migrated: Mapping[str, str] | None = None) -> ChunkSide:
    """The chunk's side of the features: worked out once per chunk (the validation context keeps it).
    `renamed`: the converter's class renames (Godot 3 name -> Godot 4 name); a Godot 3 class the chunk writes
    stands for the class Godot 4 renamed it to (`SpatialMaterial` code is about `StandardMaterial3D`).
    `migrated`: `migrated_api`, the Godot 4 members its Godot 3 uses become (globals among them)."""
    mine = chunk_classes(resolution, facts, stats.ref)
    if renamed:
        mine |= {renamed[i] for i in facts.identifiers if i in renamed and i not in facts.declared and stats.ref.has_class(renamed[i])}
    migrated = dict(migrated or {})
    globals_ = set(global_uses(facts, resolution, stats.ref)) | {a for a in migrated if a.startswith("@")}
    return ChunkSide(frozenset(facts.declared | facts.functions), frozenset(mine), untyped_members(facts.code, stats.ref),
                     frozenset(globals_), frozenset(chunk_callbacks(facts, stats.ref)),
                     tuple(c for c in mine if not stats.generic(c)), stats.world_of(mine), project, migrated,
                     frozenset(facts.constructs))


def guide_features(stats: DocsApiStats, resolution, facts, rec: dict, *, clone: float, bm25_rank: int | None,
                   cosine: float | None, hub_rate: float, side: ChunkSide | None = None) -> tuple[dict[str, float], dict]:
    """The named feature values for one (chunk, guide record), and what they rest on (for the trace). `side`: the
    chunk's `chunk_side`, when the caller keeps it for the chunk's other records."""
    api = record_api(rec)
    side = side if side is not None else chunk_side(stats, resolution, facts)
    declared = side.declared | set(api["code_declares"])
    # A use an `is` test narrows stays out (measured: guides accepted through such uses were graded 2 for 8 of 26, 0
    # for 4, where their class-reference entries were 61 of 63): `if event is InputEventMouseButton:` is any input
    # handler's frame; the record's `.member` on an untyped receiver still meets it below (`inferred`).
    chunk_api = ({u.api for u in resolution.uses if u.member not in declared and u.via != "narrowed"}
                 | {a for a in side.migrated if not a.startswith("@")})
    rec_code = set(api["code_uses"])
    rec_prose = {m for m in api["mentions"] if "." in m}
    mine = side.classes
    rec_classes = set(api["code_classes"]) | prose_classes(api)
    # One side resolves `X.m`; the other writes `.m` on a receiver it does not type, in code about X's
    # lineage (`event.button_index` after `if event is InputEventMouseButton`): the same API.
    rec_dotted = stats.record_untyped(record_code(rec))
    chunk_dotted = side.dotted - declared
    # Not where the other side resolves the same name on a class of another lineage (`WebSocketPeer.get_ready_state`
    # against a WebRTC page's `WebRTCDataChannel.get_ready_state`): the same name on different classes.
    inferred = {a for a in chunk_api - rec_code if a.split(".", 1)[1] in rec_dotted
                and any(stats.ref.related(a.split(".", 1)[0], c) for c in rec_classes)
                and not _elsewhere(stats.ref, a, rec_code)}
    inferred |= {a for a in rec_code - chunk_api if a.split(".", 1)[1] in chunk_dotted
                 and any(stats.ref.related(a.split(".", 1)[0], c) for c in mine)
                 and not _elsewhere(stats.ref, a, chunk_api)}
    shared_code = sorted((chunk_api & rec_code) | inferred)
    shared_prose = sorted((chunk_api & rec_prose) - set(shared_code))
    shared_names = {a.split(".", 1)[1] for a in shared_code + shared_prose}
    shared_globals = sorted(side.globals & set(api["code_globals"]))
    clashes = member_clashes(stats.ref, chunk_api, rec_code | rec_prose, shared_names)
    shared_classes = sorted(c for c in mine & rec_classes if not stats.generic(c))
    fit = class_fit(stats, side, rec_classes, record_page(rec))
    topic, strangers = fit["topic"], fit["strangers"]
    foreign = max(((c, stats.class_specificity(c)) for c in strangers), key=lambda x: (x[1], x[0]), default=None)
    # A callback both override (`_unhandled_input`, `_draw`): the pattern the record shows; `_ready` weighs less (0.30).
    shared_callbacks = sorted(callback_key(f) for f in side.callbacks & set(api["code_callbacks"]))
    # A construct the chunk uses that the record teaches (`enum` for "Constants / Enums"): the language's reference.
    # One per name head: `annotation` and `annotations` (an annotation and its list) are one construct.
    # A section about an annotation (`@abstract` for "Abstract classes and methods", `@export` for "Exporting enums")
    # teaches its constructs with the annotation: a plain `class_name` or `enum` shares none of them.
    chunk_annotations = {annotation_head(g) for g in side.globals if ANNOTATION_SEP in g}
    taught = taught_constructs(rec, api) if heading_annotations(rec, api) <= chunk_annotations else set()
    weighed = {c: stats.construct_specificity(c) for c in side.constructs & taught}
    by_head: dict[str, str] = {}
    for c in sorted(weighed, key=lambda c: (-weighed[c], c)):
        by_head.setdefault(construct_head(c).removesuffix("s"), c)
    shared_constructs = [{"construct": c, "specificity": weighed[c]} for c in sorted(by_head.values())]
    shared_api = [shared_entry(stats, a, "code") for a in shared_code] + [shared_entry(stats, a, "prose") for a in shared_prose]
    values = {
        "api_code": round(sum(e["specificity"] for e in shared_api if e["from"] == "code"), RATIO_DIGITS),
        "api_prose": round(sum(e["specificity"] for e in shared_api if e["from"] == "prose"), RATIO_DIGITS),
        "shared_global": round(sum(stats.member_specificity(a) for a in shared_globals), RATIO_DIGITS),
        "shared_callback": round(sum(stats.member_specificity(a) for a in shared_callbacks), RATIO_DIGITS),
        "shared_class": round(sum(stats.class_specificity(c) for c in shared_classes), RATIO_DIGITS),
        "shared_construct": round(sum(weighed[c] for c in sorted(by_head.values())), RATIO_DIGITS),
        "incompatible": round(len(strangers) / len(topic), RATIO_DIGITS) if topic and fit["family_mine"] else 0.0,
        # The most specific class the record is about that fits none of the chunk's (`XRCamera3D` in a room-scale
        # page for platformer code): a share of strangers counts a stray `Vector2` the same.
        "foreign_class": foreign[1] if foreign else 0.0,
        "hub_rate": round(hub_rate, RATIO_DIGITS),
        "clone": round(clone, RATIO_DIGITS),
        "bm25_rank": round(1.0 / math.log2(1 + bm25_rank), RATIO_DIGITS) if bm25_rank else 0.0,
        "cosine": round(cosine or 0.0, RATIO_DIGITS),
    }
    # The rubric's "in a matching context": shared API counted for the share of the record's classes that fit the chunk's.
    values["api_in_context"] = round((values["api_code"] + values["api_prose"]) * (1.0 - values["incompatible"]), RATIO_DIGITS)
    basis = {"shared_api": shared_api,
             "shared_globals": [{"api": a, "specificity": stats.member_specificity(a)} for a in shared_globals],
             "shared_callbacks": [{"api": a, "specificity": stats.member_specificity(a)} for a in shared_callbacks],
             "shared_classes": shared_classes,
             "shared_constructs": shared_constructs,
             "strangers": strangers[:BASIS_SHOWN], "clashes": clashes[:BASIS_SHOWN],
             "rivals": fit["rivals"][:BASIS_SHOWN], "worlds": fit["worlds"],
             "foreign_class": {"class": foreign[0], "specificity": foreign[1]} if foreign else None,
             "native_code": native_code(rec), "native_page": native_page(stats, rec), "foreign_section": foreign_section(stats, side, rec),
             # shared API the chunk writes under its Godot 3 name (migrated_api)
             "migrated": [{"api": a, "written": side.migrated[a]} for a in shared_code + shared_prose + shared_globals
                          if a in side.migrated]}
    return values, basis


def shared_entry(stats: DocsApiStats, api: str, source: str) -> dict:
    """One shared member as the trace shows it: its weight as evidence, and `coordinate` when that is why it weighs 0."""
    return {"api": api, "specificity": stats.evidence_specificity(api), "from": source} | (
        {"coordinate": True} if stats.ref.coordinate(api) else {})


def foreign_section(stats: DocsApiStats, side: ChunkSide, rec: dict) -> dict | None:
    """The feature section of the record's page (`tutorials/xr`) when neither the chunk nor its project (the
    request's `context`) uses one of that section's own classes: an XR page's movement code for a platformer's
    enemy, a navigation page for a menu's `_ready`. A chunk of an XR project that names no XR class itself
    (a session handler of its start script) keeps the XR pages when its project is given."""
    section = section_of(record_page(rec))
    own = stats.section_classes.get(section)
    if not own or (side.classes | side.project) & set(own):
        return None
    return {"section": section, "classes": own[:BASIS_SHOWN]}


def native_code(rec: dict) -> list[str] | None:
    """The languages of a record whose code is all C++ or C (the engine's source, a GDExtension's class): what
    a guide like that shows is not GDScript, whatever names it shares with the chunk."""
    langs = {b.get("language") for b in rec.get("code_blocks") or []}
    return sorted(langs) if langs and langs <= NATIVE_LANGUAGES else None


def native_page(stats: DocsApiStats, rec: dict) -> dict | None:
    """The record's page and its C/C++ languages when the page is the engine's or an extension's (`native_pages`),
    whatever the record's own block: the C example's GDScript block shows a script calling the extension it builds."""
    page = record_page(rec)
    langs = stats.native_pages.get(page)
    return {"page": page, "languages": langs} if langs else None


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


def _elsewhere(ref: ClassReference, api: str, other: set[str]) -> bool:
    """Whether `other` (one side's resolved API) holds `api`'s member name on a class unrelated to `api`'s."""
    cls, member = api.split(".", 1)
    return any(o.split(".", 1)[1] == member and not ref.related(cls, o.split(".", 1)[0]) for o in other if "." in o)


def prose_classes(api: dict) -> set[str]:
    """The classes a record's prose names, unless it names more than a topic holds: a list of classes (the class
    index, an "Inherited By" line) says nothing of any one of them, so none counts as shared."""
    named = {m for m in api["mentions"] if "." not in m}
    return named if len(named) <= MAX_TOPIC_CLASSES else set()


def class_fit(stats: DocsApiStats, side: ChunkSide, rec_classes: set[str], page: str) -> dict:
    """How the record's classes fit the chunk's: its topic (classes that are not hubs of the hierarchy), the
    strangers among them (compatible with no class of the chunk's families), the rivals, and the worlds (2D / 3D)
    when each side is of one only and they differ. A record that names no node of either world is of its page's
    world (`# On CharacterBody3D.` above `transform.basis` code on a page about 3D)."""
    topic = sorted(c for c in rec_classes if not stats.generic(c))
    family_mine = side.family
    strangers = [c for c in topic if not any(stats.compatible(c, m) for m in family_mine)] if family_mine else []
    # A stranger that shares its name's head with a class of the chunk is a rival of the same feature
    # (NavigationAgent2D vs NavigationServer3D): a contradiction, not only a mismatch.
    rivals = sorted({f"{s} vs {m}" for s in strangers for m in family_mine
                     if (h := CAMEL_HEAD_RE.match(s)) and len(h.group(0)) >= MIN_HEAD_CHARS and m.startswith(h.group(0))})
    # The chunk is of the world it computes in; the record of the world whose nodes it shows.
    chunk_world, chunk_says = side.world
    rec_world, rec_says = stats.world_of(rec_classes, nodes_only=True)
    if not rec_says:
        rec_world, rec_says = stats.world_of(set(stats.page_nodes.get(page, ())), nodes_only=True)
    worlds = ({"chunk": chunk_world, "chunk_classes": chunk_says[:BASIS_SHOWN], "record": rec_world,
               "record_classes": rec_says[:BASIS_SHOWN]} if chunk_world and rec_world and chunk_world != rec_world else None)
    return {"topic": topic, "family_mine": family_mine, "strangers": strangers, "rivals": rivals, "worlds": worlds}


def contradictions(basis: dict, copied: bool = False) -> list[str]:
    """The facts that reject a guide whatever the model says. (`rivals`, classes of one feature that are not
    one family, stay a trace note: by name alone `Input` and `InputEventMouseButton` would be rivals.) `copied`:
    the chunk copies the record's code, which settles its world (an XR script's window `Vector2` is no 2D)."""
    out = []
    if basis["clashes"] and not basis["shared_api"]:
        x = basis["clashes"][0]
        out.append(f"contradiction: the record uses {x['record']} where the chunk uses {x['chunk']}")
    if langs := basis.get("native_code"):
        out.append(f"contradiction: the record's code is {'/'.join(langs)} (the engine's or a GDExtension's), not a script")
    elif (n := basis.get("native_page")) is not None and not copied:
        out.append(f"contradiction: the record is of {n['page']}, whose code is {'/'.join(n['languages'])} "
                   "(the engine's or a GDExtension's), not a script's")
    if (f := basis.get("foreign_section")) is not None and not copied:
        out.append(f"contradiction: the record is of {f['section']}, a feature whose own classes "
                   f"({', '.join(f['classes'])}) the chunk does not use")
    if (w := basis.get("worlds")) is not None and not copied:
        out.append(f"contradiction: the record is {w['record']} ({', '.join(w['record_classes'])}) where the chunk is "
                   f"{w['chunk']} ({', '.join(w['chunk_classes'])})")
    return out


def most_specific(stats: DocsApiStats, basis: dict) -> tuple[str, float] | None:
    """The most specific thing a guide shares with the chunk (API, prose API, global, callback, class or construct) and its
    specificity, as the features weigh each; None when it shares nothing."""
    shared = [(e["api"], e["specificity"]) for e in basis["shared_api"]]
    shared += [(e["api"], e["specificity"]) for e in basis["shared_globals"] + basis["shared_callbacks"]]
    shared += [(c, stats.class_specificity(c)) for c in basis["shared_classes"]]
    shared += [(e["construct"], e["specificity"]) for e in basis.get("shared_constructs", [])]
    return max(shared, key=lambda x: (x[1], x[0]), default=None)


def uses_api(side: ChunkSide, resolution) -> bool:
    """Whether the chunk uses any API a guide could share: a resolved member, a global, a callback, a class."""
    return bool(side.classes or side.globals or side.callbacks or any(u.member not in side.declared for u in resolution.uses))


def copied_share(chunk: str, code: str, renameable, min_lines: int = MIN_BLOCK_LINES,
                 api_names: frozenset[str] = frozenset(), renames: Mapping[str, frozenset[str]] | None = None,
                 hub_names: frozenset[str] = frozenset()) -> float:
    """The largest share of one block of the chunk (the whole chunk, or a top-level block of it with at least
    `min_lines` code lines) that the record's code holds up to renaming, each record line copied once: a chunk
    made of two pages' code copies each of them in one of its blocks. `api_names`: the record's API
    (`DocsApiStats.code_api_names`), which a copy keeps: no name of the chunk is renamed to one of them, but for
    the Godot 4 name `renames` gives it. A block counts only when its matched lines keep something of the
    chunk's content as it is (`copy_anchor`; `hub_names`: API names that anchor nothing, `DocsApiStats.hub_names`)."""
    return copied_shares(chunk, code, renameable, min_lines, api_names, renames, hub_names)[0]


def copied_shares(chunk: str, code: str, renameable, min_lines: int = MIN_BLOCK_LINES,
                  api_names: frozenset[str] = frozenset(),
                  renames: Mapping[str, frozenset[str]] | None = None,
                  hub_names: frozenset[str] = frozenset()) -> tuple[float, float]:
    """(`copied_share`, the same share counting blocks without an anchor too): what the trace shows of a copy of
    nothing but the code's frame."""
    best, loose = 0.0, 0.0
    blocks = split_segments(chunk)
    for i, text in enumerate([chunk] + (blocks if len(blocks) > 1 else [])):
        ratio, lines = clone_match(text, code, renameable, one_to_one=True, record_api=api_names, renames=renames)
        if not ratio or (i and len(lines) < min_lines):
            continue
        loose = max(loose, ratio)
        if copy_anchor(text, lines, code, renameable, api=len(lines) >= min_lines, hub_names=hub_names) is not None:
            best = max(best, ratio)
    return best, loose


def copy_anchor(text: str, lines: list[int], code: str, renameable, api: bool = True,
                hub_names: frozenset[str] = frozenset()) -> str | None:
    """The first name or string that the chunk's matched lines keep as they are in the record's `code` (a keyword
    does not count; an author's name counts only where the record has it too, not renamed), or None. A function's
    signature line does not count: with it, a chunk of `func _ready() -> void:` and a call of the author's
    `_tween()` would copy every page whose code has a `_ready` that calls a function of its own (the callback
    weighs in the model's `shared_callback`). `api=False` (a copy of fewer than MIN_BLOCK_LINES lines): a name of
    the API does not count either. A handler's signature and `results.clear()` match any page's function that
    clears a list of its own; the author's names (`min_speed`, `_find_other`) or a string make it a copy. A name of
    `hub_names` (only hub classes have it: `free`, `queue_free`, `add_child`) never counts: `if x:` / `x.free()` four
    times is the frame of any cleanup, an XR manager's as much as a physics test's."""
    kept = code_tokens(code)  # a chunk name the record has is never renamed (`lines_match`): it matched as it is
    numbered = dict(numbered_code_lines(text))
    return next((t for n in lines if "func" not in (toks := numbered.get(n, ())) for t in toks
                 if t[0] in QUOTES or (is_ident(t) and t not in KEYWORDS and t not in hub_names
                                       and (t in kept if t in renameable else api))), None)


@dataclass(frozen=True)
class GuideModel:
    """Logistic regression over FEATURES: P(grade 2) = sigmoid(bias + sum weight x value); accept at threshold."""
    weights: dict[str, float]
    bias: float
    threshold: float
    page_accept_rate: dict[str, float]
    chunk_share: dict[str, float]
    meta: dict

    @classmethod
    def from_dict(cls, data: dict) -> "GuideModel":
        return cls(dict(data["weights"]), float(data["bias"]), float(data["threshold"]),
                   dict(data.get("page_accept_rate") or {}), dict(data.get("chunk_share") or {}),
                   {k: data[k] for k in ("data_digest", "fitted_on", "n", "cv", "threshold_from") if k in data})

    def decide(self, values: dict[str, float]) -> dict:
        contrib = {f: round(self.weights.get(f, 0.0) * values[f], RATIO_DIGITS) for f in FEATURES}
        logit = self.bias + sum(contrib.values())
        p = 1.0 / (1.0 + math.exp(-max(-LOGIT_LIMIT, min(LOGIT_LIMIT, logit))))
        return {"features": values, "contributions": contrib, "bias": round(self.bias, RATIO_DIGITS),
                "logit": round(logit, RATIO_DIGITS), "p": round(p, RATIO_DIGITS), "threshold": self.threshold, "accepted": p >= self.threshold}


def candidate_cosine(c, filled: dict[str, float]) -> float | None:
    """The candidate's cosine: its embedding list's, or the one read for it (`missing_cosines`)."""
    emb = c.info("embedding")
    return emb.cosine if emb is not None else filled.get(c.id)


def share_rule(stats: DocsApiStats, values: dict[str, float], basis: dict, side: ChunkSide, resolution,
               min_specificity: float) -> dict | None:
    """The GUIDE_SHARE_RULES verdict on what a guide shares with the chunk, whatever P says, as {rule: detail}, or
    None when neither holds: `nothing_shared` (no SHARED_FEATURES, for a chunk that uses API) or `generic_only`
    (its most specific shared thing weighs less than `min_specificity`). `fit-guides` vetoes the same pairs."""
    if not any(values[f] for f in SHARED_FEATURES) and uses_api(side, resolution):
        return {"nothing_shared": True}
    if min_specificity and (most := most_specific(stats, basis)) is not None and most[1] < min_specificity:
        return {"generic_only": {"most_specific": most[0], "specificity": most[1]}}
    return None


def decide_guide(model: GuideModel, stats: DocsApiStats, resolution, facts, c, clone: float,
                 copy_share: float, renameable: frozenset[str], cosine: float | None = None,
                 side: ChunkSide | None = None, renames: Mapping[str, frozenset[str]] | None = None,
                 godot3: bool = False, min_specificity: float = 0.0) -> tuple[dict, list[str]]:
    """The model's verdict on one guide candidate: its trace (each feature's value and contribution, the
    shared API it rests on) and the reasons to reject it (contradictions first; empty when accepted).
    A record whose code holds `copy_share` of the chunk's code lines (up to renaming) is the code the chunk
    copies: evidence by fact, whatever the model says (the model is fitted on real code, which copies little).
    `renames`: the converter's renames (Godot 3 name -> Godot 4 names): Godot 3 code copies a page that writes
    the Godot 4 names of its API (`$AnimatedSprite.play()` for `$AnimatedSprite2D.play()`). A copy that keeps
    nothing of the chunk's content (`copy_anchor`) is traced as `copy_unanchored` and left to the model.
    A guide that is no copy and shares nothing (SHARED_FEATURES all 0) with a chunk that uses API is rejected
    whatever P says (`nothing_shared`). Where the chunk uses none (`#region`, a `match`, a .po file's text), or
    is Godot 3 code (`godot3`: its version markers; the page that ports it writes its API under Godot 4 names),
    the likeness of the texts is all there is to go on, and the model decides. A guide that is no copy and whose
    most specific shared thing (`most_specific`) weighs less than `min_specificity` shares only generic API
    (`_ready`, `get_node`, `@export`): rejected whatever P says (`generic_only`; the issue's hub damping, measured
    on the judged sets: below 0.5, a third of such guides were graded 2; above, 0.71)."""
    bm25 = c.info("bm25")
    side = side if side is not None else chunk_side(stats, resolution, facts)
    values, basis = guide_features(stats, resolution, facts, c.payload, clone=clone,
                                   bm25_rank=bm25.rank if bm25 is not None else None, cosine=cosine,
                                   hub_rate=model.page_accept_rate.get(c.page or "", 0.0), side=side)
    out = model.decide(values) | basis
    # Each line of the record copied once: the clone ratio lets one record line stand for many chunk lines.
    if copy_share:
        code = record_code(c.payload)
        api_names = stats.code_api_names(code, frozenset(record_api(c.payload)["code_declares"]))
        share, loose = copied_shares(facts.text, code, renameable, api_names=api_names, renames=renames,
                                     hub_names=stats.hub_names)
        if share >= copy_share:
            out["accepted"], out["copied_code"] = True, True
        elif loose >= copy_share:
            out["copy_unanchored"] = True
    # The rules over what it shares judge an accept the model made: not a copy, not Godot 3 code.
    if out["accepted"] and not out.get("copied_code") and not godot3 and (
            rule := share_rule(stats, values, basis, side, resolution, min_specificity)) is not None:
        out["accepted"] = False
        out.update(rule)
    reasons = contradictions(basis, copied=bool(out.get("copied_code")))
    if out.get("nothing_shared"):
        reasons.append("nothing shared: the record shares no API, class or callback with the chunk (its text's likeness alone)")
    if g := out.get("generic_only"):
        reasons.append(f"generic only: what the record shares with the chunk is all generic (the most specific, "
                       f"{g['most_specific']}, weighs {g['specificity']:.2f} < {min_specificity:.2f})")
    if not out["accepted"] and not any(out.get(rule) for rule in GUIDE_SHARE_RULES):
        top = sorted(((v, f) for f, v in out["contributions"].items() if v), reverse=True)[:CONTRIBUTIONS_CITED]
        reasons.append(f"model: P(direct) {out['p']:.2f} < {model.threshold:.2f}"
                       + (f" ({', '.join(f'{f} {v:+.2f}' for v, f in top)})" if top else " (no shared API)"))
    return out, reasons
