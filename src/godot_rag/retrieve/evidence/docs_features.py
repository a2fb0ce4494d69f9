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
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts
from ...gdscript.record_api import record_api
from ...gdscript.resolution import Resolution
from ...records import record_code
from ..engine.trace import RATIO_DIGITS
from .chunk_side import ChunkSide, chunk_side
from .docs_stats import (
    NATIVE_LANGUAGES,
    DocsApiStats,
    callback_key,
    prose_classes,
    record_page,
    section_of,
)

FEATURES = ("api_code", "api_prose", "api_in_context", "shared_global", "shared_callback", "shared_class", "shared_construct",
            "incompatible", "foreign_class", "hub_rate", "clone", "bm25_rank", "cosine")
# What a chunk and a guide share: API (code, prose, globals), a callback, a class. For a chunk that uses API, a
# guide with none of them came back on its text's likeness alone: a different feature sharing words (`nothing_shared`).
SHARED_FEATURES = ("api_code", "api_prose", "shared_global", "shared_callback", "shared_class", "shared_construct")
MIN_HEAD_CHARS = 3  # a class name's head (`Navigation` of NavigationAgent2D) that makes two classes rivals
BASIS_SHOWN = 8  # names the trace lists per kind
CAMEL_HEAD_RE = re.compile(r"^[A-Z][a-z]+|^[A-Z]+(?=[A-Z][a-z]|\d|$)")
MIN_CONSTRUCT_HEAD = 4  # a construct's name head (`enum` of enum_definition) that a heading's word may start with
HEADING_WORD_RE = re.compile(r"[a-z]+")
ANNOTATION_SEP = ".@"  # an annotation as the class reference names it: `@GDScript.@export`


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
class Shared:
    """What one guide record shares with the chunk, and how its classes fit the chunk's (`guide_features`' basis)."""
    code: list[str]  # `Class.member` both sides' code use (or one writes untyped on the other's class)
    prose: list[str]  # `Class.member` the chunk's code uses and the record's prose names
    globals: list[str]
    callbacks: list[str]
    classes: list[str]  # not hubs of the hierarchy
    constructs: list[dict[str, Any]]  # {construct, specificity}
    clashes: list[dict[str, str]]
    fit: dict[str, Any]  # class_fit
    foreign: tuple[str, float] | None  # the most specific class of the record's topic that fits none of the chunk's


@dataclass(frozen=True)
class GuideRecord:
    """One guide record as its features read it: its payload, and what retrieval measured of it for the chunk (its
    clone ratio, BM25 rank and cosine) and of its page (the page's acceptance rate, `hub_rate`)."""
    payload: dict[str, Any]
    clone: float
    bm25_rank: int | None
    cosine: float | None
    hub_rate: float


def guide_features(stats: DocsApiStats, resolution: Resolution, facts: GDScriptFacts, guide: GuideRecord,
                   side: ChunkSide | None = None) -> tuple[dict[str, float], dict]:
    """The named feature values for one (chunk, guide record), and what they rest on (for the trace). `side`: the
    chunk's `chunk_side`, when the caller keeps it for the chunk's other records."""
    side = side if side is not None else chunk_side(stats, resolution, facts)
    rec = guide.payload
    shared = shared_with(stats, resolution, side, rec)
    values = shared_values(stats, shared) | {
        "hub_rate": round(guide.hub_rate, RATIO_DIGITS),
        "clone": round(guide.clone, RATIO_DIGITS),
        "bm25_rank": round(1.0 / math.log2(1 + guide.bm25_rank), RATIO_DIGITS) if guide.bm25_rank else 0.0,
        "cosine": round(guide.cosine or 0.0, RATIO_DIGITS),
    }
    # The rubric's "in a matching context": shared API counted for the share of the record's classes that fit the chunk's.
    values["api_in_context"] = round((values["api_code"] + values["api_prose"]) * (1.0 - values["incompatible"]), RATIO_DIGITS)
    return values, shared_basis(stats, shared, side, rec)


def _chunk_api(resolution: Resolution, side: ChunkSide, declared: AbstractSet[str]) -> set[str]:
    """The chunk's resolved API, less what either side declares, with the Godot 4 API its Godot 3 uses become.
    A use an `is` test narrows stays out (measured: guides accepted through such uses were graded 2 for 8 of 26, 0
    for 4, where their class-reference entries were 61 of 63): `if event is InputEventMouseButton:` is any input
    handler's frame; the record's `.member` on an untyped receiver still meets it (`_shared_api`'s `inferred`)."""
    return ({u.api for u in resolution.uses if u.member not in declared and u.via != "narrowed"}
            | {a for a in side.migrated if not a.startswith("@")})


def _shared_api(stats: DocsApiStats, side: ChunkSide, rec: dict[str, Any], chunk_api: set[str], declared: AbstractSet[str],
                rec_classes: set[str]) -> tuple[list[str], list[str]]:
    """(shared in code, shared with the record's prose): the `Class.member` names both sides use."""
    api = record_api(rec)
    rec_code = set(api["code_uses"])
    rec_prose = {m for m in api["mentions"] if "." in m}
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
                 and any(stats.ref.related(a.split(".", 1)[0], c) for c in side.classes)
                 and not _elsewhere(stats.ref, a, chunk_api)}
    shared_code = sorted((chunk_api & rec_code) | inferred)
    return shared_code, sorted((chunk_api & rec_prose) - set(shared_code))


