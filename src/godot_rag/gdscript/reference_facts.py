"""What the class reference says of one class or member beyond its name and type: its Deprecated or Experimental
mark with the reference's note (`Mark`), its signatures (`signatures.Signature`: parameters, defaults, vararg), and where its
entry is (`ReferenceEntry`: the page, the HTML anchor, the docs record that holds it). Read from the entries
`ingest/classref_facts.py` writes; an entry built before those facts existed simply has none."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .classref import ClassReference
from .signatures import Signature, parse_signature

MARK_KINDS = ("deprecated", "experimental")
# A class's or member's key for the index of the docs record on its page that holds its entry (the record's id is
# `page#index`, as ingest's chunker numbers a page's records).
ENTRY_RECORD = "record"
DOCS_URL = "https://docs.godotengine.org/en/latest/"
# The reference's anchors name a member by its kind (`#class-tilemap-method-force-update`); a theme item's anchor
# names its data type, which the class reference does not keep, so its anchor is the theme section's.
ANCHOR_KINDS = {"method": "method", "property": "property", "signal": "signal", "constant": "constant",
                "enum": "enum", "constructor": "constructor", "annotation": "annotation"}
THEME_SECTION_ANCHOR = "theme-properties"
PATH_PROPERTIES = "path_properties"  # a class's properties named by a path (`permissions/get_tasks`): no code members


@dataclass(frozen=True)
class Mark:
    """A Deprecated or Experimental mark: the reference's note and the names it links to (`TileMapLayer`)."""
    kind: str  # deprecated | experimental
    note: str
    see: tuple[str, ...]


@dataclass(frozen=True)
class ReferenceEntry:
    """Where the reference documents a class or member: its page, the anchor on it, and the docs record."""
    page: str  # `classes/class_tilemap`
    anchor: str  # `class-tilemap-method-force-update`; '' for the class itself
    record_id: str | None  # the `docs_chunks` id that holds the entry, where ingest linked it

    @property
    def url(self) -> str:
        return f"{DOCS_URL}{self.page}.html" + (f"#{self.anchor}" if self.anchor else "")


def marks_of(entry: Mapping[str, Any] | None) -> list[Mark]:
    """The marks of a class's or member's entry, Deprecated first."""
    out = []
    for kind in MARK_KINDS:
        value = (entry or {}).get(kind)
        if isinstance(value, Mapping):
            out.append(Mark(kind, str(value.get("note") or ""), tuple(value.get("see") or ())))
    return out


def signatures_of(entry: Mapping[str, Any] | None) -> list[Signature]:
    """A method's, signal's or constructor's signatures (a constructor has one per overload); [] where unknown."""
    parsed = [parse_signature(str(text)) for text in (entry or {}).get("signatures") or ()]
    return [found[1] for found in parsed if found is not None]


def accepted_counts(signatures: list[Signature]) -> str:
    """The argument counts the signatures accept, in words: `1`, `1 to 3`, `2 or more`, `0, 1 or 2`."""
    spans = sorted({(s.min_args, s.max_args) for s in signatures}, key=lambda s: (s[0], s[1] is None, s[1] or 0))
    words = [f"{lo} or more" if hi is None else str(lo) if lo == hi else f"{lo} to {hi}" for lo, hi in spans]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + f" or {words[-1]}"


def _anchor_name(text: str) -> str:
    return text.lower().replace("_", "-").replace("@", "").replace("/", "-")


def reference_entry(ref: ClassReference, cls: str, member: str | None = None) -> ReferenceEntry:
    """The entry of `cls` (or of its `member`, documented on `cls` itself) in the reference."""
    info = ref.classes.get(cls) or {}
    page = str(info.get("page") or f"classes/class_{cls.lower()}")
    if member is None:
        return ReferenceEntry(page, "", record_id(page, info.get(ENTRY_RECORD)))
    members = info.get("members") or {}
    entry = members.get(member) or (info.get(PATH_PROPERTIES) or {}).get(member) or {}
    if entry.get("accessor_of") in members:  # a setter or getter is documented in its property's entry
        member, entry = str(entry["accessor_of"]), members[entry["accessor_of"]]
    kind = str(entry.get("kind") or "")
    anchor = (f"class-{_anchor_name(cls)}-{ANCHOR_KINDS[kind]}-{_anchor_name(member)}" if kind in ANCHOR_KINDS
              else THEME_SECTION_ANCHOR)
    index = entry.get(ENTRY_RECORD)
    return ReferenceEntry(page, anchor, record_id(page, info.get(ENTRY_RECORD) if index is None else index))


def record_id(page: str, index: object) -> str | None:
    """The `docs_chunks` id of a page's record number `index` (`classes/class_tilemap#012`); None without one."""
    return f"{page}#{index:03d}" if isinstance(index, int) else None
