"""What a docs record's own code and prose use, resolved like a query chunk: done once at ingest, so the
validator compares the chunk's resolved API with the record's without parsing anything per query.

Each GDScript block of a record (`records.record_gdscript`) goes through the same tree-sitter facts
(`gdscript.py`) and the same resolver (`retrieve/resolve.py`) as the chunk; a block without `extends` resolves
against the page's latest one. Stored in the record's `metadata` (the schema is unchanged):
- `code_uses`: the `Class.member` its code uses, resolved through the class reference (not where only an `is`
  test types the receiver: the guide model leaves those out on both sides);
- `code_classes`: the classes its code uses (resolved owners, types written in the code, constructors);
- `code_callbacks`: the functions it defines that override a documented method (`_ready`, `_physics_process`);
- `code_globals`: the global functions and annotations its code uses (`@GlobalScope.randf`, `@GDScript.@rpc`);
- `code_declares`: the names its code declares itself (functions, variables, signals, classes, parameters):
  the author's choices, never evidence;
- `code_constructs`: the GDScript constructs its code holds, as the grammar names them (`enum_definition`, `lambda`);
- `mentions`: classes and `Class.member` its prose names: inline code and links to class pages.
"""
from __future__ import annotations

import re

from ..records import DERIVED_METADATA as API_FIELDS
from ..records import record_gdscript
from .classref import ClassReference
from .facts import GDScriptFacts, parse_chunk
from .lexicon import IDENT
from .resolution import Resolution

INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")
MENTION_RE = re.compile(rf"(?<![A-Za-z0-9_.])({IDENT})(?:\.({IDENT}))?")
CLASS_PAGE_RE = re.compile(r"(?:^|/)classes(?:__|/)class_([a-z0-9_]+?)(?:__[0-9a-f]{8})?(?:\.md|\.html)?(?:#.*)?$")
EXTENDS_RE = re.compile(rf"^extends\s+({IDENT})", re.M)


def class_of_link(target: str, page_class: dict[str, str]) -> str | None:
    """The class a link points at (`classes__class_timer__1a2b3c4d.md`, `../classes/class_timer.html`)."""
    m = CLASS_PAGE_RE.search(target)
    return page_class.get(f"classes/class_{m.group(1)}") if m else None


def code_api(code: str, ref: ClassReference, extends_hint: str | None = None) -> dict[str, list[str]]:
    """The resolved API of one piece of GDScript: uses, classes, callbacks and declared names. `extends_hint`:
    the class an earlier block of the same page extends (a guide writes `extends` once, then shows functions)."""
    from .resolve import resolve_uses  # the chunk's resolver (retrieve/ imports nothing from ingest/)

    if not code.strip() or not ref:
        return {"code_uses": [], "code_classes": [], "code_callbacks": [], "code_declares": [], "code_globals": [],
                "code_constructs": []}
    facts = parse_chunk(code)
    res = resolve_uses(facts, ref, extends_hint)
    classes = set(res.classes)
    # Types the code writes itself: `extends`, annotations and constructions (`var t: Timer`, `Timer.new()`).
    written = [facts.extends, *facts.local_types.values()]
    classes.update(t for t in written if t and ref.has_class(t))
    classes.update(i for i in facts.identifiers if ref.has_class(i) and i not in facts.declared)
    own = res.own_class or "Node"
    callbacks = sorted(f for f in facts.functions if f.startswith("_") and (ref.member(own, f) or ref.named_owners.get(f)))
    declares = sorted((facts.declared | facts.functions) - set(callbacks))
    # A use an `is` test narrows is left out, as on the chunk's side of the guide features (docs_features.guide_features).
    uses = {u.api for u in res.uses if u.via != "narrowed"}
    return {"code_uses": sorted(uses), "code_classes": sorted(classes), "code_callbacks": callbacks,
            "code_declares": declares, "code_globals": global_uses(facts, res, ref), "code_constructs": sorted(facts.constructs)}