def _shared_constructs(stats: DocsApiStats, side: ChunkSide, rec: dict[str, Any], api: dict[str, Any]) -> list[dict[str, Any]]:
    """A construct the chunk uses that the record teaches (`enum` for "Constants / Enums"): the language's reference.
    One per name head: `annotation` and `annotations` (an annotation and its list) are one construct.
    A section about an annotation (`@abstract` for "Abstract classes and methods", `@export` for "Exporting enums")
    teaches its constructs with the annotation: a plain `class_name` or `enum` shares none of them."""
    chunk_annotations = {annotation_head(g) for g in side.globals if ANNOTATION_SEP in g}
    taught = taught_constructs(rec, api) if heading_annotations(rec, api) <= chunk_annotations else set()
    weighed = {c: stats.construct_specificity(c) for c in side.constructs & taught}
    by_head: dict[str, str] = {}
    for c in sorted(weighed, key=lambda c: (-weighed[c], c)):
        by_head.setdefault(construct_head(c).removesuffix("s"), c)
    return [{"construct": c, "specificity": weighed[c]} for c in sorted(by_head.values())]


def shared_with(stats: DocsApiStats, resolution: Resolution, side: ChunkSide, rec: dict[str, Any]) -> Shared:
    """What the guide record shares with the chunk (`Shared`)."""
    api = record_api(rec)
    declared = side.declared | set(api["code_declares"])
    chunk_api = _chunk_api(resolution, side, declared)
    rec_classes = set(api["code_classes"]) | prose_classes(api)
    shared_code, shared_prose = _shared_api(stats, side, rec, chunk_api, declared, rec_classes)
    shared_names = {a.split(".", 1)[1] for a in shared_code + shared_prose}
    rec_api = set(api["code_uses"]) | {m for m in api["mentions"] if "." in m}
    fit = class_fit(stats, side, rec_classes, record_page(rec))
    foreign = max(((c, stats.class_specificity(c)) for c in fit["strangers"]), key=lambda x: (x[1], x[0]), default=None)
    return Shared(code=shared_code, prose=shared_prose, globals=sorted(side.globals & set(api["code_globals"])),
                  # A callback both override (`_unhandled_input`, `_draw`): the pattern the record shows; `_ready`
                  # weighs less (0.30).
                  callbacks=sorted(callback_key(f) for f in side.callbacks & set(api["code_callbacks"])),
                  classes=sorted(c for c in side.classes & rec_classes if not stats.generic(c)),
                  constructs=_shared_constructs(stats, side, rec, api),
                  clashes=member_clashes(stats.ref, chunk_api, rec_api, shared_names), fit=fit, foreign=foreign)


def shared_values(stats: DocsApiStats, s: Shared) -> dict[str, float]:
    """The features of what a guide shares with the chunk, each weighed by its specificity."""
    shared_api = shared_entries(stats, s)
    topic, strangers = s.fit["topic"], s.fit["strangers"]
    return {
        "api_code": round(sum(e["specificity"] for e in shared_api if e["from"] == "code"), RATIO_DIGITS),
        "api_prose": round(sum(e["specificity"] for e in shared_api if e["from"] == "prose"), RATIO_DIGITS),
        "shared_global": round(sum(stats.member_specificity(a) for a in s.globals), RATIO_DIGITS),
        "shared_callback": round(sum(stats.member_specificity(a) for a in s.callbacks), RATIO_DIGITS),
        "shared_class": round(sum(stats.class_specificity(c) for c in s.classes), RATIO_DIGITS),
        "shared_construct": round(sum(e["specificity"] for e in s.constructs), RATIO_DIGITS),
        "incompatible": round(len(strangers) / len(topic), RATIO_DIGITS) if topic and s.fit["family_mine"] else 0.0,
        # The most specific class the record is about that fits none of the chunk's (`XRCamera3D` in a room-scale
        # page for platformer code): a share of strangers counts a stray `Vector2` the same.
        "foreign_class": s.foreign[1] if s.foreign else 0.0,
    }


def shared_entries(stats: DocsApiStats, s: Shared) -> list[dict[str, Any]]:
    """The shared `Class.member` names as the trace shows them, those of code first."""
    return [shared_entry(stats, a, "code") for a in s.code] + [shared_entry(stats, a, "prose") for a in s.prose]


def shared_basis(stats: DocsApiStats, s: Shared, side: ChunkSide, rec: dict[str, Any]) -> dict[str, Any]:
    """What the features rest on, for the trace and the contradictions."""
    return {"shared_api": shared_entries(stats, s),
            "shared_globals": [{"api": a, "specificity": stats.member_specificity(a)} for a in s.globals],
            "shared_callbacks": [{"api": a, "specificity": stats.member_specificity(a)} for a in s.callbacks],
            "shared_classes": s.classes,
            "shared_constructs": s.constructs,
            "strangers": s.fit["strangers"][:BASIS_SHOWN], "clashes": s.clashes[:BASIS_SHOWN],
            "rivals": s.fit["rivals"][:BASIS_SHOWN], "worlds": s.fit["worlds"],
            "foreign_class": {"class": s.foreign[0], "specificity": s.foreign[1]} if s.foreign else None,
            "native_code": native_code(rec), "native_page": native_page(stats, rec),
            "foreign_section": foreign_section(stats, side, rec),
            # shared API the chunk writes under its Godot 3 name (migrated_api)
            "migrated": [{"api": a, "written": side.migrated[a]} for a in s.code + s.prose + s.globals
                         if a in side.migrated]}


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


def _elsewhere(ref: ClassReference, api: str, other: set[str]) -> bool:
    """Whether `other` (one side's resolved API) holds `api`'s member name on a class unrelated to `api`'s."""
    cls, member = api.split(".", 1)
    return any(o.split(".", 1)[1] == member and not ref.related(cls, o.split(".", 1)[0]) for o in other if "." in o)


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
