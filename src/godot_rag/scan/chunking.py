"""Cut a `.gd` file into the chunks the retriever is asked about.

With the GDScript parser (`godot_rag.gdscript.facts`'s tree-sitter parser): the header (`extends`,
`class_name`, signals, variables, ... up to the first function) is one chunk; each `func` or inner
`class` is one chunk, with the comments and annotations directly above it; declarations that sit
between two functions form their own chunk. A comment block that belongs to nothing (separated by a
blank line from the code below it) is left out: it holds no code.

A chunk over `max_chars` is cut at statement boundaries (the children of the function, recursively
into a compound statement that alone is too long); the atoms are whole lines, so nothing is ever
cut mid-line. A file whose top level does not parse is cut by lines instead: a new chunk at each
top-level `func`/`class` line, the same size rule with line boundaries.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

BLOCK_NODES = {"function_definition", "constructor_definition", "class_definition"}
ATTACHABLE = {"comment", "annotation"}
DEFAULT_MAX_CHARS = 4000
FUNC_LINE_RE = re.compile(r"^(?:static\s+)?func\s+([A-Za-z_][A-Za-z0-9_]*)|^class\s+([A-Za-z_][A-Za-z0-9_]*)")
LEAD_LINE_RE = re.compile(r"^(?:#|@)")
EXTENDS_RE = re.compile(r"(?m)^extends\s+([A-Za-z_][A-Za-z0-9_]*)\s*(?:#.*)?$")


@dataclass
class Chunk:
    index: int  # 0-based, in file order
    start_line: int  # 1-based, inclusive
    end_line: int
    text: str
    kind: str  # header | func | class | declarations
    name: str | None = None
    part: int | None = None  # 1-based part of an over-long block
    parts: int | None = None

    def to_dict(self) -> dict:
        d = {"index": self.index, "start_line": self.start_line, "end_line": self.end_line, "kind": self.kind,
             "name": self.name}
        if self.parts:
            d.update(part=self.part, parts=self.parts)
        return d


@dataclass
class FileChunks:
    chunks: list[Chunk]
    chunker: str  # "tree-sitter" | "line-fallback"
    parse_error_lines: list[int] = field(default_factory=list)
    extends: str | None = None  # the script's `extends` class, when it names one


def _node_end_row(node: Any) -> int:
    """0-based last row that holds the node's text (a node ending at column 0 ends on the row before)."""
    (sr, _), (er, ec) = node.start_point, node.end_point
    return er - 1 if ec == 0 and er > sr else er


def _name_of(node: Any, data: bytes) -> str | None:
    for c in node.children:
        if c.type in ("name", "_init"):
            return data[c.start_byte:c.end_byte].decode("utf-8", "replace")
    return "_init" if node.type == "constructor_definition" else None


def _trim(lines: list[str], s: int, e: int) -> tuple[int, int]:
    """Drop blank lines at both ends of rows s..e (0-based, inclusive)."""
    while s < e and not lines[s].strip():
        s += 1
    while e > s and not lines[e].strip():
        e -= 1
    return s, e


def _units(node: Any, lines: list[str], max_chars: int) -> list[tuple[int, int]]:
    """Row intervals covering the node, each a statement (or a run of statements sharing a row);
    a child too long on its own is opened up into its own statements."""
    s, e = node.start_point[0], _node_end_row(node)
    if _size(lines, s, e) <= max_chars or not node.children:
        return [(s, e)]
    spans: list[tuple[int, int]] = []
    for child in node.children:
        cs, ce = child.start_point[0], _node_end_row(child)
        if ce < cs:
            continue
        sub = _units(child, lines, max_chars) if _size(lines, cs, ce) > max_chars else [(cs, ce)]
        spans.extend(sub)
    spans.sort()
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:  # shares a row with the previous unit
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if not merged:
        return [(s, e)]
    merged[0][0] = min(merged[0][0], s)
    merged[-1][1] = max(merged[-1][1], e)
    # blank rows between units go with the unit after them
    for i in range(1, len(merged)):
        merged[i][0] = merged[i - 1][1] + 1
    return [(a, b) for a, b in merged]


