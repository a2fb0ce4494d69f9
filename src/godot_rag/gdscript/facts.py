"""GDScript facts about one chunk, parsed once with tree-sitter-gdscript.

The one home for what a chunk *is*: which characters are code, comment or string;
the access chains (`Input.is_action_pressed(...)`, `get_tree().quit()`,
`$AnimatedSprite2D.play()`) with their receivers; bare calls; the names the chunk
declares; the types it gives its locals; annotations; `extends`; and the syntax
that only one Godot version accepts. The validator, the tokenizer's local-name
weighting, the clone match and the resolve stage all read these facts.

Text that tree-sitter cannot parse cleanly falls back to regular expressions;
`parser` says which was used, so the trace can show it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TypedDict

from .elements import Binding, Call, Chain, Declaration, Marker, Name, ScriptFields
from .lexicon import CHAIN_RE, DIGITS_RE, FILE_NAME_RE, IDENT, IDENT_RE, bounded, shape
from .regex_facts import regex_fields
from .text_lines import TextLines, blank_regions
from .tree_uses import tree_sitter_fields


class NameOccurrence(TypedDict):
    """Where a name occurs in the chunk, and in which region (`GDScriptFacts.region`)."""
    start: int
    end: int
    line: int
    col: int
    region: str


@dataclass
class GDScriptFacts:
    text: str
    parser: str  # "tree-sitter" | "regex-fallback"
    parse_errors: list[int] = field(default_factory=list)  # lines with syntax errors
    comments: list[tuple[int, int]] = field(default_factory=list)
    strings: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, value)
    node_paths: list[tuple[int, int]] = field(default_factory=list)  # `$Player/Sprite`: scene node names
    chains: list[Chain] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    names: list[Name] = field(default_factory=list)  # bare identifier references (tree-sitter only)
    declared: set[str] = field(default_factory=set)  # var, const, params, for, func, class, signal, enum names
    params: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    local_types: dict[str, str] = field(default_factory=dict)  # name -> declared or constructed type
    literal_types: dict[str, str] = field(default_factory=dict)  # `var a = []` -> Array: the value's type, not a declared one
    bindings: list[Binding] = field(default_factory=list)  # `binding_at`: which one a use of a name sees
    assigned: list[tuple[str, int]] = field(default_factory=list)  # `x = ...`: a bare name given a new value, and where
    annotations: list[tuple[str, int]] = field(default_factory=list)
    extends: str | None = None
    class_name: str | None = None
    markers: list[Marker] = field(default_factory=list)
    declarations: list[Declaration] = field(default_factory=list)  # each declared name with kind, line and scope
    extends_path: str | None = None  # `extends "res://base.gd"`: the script's parent given by path
    # The grammar's named node types the code holds (`enum_definition`, `lambda`, `region_start`): the language
    # constructs it uses, named by tree-sitter-gdscript, not by a hand list (none for the regex fallback). A keyword
    # node is named with what it modifies (`function_definition/static_keyword`, `construct_name`).
    constructs: set[str] = field(default_factory=set)
    # `if x is T:` (or `elif`, or an `and` chain that starts with the test): (x, T, start, end) of the text where x
    # is a T, from the test to the end of the clause's body (tree-sitter only)
    narrowed: list[tuple[str, str, int, int]] = field(default_factory=list)

    def narrowed_type(self, name: str, offset: int) -> str | None:
        """The class an `is` test makes `name` at `offset` (the innermost test), or None."""
        found = [(s, t) for n, t, s, e in self.narrowed if n == name and s <= offset < e]
        return max(found)[1] if found else None

    def binding_at(self, name: str, offset: int) -> Binding | None:
        """The binding a use of `name` at `offset` sees: the latest one before it whose scope holds it (a parameter
        or a `for` variable shadows a `var` outside them); None when there is none, or when the name is given a
        new value (`x = ...`) between that binding and the use, which leaves its type to the code in between."""
        seen = [b for b in self.bindings if b.name == name and b.at < offset and b.scope_start <= offset < b.scope_end]
        if not seen:
            return None
        found = max(seen, key=lambda b: b.at)
        return None if any(n == name and found.at < at < offset for n, at in self.assigned) else found

    def __post_init__(self) -> None:
        # Code only (node paths such as `$AnimatedSprite2D` stay: they name nodes, and evidence may match them;
        # `region()` tells them apart where the version decision needs it): comments and string literals blanked,
        # offsets unchanged.
        self.no_comments, self.code = blank_regions(self.text, self.comments, self.strings)
        self._lines = TextLines(self.text)
        self.identifiers = set(IDENT_RE.findall(self.code))
        self.all_identifiers = set(IDENT_RE.findall(self.text))
        self.string_values = {v for _, _, v in self.strings if v}
        self.shapes: dict[str, set[str]] = {}
        for ident in self.identifiers:
            if DIGITS_RE.search(ident):
                self.shapes.setdefault(shape(ident), set()).add(ident)
        first: dict[str, int] = {}
        for m in IDENT_RE.finditer(self.code):
            first.setdefault(m.group(0), self.line_of_offset(m.start()))
        self._first_line = first
        self.csharp = _looks_csharp(self.text)

    # -- positions ------------------------------------------------------------------
    def line_of_offset(self, offset: int) -> int:
        return self._lines.line_of_offset(offset)

    def col_of_offset(self, offset: int) -> int:
        return self._lines.col_of_offset(offset)

    def line_of(self, ident: str) -> int | None:
        """First code line that uses `ident`."""
        return self._first_line.get(ident)

    def line_text(self, line: int) -> str:
        return self._lines.line_text(line)

    def region(self, offset: int) -> str:
        """`code`, `comment`, `string` or `node_path` (`$Sprite`) for one character offset."""
        for s, e in self.comments:
            if s <= offset < e:
                return "comment"
        for s, e, _ in self.strings:
            if s <= offset < e:
                return "string"
        for s, e in self.node_paths:
            if s <= offset < e:
                return "node_path"
        return "code"

    def call_argument(self, offset: int) -> tuple[str, int] | None:
        """(callee, argument index) of the innermost call whose parentheses hold `offset`: `("is_class", 0)`
        for the string in `n.is_class("Spatial")`; None outside call parentheses (a list, a dict, top level)."""
        depth, commas, code = 0, 0, self.code  # strings and comments blanked: their brackets do not count
        for i in range(offset - 1, max(-1, offset - 2000), -1):
            ch = code[i]
            if ch in ")]}":
                depth += 1
            elif ch in "([{":
                if depth == 0:
                    m = re.search(rf"({IDENT})\s*$", code[:i]) if ch == "(" else None
                    return (m.group(1), commas) if m else None
                depth -= 1
            elif ch == "," and depth == 0:
                commas += 1
        return None

    def occurrences(self, name: str) -> list[NameOccurrence]:
        """Every occurrence of `name` at identifier boundaries, with line, column and region."""
        return [NameOccurrence(start=m.start(), end=m.end(), line=self.line_of_offset(m.start()),
                           col=self.col_of_offset(m.start()), region=self.region(m.start()))
                for m in bounded(name).finditer(self.text)]

    def written_as_code(self, start: int, end: int) -> bool:
        """Whether the name at [start, end) is written as code: a call `name(` or a member access
        (`x.name`, `name.x`). In a comment this tells a code reference (`# the server can call
        get_tree().get_rpc_sender_id()`) from a word of prose (`# Spawn RigidBody scenes.`); a file
        name is neither (`res://player/KinematicBody.tscn`, `Spatial.gd`)."""
        before = self.text[start - 1:start]
        if before == "/" or FILE_NAME_RE.match(self.text, end):
            return False
        return before == "." or self.text[end:end + 1] == "(" or re.match(rf"\.{IDENT}", self.text[end:end + 80]) is not None

    # -- derived ----------------------------------------------------------------------
    @cached_property
    def chain_texts(self) -> frozenset[str]:
        """Dotted identifier chains of the code (`Input.is_action_pressed`, `position.clamp`); read for every
        docs candidate, so computed once (the facts do not change once parsed)."""
        return frozenset(CHAIN_RE.findall(self.code))

    @cached_property
    def declares_inner_class(self) -> bool:
        """The chunk declares an inner class at its top level: code in it is that class's, not the file's."""
        return any(d.kind == "class" and not d.scope for d in self.declarations)

    @cached_property
    def method_calls(self) -> frozenset[str]:
        return frozenset(p.name for ch in self.chains for p in ch.parts if p.call)

    def version_votes(self) -> dict[str, list[Marker]]:
        out: dict[str, list[Marker]] = {"3": [], "4": []}
        for m in self.markers:
            out[m.version].append(m)
        return out

    def summary(self) -> dict[str, object]:
        """A compact, JSON-ready view for the trace."""
        return {"parser": self.parser, "parse_error_lines": self.parse_errors[:10], "extends": self.extends,
                "declared": sorted(self.declared)[:40], "local_types": dict(sorted(self.local_types.items())[:20]),
                "literal_types": dict(sorted(self.literal_types.items())[:20]),
                "annotations": sorted({a for a, _ in self.annotations}),
                "markers": [{"version": m.version, "what": m.what, "line": m.line} for m in self.markers[:12]],
                "comments": len(self.comments), "strings": len(self.strings)}


def _looks_csharp(code: str) -> bool:
    lines = [l.strip() for l in code.split("\n") if l.strip()]
    if not lines:
        return False
    return sum(l.endswith((";", "{", "}")) for l in lines) / len(lines) > 0.4


@lru_cache(maxsize=256)
def parse_chunk(text: str) -> GDScriptFacts:
    """The chunk's facts, parsed once per distinct text (the stages share the cached result)."""
    return parse_script(text)


def parse_script(text: str) -> GDScriptFacts:
    """The facts of a text, not cached: a whole file, read once (the project's symbol table)."""
    try:
        facts = _facts(text, "tree-sitter", tree_sitter_fields(text))
    except Exception:  # any failure: a missing or broken parser must not stop retrieval
        return _facts(text, "regex-fallback", regex_fields(text, []))
    if facts.parse_errors:
        # Error recovery keeps most of the tree, but a chunk that is mostly errors is better read by regex.
        n_lines = max(1, text.count("\n") + 1)
        if len(facts.parse_errors) > n_lines / 4:
            return _facts(text, "regex-fallback", regex_fields(text, facts.parse_errors))
    return facts


def _facts(text: str, parser: str, fields: ScriptFields) -> GDScriptFacts:
    return GDScriptFacts(text=text, parser=parser, **fields)
