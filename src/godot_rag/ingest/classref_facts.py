"""The class reference's facts beyond names and types, read from a class page: what it marks **Deprecated** or
**Experimental** (the class and each member: method, property, signal, constant, enum, theme item, constructor,
annotation), with the reference's note and the names the note links to, and each method's, signal's and
constructor's signature (parameters with their types and defaults, vararg, qualifiers such as `const`).

Stored in the class reference's entries (`gdscript/classref.py` reads them):
- a class's or member's `deprecated` / `experimental`: `{"note": str, "see": [linked names]}`;
- a method's, signal's or constructor's `signatures`: `[{"params": [[name, type, default or None]], "vararg": bool,
  "qualifiers": [str]}]`, one per overload (constructors have several);
- `path_properties`: the properties named by a path (`permissions/get_tasks`), which only their marks need.
"""
from __future__ import annotations

import re
from typing import Any

from .markdown import Block, Page, strip_links_with_text

MARKS = ("deprecated", "experimental")
MARK_RE = re.compile(r"^\*\*(Deprecated|Experimental):\*\*\s*(.*)", re.S)
# A member entry's first line, as the page writes it after the links' text is kept: `RID **get_navigation_map**(`.
# A property named by a path (`permissions/get_tasks`, a project setting) is read with `get("a/b")`, not as code.
ENTRY_NAME_RE = re.compile(r"^(?:[^*\n]*?\s)?\*\*(@?[A-Za-z_][A-Za-z0-9_/.]*)\*\*")
PATH_PROPERTIES = "path_properties"  # a class entry's {path: {"kind": "property", marks}}: no code member
# In Enumerations and Constants no rule separates the entries: each is `Type **NAME** = value` or `enum **Name**:`.
VALUE_ENTRY_RE = re.compile(r"^(?:[\w.@\[\]]+ )?\*\*(@?[A-Za-z_][A-Za-z0-9_]*)\*\* = ")
ENUM_ENTRY_RE = re.compile(r"^(?:enum|flags) \*\*([A-Za-z_][A-Za-z0-9_]*)\*\*:")
# Description sections whose entries a rule separates, and the member kind each documents.
RULED_SECTIONS = {"Property Descriptions": "property", "Method Descriptions": "method", "Signals": "signal",
                  "Theme Property Descriptions": "theme_property", "Constructor Descriptions": "constructor",
                  "Annotations": "annotation"}
VALUE_SECTIONS = {"Enumerations", "Constants"}
SIGNATURE_TABLES = {"Methods": "method", "Constructors": "constructor"}
# `name(params) qualifiers`, as a Methods or Constructors table cell and a signal's entry write it.
SIGNATURE_RE = re.compile(r"^(?P<name>@?[A-Za-z_][A-Za-z0-9_]*)\((?P<params>.*)\)(?P<quals>(?:\s+[a-z]+)*)\s*$")
PARAM_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<type>[^=]+?)\s*(?:=\s*(?P<default>.+))?$")
VARARG = "..."
OPENING, CLOSING = "([{", ")]}"


def _plain(text: str) -> str:
    return strip_links_with_text(text)[0].replace("\\", "")


def split_params(text: str) -> list[str]:
    """The parameters of a signature's parentheses, cut at the commas outside brackets and quotes."""
    out: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in OPENING:
            depth += 1
        elif ch in CLOSING:
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def parse_signature(text: str) -> tuple[str, dict[str, Any]] | None:
    """(name, signature) of `name(a: int, b: float = 1.0, ...) const`, or None when the text is no signature."""
    m = SIGNATURE_RE.match(text.replace("**", "").strip())
    if m is None:
        return None
    params: list[list[str | None]] = []
    vararg = False
    for part in split_params(m.group("params")):
        if part == VARARG:
            vararg = True
        elif p := PARAM_RE.match(part):
            params.append([p.group("name"), p.group("type"), p.group("default")])
        else:
            return None
    quals = m.group("quals").split()
    return m.group("name"), {"params": params, "vararg": vararg or "vararg" in quals,
                             "qualifiers": [q for q in quals if q != "vararg"]}


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
        if found is None:
            continue
        name, signature = found
        member = members.get(name)
        if member is not None and member["kind"] == kind:
            member.setdefault("signatures", []).append(signature)


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
        found = parse_signature(_plain(text.split("\n", 1)[0]))
        member = self.info["members"].get(found[0]) if found else None
        if found and member is not None and member["kind"] == "signal":
            member["signatures"] = [found[1]]

    def _accessor_signatures(self, text: str) -> None:
        """A property's setter and getter (`-   void **set_texture**(value: Texture2D)`), callable like methods."""
        for line in _plain(text).split("\n"):
            found = parse_signature(line.strip().lstrip("-").strip().split(" ", 1)[-1])
            member = self.info["members"].get(found[0]) if found else None
            if found and member is not None and "accessor_of" in member:
                member.setdefault("signatures", [found[1]])

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
