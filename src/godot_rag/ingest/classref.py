"""Build the class reference (see `godot_rag.gdscript.classref`) from the `classes/class_*` pages:
inheritance from the **Inherits:** line, members and types from the Properties, Methods
and other tables, from the member entries of the Signals, Enumerations, Constants
and Annotations sections, and each property's setter and getter from the Property
Descriptions (`set_global_position()` is Godot 4 API too, callable like any method). The marks and signatures
are `classref_facts.py`'s."""
from __future__ import annotations

import re
from typing import Any

from ..gdscript.classref import ClassReference
from .classref_facts import add_class_facts
from .markdown import Page, strip_links
from .symbols import is_class_page

IDENT = r"@?[A-Za-z_][A-Za-z0-9_]*"
INHERITS_RE = re.compile(r"\*\*Inherits:\*\*\s*([A-Za-z_@][A-Za-z0-9_]*)")
TABLE_ROW_RE = re.compile(r"^\|(.*)\|\s*$")
ENTRY_RE = re.compile(r"^(?:(?P<type>[^*\n]*?)\s+)?\*\*(?P<name>" + IDENT + r")\*\*\s*(?P<call>\()?")
BOLD_RE = re.compile(r"\*\*(" + IDENT + r")\*\*")
TABLE_KINDS = {"Properties": "property", "Methods": "method", "Theme Properties": "theme_property",
               "Constructors": "constructor"}
ENTRY_KINDS = {"Signals": "signal", "Enumerations": "enum", "Constants": "constant", "Annotations": "annotation"}
# `-   void **set_global_position**(value: Vector2)` under a property's entry.
ACCESSOR_RE = re.compile(r"^-\s+(?P<type>[^*\n]*?)\s*\*\*(?P<name>" + IDENT + r")\*\*\(")


def _clean(text: str) -> str:
    return strip_links(text)[0].replace("\\", "")


def _type(cell: str) -> str:
    t = _clean(cell).strip()
    t = t.split("[", 1)[0].strip()
    return t.split()[-1] if t else ""


def _table_members(text: str, section: str, members: dict[str, dict[str, Any]]) -> None:
    """The members listed in a Properties, Methods, ... table."""
    for line in text.split("\n"):
        row = TABLE_ROW_RE.match(line.strip())
        if not row or set(row.group(1)) <= set("|-: "):
            continue
        cells = [c.strip() for c in row.group(1).split("|")]
        if len(cells) < 2:
            continue
        name = re.match(IDENT, cells[1])
        if not name or cells[1].startswith("operator"):
            continue
        kind = TABLE_KINDS[section]
        if kind == "property" and "(" in cells[1]:
            kind = "method"
        members.setdefault(name.group(0), {"kind": kind, "type": _type(cells[0])})


def _entry_member(text: str, section: str, cls: str, members: dict[str, dict[str, Any]]) -> None:
    """The member a Signals, Enumerations, Constants or Annotations entry opens."""
    first = text.split("\n", 1)[0].strip()
    if section == "Enumerations" and first.startswith("enum "):
        m = BOLD_RE.search(first)
        if m:
            members.setdefault(m.group(1), {"kind": "enum", "type": m.group(1)})
        return
    m = ENTRY_RE.match(first)
    if m and m.group("name") != cls:
        kind = "constant" if section == "Enumerations" else ENTRY_KINDS[section]
        members.setdefault(m.group("name"), {"kind": kind, "type": _type(m.group("type") or "")})


def _accessor_members(text: str, members: dict[str, dict[str, Any]], prop: str | None) -> str | None:
    """The setters and getters under the Property Descriptions' entries; returns the property whose entry is open."""
    for line in text.split("\n"):
        if acc := ACCESSOR_RE.match(line.strip()):
            if prop:
                members.setdefault(acc.group("name"), {"kind": "method", "type": _type(acc.group("type")),
                                                       "accessor_of": prop})
        elif (entry := ENTRY_RE.match(line.strip())) and not entry.group("call"):
            prop = entry.group("name") if entry.group("name") in members else None
    return prop


def _class_info(page: Page, cls: str) -> dict[str, Any]:
    members: dict[str, dict[str, Any]] = {}
    info: dict[str, Any] = {"inherits": None, "page": page.path, "members": members}
    section, prop = "", None
    for block in page.blocks:
        if block.kind == "heading":
            section = block.text if block.level == 2 else section
            continue
        if block.kind != "text":
            continue
        text = _clean(block.text)
        if info["inherits"] is None and not section:
            m = INHERITS_RE.search(text)
            if m:
                info["inherits"] = m.group(1)
        if section in TABLE_KINDS:
            _table_members(text, section, members)
        elif section in ENTRY_KINDS:
            _entry_member(text, section, cls, members)
        elif section == "Property Descriptions":
            prop = _accessor_members(text, members, prop)
    add_class_facts(page, info)  # the Deprecated and Experimental marks, and the signatures
    return info


def build_class_reference(pages: list[Page]) -> dict[str, Any]:
    classes: dict[str, dict[str, Any]] = {}
    for page in pages:
        if is_class_page(page.path):
            cls = page.title.replace("\\", "")
            classes[cls] = _class_info(page, cls)
    _drop_shadowing_accessors(classes)
    return {"classes": classes}


def _drop_shadowing_accessors(classes: dict[str, dict[str, Any]]) -> None:
    """A subclass's property setter or getter that an ancestor documents as a method is that method
    (`InputEventKey.is_pressed` is `InputEvent.is_pressed`): the ancestor's entry answers for it."""
    ref = ClassReference({"classes": classes})
    for cls, info in classes.items():
        ancestors = [classes[a]["members"] for a in ref.lineage(cls)[1:]]
        for name in [n for n, m in info["members"].items() if "accessor_of" in m]:
            if any(name in a and "accessor_of" not in a[name] for a in ancestors):
                del info["members"][name]