def _size(lines: list[str], s: int, e: int) -> int:
    return sum(len(lines[i]) + 1 for i in range(s, e + 1)) - 1


def _line_units(lines: list[str], s: int, e: int) -> list[tuple[int, int]]:
    """Fallback units: a statement starts at a line indented one level (or less) inside the block."""
    units: list[list[int]] = []
    for i in range(s, e + 1):
        line = lines[i]
        depth = len(line) - len(line.lstrip("\t ")) if line.strip() else None
        starts = units == [] or (depth is not None and depth <= 4
                                 and not line.lstrip().startswith(("elif", "else", ")", "]", "}")))
        if starts:
            units.append([i, i])
        else:
            units[-1][1] = i
    return [(a, b) for a, b in units]


def _pack(units: list[tuple[int, int]], lines: list[str], max_chars: int) -> list[tuple[int, int]]:
    """Consecutive units packed into parts of at most max_chars (a single unit over it stays whole,
    or, when it spans several lines, is cut at line boundaries)."""
    parts: list[list[int]] = []
    for a, b in units:
        if _size(lines, a, b) > max_chars and b > a:
            # one statement alone is too long: whole lines, packed
            for i in range(a, b + 1):
                if parts and _size(lines, parts[-1][0], i) <= max_chars and parts[-1][1] == i - 1:
                    parts[-1][1] = i
                else:
                    parts.append([i, i])
            continue
        if parts and _size(lines, parts[-1][0], b) <= max_chars and parts[-1][1] == a - 1:
            parts[-1][1] = b
        else:
            parts.append([a, b])
    return [(a, b) for a, b in parts]


@dataclass
class _Cut:
    """A file's chunks as they are cut: its lines, the size limit, the chunks so far."""
    lines: list[str]
    max_chars: int
    out: list[Chunk] = field(default_factory=list)

    def emit(self, s: int, e: int, kind: str, name: str | None, units: list[tuple[int, int]] | None = None) -> None:
        """Lines s..e (from 0, inclusive) as one chunk, or cut at `units` (else lines) when over the limit."""
        _emit(self.out, self.lines, (s, e), (kind, name), self.max_chars, units)


def _emit(out: list[Chunk], lines: list[str], span: tuple[int, int], what: tuple[str, str | None], max_chars: int,
          units: list[tuple[int, int]] | None = None) -> None:
    kind, name = what
    s, e = _trim(lines, *span)
    if s > e or not any(lines[i].strip() for i in range(s, e + 1)):
        return
    if _size(lines, s, e) <= max_chars:
        out.append(Chunk(len(out), s + 1, e + 1, "\n".join(lines[s:e + 1]), kind, name))
        return
    units = [(max(a, s), min(b, e)) for a, b in (units or _line_units(lines, s, e)) if b >= s and a <= e]
    if units:
        units[0] = (s, units[0][1])
        units[-1] = (units[-1][0], e)
    pieces = []
    for a, b in _pack(units, lines, max_chars):
        a, b = _trim(lines, a, b)
        if a <= b and any(lines[i].strip() for i in range(a, b + 1)):
            pieces.append((a, b))
    for n, (a, b) in enumerate(pieces, 1):
        out.append(Chunk(len(out), a + 1, b + 1, "\n".join(lines[a:b + 1]), kind, name, n, len(pieces)))


def chunk_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> FileChunks:
    lines = text.split("\n")
    m = EXTENDS_RE.search(text)
    extends = m.group(1) if m else None
    try:
        from ..gdscript.tree_nodes import gdscript_parser  # the one tree-sitter-gdscript setup of the project

        data = text.encode("utf-8")
        tree = gdscript_parser().parse(data)
    except Exception:
        return FileChunks(_line_chunks(lines, max_chars), "line-fallback", [], extends)
    root = tree.root_node
    errors = sorted({n.start_point[0] + 1 for n in _error_nodes(root)})
    if root.type != "source" or any(c.type == "ERROR" for c in root.children):
        return FileChunks(_line_chunks(lines, max_chars), "line-fallback", errors, extends)
    return FileChunks(_tree_chunks(root, data, lines, max_chars), "tree-sitter", errors, extends)


