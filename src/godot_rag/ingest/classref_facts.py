"""The class reference's facts beyond names and types, read from a class page: what it marks **Deprecated** or
**Experimental** (the class and each member: method, property, signal, constant, enum, theme item, constructor,
annotation), with the reference's note and the names the note links to, and each method's, signal's and
constructor's signature (parameters with their types and defaults, vararg, qualifiers such as `const`).

Stored in the class reference's entries (`gdscript/classref.py` reads them):
- a class's or member's `deprecated` / `experimental`: `{"note": str, "see": [linked names]}`;
- a method's, signal's, setter's or constructor's `signatures`: each as the page writes it
  (`get_used_cells_by_id(layer: int, source_id: int = -1) const`, read by `gdscript/signatures.py`), one per
  overload (constructors have several);
- `path_properties`: the properties named by a path (`permissions/get_tasks`), which only their marks need.
"""
from __future__ import annotations

import re
from typing import Any

from ..gdscript.reference_facts import PATH_PROPERTIES
from ..gdscript.signatures import parse_signature
from .markdown import Block, Page, strip_links_with_text

MARKS = ("deprecated", "experimental")
MARK_RE = re.compile(r"^\*\*(Deprecated|Experimental):\*\*\s*(.*)", re.S)
# A member entry's first line, as the page writes it after the links' text is kept: `RID **get_navigation_map**(`.
# A property named by a path (`permissions/get_tasks`, a project setting) is read with `get("a/b")`, not as code.
ENTRY_NAME_RE = re.compile(r"^(?:[^*\n]*?\s)?\*\*(@?[A-Za-z_][A-Za-z0-9_/.]*)\*\*")
# In Enumerations and Constants no rule separates the entries: each is `Type **NAME** = value` or `enum **Name**:`.
VALUE_ENTRY_RE = re.compile(r"^(?:[\w.@\[\]]+ )?\*\*(@?[A-Za-z_][A-Za-z0-9_]*)\*\* = ")
ENUM_ENTRY_RE = re.compile(r"^(?:enum|flags) \*\*([A-Za-z_][A-Za-z0-9_]*)\*\*:")
# Description sections whose entries a rule separates, and the member kind each documents.
RULED_SECTIONS = {"Property Descriptions": "property", "Method Descriptions": "method", "Signals": "signal",
                  "Theme Property Descriptions": "theme_property", "Constructor Descriptions": "constructor",
                  "Annotations": "annotation"}
VALUE_SECTIONS = {"Enumerations", "Constants"}
SIGNATURE_TABLES = {"Methods": "method", "Constructors": "constructor"}


def _plain(text: str) -> str:
    return strip_links_with_text(text)[0].replace("\\", "")


def _mark(text: str) -> tuple[str, dict[str, Any]] | None:
    """(`deprecated` or `experimental`, {note, see}) of a `**Deprecated:** ...` paragraph, or None."""
    m = MARK_RE.match(text.strip())
    if m is None:
        return None
    note, links = strip_links_with_text(m.group(2))
    return m.group(1).lower(), {"note": " ".join(note.replace("\\", "").split()),
                                "see": list(dict.fromkeys(t.replace("\\", "") for t, _ in links))}


def _table_signatures(text: str, kind: str, members: dict[str, dict[str, Any]]) -> None:
    """Each Methods or Constructors table row's signature, added to its member (a constructor's overloads in order)."""
    for line in _plain(text).split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = parse_signature(cells[1]) if len(cells) >= 2 else None
        member = members.get(found[0]) if found else None
        if member is not None and member["kind"] == kind:
            member.setdefault("signatures", []).append(cells[1])


class _EntryWalk:
    """The entry a description section has open, so that a mark paragraph after it is its mark."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.section = ""
        self.entry: str | None = None  # the member whose entry is open; None: the class's own header
        self.fresh = True  # a rule or heading was just passed: the next paragraph opens an entry

    def heading(self, block: Block) -> None:
        if block.level == 2:
            self.section, self.entry = block.text, None
        self.fresh = True

    def text(self, block: Block) -> None:
        mark = _mark(block.text)
        if mark is not None:
            self._add_mark(*mark)
        elif self.section in VALUE_SECTIONS:
            first = _plain(block.text.split("\n", 1)[0])
            m = ENUM_ENTRY_RE.match(first) or VALUE_ENTRY_RE.match(first)
            self.entry = m.group(1) if m else self.entry
        elif self.section == "Property Descriptions" and block.text.lstrip().startswith("-"):
            self._accessor_signatures(block.text)
        elif self.section in RULED_SECTIONS and self.fresh:
            m = ENTRY_NAME_RE.match(_plain(block.text.split("\n", 1)[0]))
            self.entry = m.group(1) if m else None
            if m and self.section == "Signals":
                self._signal_signature(block.text)
        self.fresh = False

    def _signal_signature(self, text: str) -> None:
        first = _plain(text.split("\n", 1)[0]).replace("**", "").strip()
        found = parse_signature(first)
        member = self.info["members"].get(found[0]) if found else None
        if member is not None and member["kind"] == "signal":
            member["signatures"] = [first]

    def _accessor_signatures(self, text: str) -> None:
        """A property's setter and getter (`-   void **set_texture**(value: Texture2D)`), callable like methods."""
        for line in _plain(text).split("\n"):
            signature = line.strip().lstrip("-").strip().split(" ", 1)[-1].replace("**", "")
            found = parse_signature(signature)
            member = self.info["members"].get(found[0]) if found else None
            if member is not None and "accessor_of" in member:
                member.setdefault("signatures", [signature])

    def _add_mark(self, mark: str, value: dict[str, Any]) -> None:
        if not self.section:
            self.info.setdefault(mark, value)  # the class's own mark, above its Description
            return
        member = self.info["members"].get(self.entry or "")
        kind = RULED_SECTIONS.get(self.section)
        if member is None and self.entry and "/" in self.entry and kind == "property":
            member = self.info.setdefault(PATH_PROPERTIES, {}).setdefault(self.entry, {"kind": kind})
        # A theme item named like a property (`Button`'s `pressed`) is not that property: only a member of the
        # section's kind takes the mark.
        if member is not None and (kind is None or member["kind"] == kind):
            member.setdefault(mark, value)


def add_class_facts(page: Page, info: dict[str, Any]) -> None:
    """The marks and signatures of one class page, added to its class-reference entry `info`."""
    walk = _EntryWalk(info)
    for block in page.blocks:
        if block.kind == "heading":
            walk.heading(block)
        elif block.kind == "rule":
            walk.fresh = True
        elif block.kind == "text":
            if walk.section in SIGNATURE_TABLES:
                _table_signatures(block.text, SIGNATURE_TABLES[walk.section], info["members"])
            walk.text(block)
