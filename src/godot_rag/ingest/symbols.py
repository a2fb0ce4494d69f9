"""The API vocabulary that the class reference defines, and API symbols found in a chunk.

Nothing here is a hand-kept Godot list: class names come from the titles of the
`classes/class_*` pages, members from their tables and member entries.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..gdscript.lexicon import IDENT
from .markdown import Page, strip_links

BOLD_MEMBER_RE = re.compile(r"\*\*(@?" + IDENT + r")\*\*")
TABLE_ROW_RE = re.compile(r"^\|(.*)\|\s*$")
CHAIN_RE = re.compile(r"(?<![A-Za-z0-9_.])([$@]?)(" + IDENT + r"(?:\." + IDENT + r")*)(\s*\()?")
GLOBAL_CLASSES = ("@GlobalScope", "@GDScript")
MEMBER_SECTIONS = {
    "Properties", "Methods", "Signals", "Enumerations", "Constants", "Annotations", "Theme Properties",
    "Property Descriptions", "Method Descriptions", "Constructor Descriptions", "Operator Descriptions",
    "Annotation Descriptions", "Theme Property Descriptions", "Constructors", "Operators",
}


def is_class_page(path: str) -> bool:
    return path.startswith("classes/class_")


@dataclass
class ApiVocabulary:
    classes: set[str] = field(default_factory=set)
    members: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    methods: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # member name -> classes that define it (reverse index)
    owners: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def add_member(self, cls: str, name: str, is_method: bool) -> None:
        self.members[cls].add(name)
        self.owners[name].add(cls)
        if is_method:
            self.methods[cls].add(name)

    def is_method(self, name: str) -> bool:
        return any(name in self.methods[c] for c in self.owners.get(name, ()))

    def is_global(self, name: str) -> bool:
        return any(name in self.members.get(g, ()) for g in GLOBAL_CLASSES)

    def known(self, name: str) -> bool:
        return name in self.classes or name in self.owners


def _table_cells(text: str) -> list[list[str]]:
    rows = []
    for line in text.split("\n"):
        m = TABLE_ROW_RE.match(line.strip())
        if m and not set(m.group(1)) <= set("|-: "):
            rows.append([c.strip() for c in m.group(1).split("|")])
    return rows


def _add_table_members(vocab: ApiVocabulary, cls: str, text: str) -> None:
    for row in _table_cells(text):
        if len(row) < 2:
            continue
        cell = row[1]
        name = re.match(r"(@?" + IDENT + r")", cell)
        if name and not cell.startswith("operator"):
            vocab.add_member(cls, name.group(1), "(" in cell)


def _add_entry_members(vocab: ApiVocabulary, cls: str, section: str, text: str) -> None:
    """Member entries: `Type **name**(args)` or `**name** = value`."""
    first = text.split("\n", 1)[0]
    for m in BOLD_MEMBER_RE.finditer(first):
        member = m.group(1)
        is_method = first[m.end():].lstrip().startswith("(")
        if member != cls:
            vocab.add_member(cls, member, is_method)
    if section in ("Enumerations", "Constants"):
        for m in BOLD_MEMBER_RE.finditer(text):
            if m.group(1).isupper() or "_" in m.group(1):
                vocab.add_member(cls, m.group(1), False)


def _add_class_members(vocab: ApiVocabulary, page: Page) -> None:
    section = ""
    for block in page.blocks:
        if block.kind == "heading":
            section = block.text if block.level == 2 else section
            continue
        if block.kind != "text" or section not in MEMBER_SECTIONS:
            continue
        text, _ = strip_links(block.text)
        if section in ("Properties", "Methods", "Theme Properties", "Constructors", "Operators"):
            _add_table_members(vocab, page.title, text)
        else:
            _add_entry_members(vocab, page.title, section, text)


def build_vocabulary(pages: list[Page]) -> ApiVocabulary:
    vocab = ApiVocabulary()
    class_pages = [page for page in pages if is_class_page(page.path)]
    for page in class_pages:
        vocab.classes.add(page.title)
    for page in class_pages:
        _add_class_members(vocab, page)
    return vocab


def extract_api_symbols(texts: list[str], vocab: ApiVocabulary) -> list[str]:
    """API symbols used in code or inline code, checked against the class reference.

    `Class`, `Class.member` (member defined on that class), `obj.method` where the
    method is defined somewhere in the reference (`position.clamp`), bare calls of
    known methods, and known annotations.
    """
    found: dict[str, None] = {}
    for text in texts:
        for m in CHAIN_RE.finditer(text):
            sigil, chain, call = m.group(1), m.group(2), bool(m.group(3))
            parts = chain.split(".")
            head = parts[0]
            if sigil == "@":
                if any("@" + head in vocab.members.get(g, ()) for g in GLOBAL_CLASSES):
                    found["@" + head] = None
                continue
            if head in vocab.classes:
                found[head] = None
                if len(parts) >= 2 and parts[1] in vocab.members.get(head, ()):
                    found[f"{head}.{parts[1]}"] = None
                continue
            if len(parts) >= 2:
                last, prev = parts[-1], parts[-2]
                if call and vocab.is_method(last):
                    found[f"{prev}.{last}"] = None
                continue
            if call and not sigil and (vocab.is_global(head) or vocab.is_method(head)):
                found[head] = None
    return list(found)