def _error_nodes(root: Any) -> Iterator[Any]:
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            yield n
        if n.has_error:
            stack.extend(n.children)


def _tree_chunks(root: Any, data: bytes, lines: list[str], max_chars: int) -> list[Chunk]:
    items = [c for c in root.children if c.end_byte > c.start_byte]
    starts = _block_starts(items)
    cut = _Cut(lines, max_chars)
    first = starts[0][0] if starts else len(items)
    if first > 0:
        cut.emit(items[0].start_point[0], _node_end_row(items[first - 1]), "header", None)
    for n, (j, i) in enumerate(starts):
        node = items[i]
        kind = "class" if node.type == "class_definition" else "func"
        s = items[j].start_point[0]
        units = _units(node, lines, max_chars)
        if j < i:
            units = [(s, units[0][1]), *units[1:]]
        cut.emit(s, _node_end_row(node), kind, _name_of(node, data), units)
        # what lies between this block and the next: declarations get a chunk, lone comments do not
        nxt = starts[n + 1][0] if n + 1 < len(starts) else len(items)
        between = _declarations(items[i + 1:nxt])
        if between:
            cut.emit(between[0].start_point[0], _node_end_row(between[-1]), "declarations", None)
    for k, c in enumerate(cut.out):
        c.index = k
    return cut.out


def _block_starts(items: list[Any]) -> list[tuple[int, int]]:
    """Where each block starts, with the comments and annotations directly above it (no blank line between):
    (index of the first attached item, index of the block node)."""
    starts: list[tuple[int, int]] = []
    for i, node in enumerate(items):
        if node.type not in BLOCK_NODES:
            continue
        j = i
        while (j > 0 and items[j - 1].type in ATTACHABLE and (not starts or j - 1 > starts[-1][1])
               and items[j].start_point[0] - _node_end_row(items[j - 1]) <= 1):
            j -= 1
        starts.append((j, i))
    return starts


def _declarations(between: list[Any]) -> list[Any]:
    """The declarations among the items between two blocks, with the comments directly around them; none
    when there are only comments (comments at either end that a blank line separates belong to nothing)."""
    code = [k for k, x in enumerate(between) if x.type not in ATTACHABLE]
    if not code:
        return []
    a, b = code[0], code[-1]
    while a > 0 and between[a].start_point[0] - _node_end_row(between[a - 1]) <= 1:
        a -= 1
    while b + 1 < len(between) and between[b + 1].start_point[0] - _node_end_row(between[b]) <= 1:
        b += 1
    return between[a:b + 1]


def _line_chunks(lines: list[str], max_chars: int) -> list[Chunk]:
    """For a file whose top level does not parse: a chunk starts at each top-level func/class line
    (with the comment and annotation lines directly above it)."""
    starts: list[int] = []
    for i, line in enumerate(lines):
        if FUNC_LINE_RE.match(line):
            j = i
            while j > 0 and LEAD_LINE_RE.match(lines[j - 1]) and (not starts or j - 1 > starts[-1]):
                j -= 1
            starts.append(j)
    cut = _Cut(lines, max_chars)
    bounds = ([0] if not starts or starts[0] > 0 else []) + starts + [len(lines)]
    for a, b in pairwise(bounds):
        kind, name = "header", None
        if a in starts:
            m = next((FUNC_LINE_RE.match(l) for l in lines[a:b] if FUNC_LINE_RE.match(l)), None)
            if m is not None:
                kind, name = ("class", m.group(2)) if m.group(2) else ("func", m.group(1))
        cut.emit(a, b - 1, kind, name)
    for k, c in enumerate(cut.out):
        c.index = k
    return cut.out