def global_uses(facts: GDScriptFacts, resolution: Resolution, ref: ClassReference) -> list[str]:
    """The global functions and annotations the code uses, as the class reference names them
    (`@GlobalScope.randf`, `@GDScript.@rpc`): API too, though no class owns it."""
    out = set()
    for name in resolution.globals:
        if (found := ref.global_member(name)) is not None:
            out.add(f"{found[0]}.{name}")
    for name, _ in facts.annotations:
        if (found := ref.global_member("@" + name)) is not None:
            out.add(f"{found[0]}.@{name}")
    return sorted(out)


def prose_mentions(content: str, links: list, ref: ClassReference, page_class: dict[str, str],
                   linked_members: bool = True) -> list[str]:
    """Classes and members the prose names: linked class pages, and inline code that the class reference
    documents (`Timer`, `Input.is_action_pressed()`, `Timer.start`). `links`: (text, target) pairs (or bare
    targets); a link to a class page whose text is one of its members names the member
    (`[ResourceLoader.load_threaded_request](classes__class_resourceloader__d2a76b2f.md)`, `[start](...class_timer...)`),
    unless `linked_members` is off."""
    out: dict[str, None] = {}
    for link in links:
        text, target = (link[0], link[1]) if isinstance(link, (list, tuple)) else ("", link)
        if (cls := class_of_link(target, page_class)) is None:
            continue
        out[cls] = None
        if linked_members and (member := linked_member(text, cls, ref)) is not None:
            out[member] = None
    for span in INLINE_CODE_RE.findall(content):
        for m in MENTION_RE.finditer(span):
            cls, member = m.group(1), m.group(2)
            if not ref.has_class(cls):
                continue
            out[cls] = None
            if member and (found := ref.member(cls, member)) is not None:
                out[f"{found[0]}.{member}"] = None
    return list(out)


def linked_member(text: str, cls: str, ref: ClassReference) -> str | None:
    """`Owner.member` a link to `cls`'s page names by its text (`Cls.member`, `member` or `member()`), or None."""
    m = MENTION_RE.fullmatch(text.strip().removesuffix("()"))
    if m is None:
        return None
    head, member = m.group(1), m.group(2)
    if member is None:
        if head == cls:
            return None  # the class itself
        head, member = cls, head  # a bare member name
    if head != cls or (found := ref.member(cls, member)) is None:
        return None
    return f"{found[0]}.{member}"


def add_record_api(records: list[dict], class_reference: dict) -> None:
    """Fills each docs record's `metadata` API fields in place. `metadata.links` (the link targets the chunker
    kept) becomes part of `mentions`."""
    ref = ClassReference(class_reference)
    page_class = {info["page"]: cls for cls, info in ref.classes.items() if info.get("page")}
    extends: dict[str, str] = {}  # page -> the class its latest `extends` so far names (records come in page order)
    for rec in records:
        meta = rec["metadata"]
        links = meta.pop("links", [])
        page = meta.get("page_path", "")
        merged: dict[str, set[str]] = {f: set() for f in API_FIELDS if f != "mentions"}
        for code, labelled in record_gdscript(rec):
            if not labelled and parse_chunk(code).parse_errors:
                continue  # an unlabelled block counts only where it parses as GDScript (not a log or a shell line)
            for f, values in code_api(code, ref, extends.get(page)).items():
                merged[f].update(values)
            if (m := EXTENDS_RE.search(code)) and ref.has_class(m.group(1)):
                extends[page] = m.group(1)
        meta.update({f: sorted(v) for f, v in merged.items()})
        # The class reference's pages link other classes' members in every description, as cross-references: counted
        # as mentions, they would make members look common (the specificity the validator weighs), so a class page's
        # links name only classes.
        meta["mentions"] = prose_mentions(rec.get("content") or "", links, ref, page_class,
                                          linked_members=not page.startswith("classes/"))


def record_api(rec: dict) -> dict[str, list[str]]:
    """A record's stored API fields (empty lists for a record ingested before they existed)."""
    meta = rec.get("metadata") or {}
    return {f: meta.get(f) or [] for f in API_FIELDS}


