"""The regex fallback: a chunk's facts read with regular expressions, for text tree-sitter cannot parse cleanly.
Fewer facts than the tree walk (no bare names, bindings or narrowing), in the same fields."""
from __future__ import annotations

import re

from .elements import Call, Chain, Declaration, Marker, Part, ScriptFields, empty_fields
from .lexicon import COMMENT_RE, IDENT, STRING_RE
from .text_lines import TextLines, blank_regions

DECL_RE = re.compile(r"\b(?:var|const|for|signal|class|enum)\s+([A-Za-z_][A-Za-z0-9_]*)")
FUNC_RE = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)")
PARAM_RE = re.compile(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*([A-Za-z_][A-Za-z0-9_]*))?")
TYPED_VAR_RE = re.compile(r"\bvar\s+([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z_][A-Za-z0-9_]*)")
NEW_VAR_RE = re.compile(r"\bvar\s+([A-Za-z_][A-Za-z0-9_]*)\s*:?=\s*([A-Z][A-Za-z0-9_]*)\.new\s*\(")
# A receiver (`$Node`, a bare call, a name), then its links (`.name`, `.name(`).
ACCESS_RE = re.compile(r"(\$[A-Za-z0-9_/]+|[A-Za-z_][A-Za-z0-9_]*(?:\s*\([^()\n]*\))?)"
                       r"((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*\()?)+)")
ACCESS_PART_RE = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)(\s*\()?")
BARE_CALL_RE = re.compile(r"(?<![A-Za-z0-9_.$])([A-Za-z_][A-Za-z0-9_]*)\s*\(")
NOT_CALLS = ("func", "if", "elif", "while", "for", "match", "return", "and", "or", "not")  # keywords before a `(`
# One left-to-right scan, so a `#` inside a string is not a comment and quotes in a comment are not strings.
REGION_RE = re.compile(STRING_RE.pattern + "|" + COMMENT_RE.pattern)
MARKER_RES = [
    ("4", "@annotation", re.compile(r"(?m)^\s*@[a-z_]+")), ("4", "await", re.compile(r"\bawait\b")),
    ("4", "super()", re.compile(r"\bsuper\s*[.(]")),
    ("3", "export var", re.compile(r"(?m)^\s*export\b")), ("3", "onready var", re.compile(r"(?m)^\s*onready\s+var\b")),
    ("3", "yield()", re.compile(r"\byield\s*\(")), ("3", "setget", re.compile(r"\bsetget\b")),
    ("3", "tool keyword", re.compile(r"(?m)^tool\s*$")),
]


def regex_fields(text: str, errors: list[int]) -> ScriptFields:
    """The facts regular expressions find in `text`; `errors`: the lines tree-sitter found broken."""
    fields = empty_fields()
    fields["parse_errors"] = errors
    fields["comments"], fields["strings"] = _regions(text)
    _, code = blank_regions(text, fields["comments"], fields["strings"])
    lines = TextLines(text)
    _declarations(fields, code, lines)
    _functions(fields, code, lines)
    for m in TYPED_VAR_RE.finditer(code):
        fields["local_types"][m.group(1)] = m.group(2)
    for m in NEW_VAR_RE.finditer(code):
        fields["local_types"][m.group(1)] = m.group(2)
    ext = re.search(r"(?m)^extends\s+([A-Za-z_][A-Za-z0-9_]*)", code)
    fields["extends"] = ext.group(1) if ext else None
    fields["chains"] = [_chain(m, lines) for m in ACCESS_RE.finditer(code)]
    fields["calls"] = [Call(m.group(1), m.start(), m.end(1), lines.line_of_offset(m.start()), lines.col_of_offset(m.start()))
                       for m in BARE_CALL_RE.finditer(code) if m.group(1) not in NOT_CALLS]
    fields["markers"] = sorted((Marker(version, what, lines.line_of_offset(m.start()))
                                for version, what, rx in MARKER_RES for m in rx.finditer(code)), key=lambda mk: mk.line)
    return fields


def _regions(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int, str]]]:
    """(comments, strings (start, end, value)) of the text."""
    strings, comments = [], []
    for m in REGION_RE.finditer(text):
        s = m.group(0)
        if s.startswith("#"):
            comments.append((m.start(), m.end()))
        else:
            body = s.lstrip("&^")
            q = 3 if body.startswith(('"""', "'''")) else 1
            strings.append((m.start(), m.end(), body[q:-q]))
    return comments, strings


def _declarations(fields: ScriptFields, code: str, lines: TextLines) -> None:
    """`var`, `const`, `for`, `signal`, `class`, `enum` names, and `class_name`."""
    for m in DECL_RE.finditer(code):
        fields["declared"].add(m.group(1))
        kind = m.group(0).split()[0]
        if kind != "for":
            line = lines.line_of_offset(m.start(1))
            indented = lines.line_text(line)[:1] in (" ", "\t")
            fields["declarations"].append(Declaration(m.group(1), kind, line, local=indented and kind == "var"))
    for m in re.finditer(rf"(?m)^class_name\s+({IDENT})", code):
        fields["class_name"] = m.group(1)
        fields["declarations"].append(Declaration(m.group(1), "class_name", lines.line_of_offset(m.start(1))))


def _functions(fields: ScriptFields, code: str, lines: TextLines) -> None:
    """`func` names (static or not, typed or not) and their parameters, with the types they state."""
    for m in FUNC_RE.finditer(code):
        fields["functions"].add(m.group(1))
        fields["declared"].add(m.group(1))
        static = code[max(0, m.start() - 7):m.start()].strip() == "static"
        fields["declarations"].append(Declaration(m.group(1), "static_func" if static else "func",
                                                  lines.line_of_offset(m.start(1)), typed=":" in m.group(2)))
        for p in PARAM_RE.finditer(m.group(2)):
            fields["declared"].add(p.group(1))
            fields["params"].add(p.group(1))
            if p.group(2):
                fields["local_types"][p.group(1)] = p.group(2)


def _chain(m: re.Match[str], lines: TextLines) -> Chain:
    """The access chain ACCESS_RE matched: its receiver (`$Node`, a bare call, `self` or a name) and its links."""
    head = m.group(1)
    if head.startswith("$"):
        kind, root = "get_node", ""
    elif "(" in head:
        kind, root = "call", head.split("(")[0].strip()
    else:
        kind, root = ("self", "self") if head == "self" else ("identifier", head)
    parts = []
    base = m.start(2)
    for pm in ACCESS_PART_RE.finditer(m.group(2)):
        at = base + pm.start(1)
        parts.append(Part(pm.group(1), bool(pm.group(2)), at, at + len(pm.group(1)),
                          lines.line_of_offset(at), lines.col_of_offset(at)))
    return Chain(kind, root, m.start(), tuple(parts), m.group(0))
