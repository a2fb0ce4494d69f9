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

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"  # the one definition of a GDScript identifier
IDENT_RE = re.compile(IDENT)
KEYWORD_NODE = "_keyword"  # how tree-sitter-gdscript names a modifier keyword's node (`static_keyword`)
STRING_RE = re.compile(r"[&^]?\"\"\"[\s\S]*?\"\"\"|[&^]?\"(?:[^\"\\\n]|\\.)*\"|[&^]?'(?:[^'\\\n]|\\.)*'")
COMMENT_RE = re.compile(r"#[^\n]*")
# A chain starts where a name does: without the look-behind, a name with no dot after it is tried again from
# each of its letters (the same matches, three times the time on the docs' text).
CHAIN_RE = re.compile(rf"(?<![A-Za-z_]){IDENT}(?:\.{IDENT})+")
DIGITS_RE = re.compile(r"\d+")
# A file extension after a name: `Player.tscn`, `Spatial.gd` (Godot's resource and script files, and common assets).
FILE_NAME_RE = re.compile(r"\.(?:gd|tscn|tres|scn|res|gdshader|shader|cs|import|godot|cfg|json|png|svg|jpg|jpeg|webp|"
                          r"ogg|wav|mp3|glb|gltf|obj|ttf|otf)(?![A-Za-z0-9_])")
# GDScript's reserved words (3 and 4): never an author's name (clone match), and no pointer to any one line.
KEYWORDS = frozenset("""if elif else for while match break continue pass return class class_name extends is in as
self signal func static const enum var onready export setget tool breakpoint preload await yield assert void
true false null and or not super remote master puppet remotesync mastersync puppetsync""".split())


def bounded(name: str) -> re.Pattern:
    """`name` at identifier boundaries: `AnimatedSprite` does not match inside `AnimatedSprite2D`."""
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")


def shape(ident: str) -> str:
    """Digit runs masked: `Vector3` and `Vector2` share the shape `Vector#`."""
    return DIGITS_RE.sub("#", ident)


@dataclass(frozen=True)
class Part:
    """One link of an access chain: `quit` in `get_tree().quit()`."""
    name: str
    call: bool
    start: int  # character offsets in the chunk
    end: int
    line: int  # 1-based
    col: int  # 1-based


@dataclass(frozen=True)
class Chain:
    """`receiver.part.part()`; the receiver is an identifier, a bare call, `$Node`, `self`, a string or other."""
    root_kind: str  # identifier | call | get_node | self | super | string | other
    root: str  # the identifier or callee name ('' when none)
    root_start: int
    parts: tuple[Part, ...]
    text: str
    complete: bool = True  # the parts are the whole chain (False where a subscript or another form ends them)


@dataclass(frozen=True)
class Name:
    """A bare identifier read or written as a value (`velocity = ...`, `move_toward(speed, ...)`): not a
    declaration, a type, a callee, a chain's root or member, a parameter or a match pattern."""
    name: str
    start: int
    line: int
    col: int


@dataclass(frozen=True)
class Call:
    """A bare call `name(...)`; `args` holds the first arguments' kinds (`string`, `identifier`, ...)."""
    name: str
    start: int
    end: int
    line: int
    col: int
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Marker:
    """Syntax only one Godot version accepts, at a line."""
    version: str  # "3" | "4"
    what: str
    line: int


@dataclass(frozen=True)
class Declaration:
    """A name the script declares, with its kind and line: what the project's symbol table is made of.
    `scope`: the inner class it sits in (`Outer.Inner`), '' at the script's top level."""
    name: str
    kind: str  # class_name | class | func | static_func | signal | var | const | enum | enum_value
    line: int
    scope: str = ""
    extends: str | None = None  # class: its parent as written (a class name or a "res://" path)
    typed: bool = False  # func: typed parameters or a return type (`-> String`)
    local: bool = False  # inside a function: a local variable, not a member
    # var / const: the type the declaration states, written (`: Label`), constructed (`Label.new()`) or cast
    # (`$Name as Label`); None where it leaves the type to inference
    type: str | None = None


@dataclass(frozen=True)
class Binding:
    """A name a `var`, a parameter or a `for` gives a value in a scope (a function, a lambda, a `for`, a class or
    the script), from `at` to `scope_end`. `value_start`: where a `var`'s value starts when it is a bare call or a
    call chain (`var t := create_tween()`), whose documented return type the resolver reads; `cast`: the type of
    a `var`'s value cast with `as` (`$Name as Label`)."""
    name: str
    at: int
    scope_start: int
    scope_end: int
    value_start: int | None = None
    cast: str | None = None


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

    def __post_init__(self):
        chars = list(self.text)
        for s, e in self.comments:
            chars[s:e] = " " * (e - s)
        self.no_comments = "".join(chars)
        for s, e, _ in self.strings:
            chars[s:e] = " " * (e - s)
        # Code only (node paths such as `$AnimatedSprite2D` stay: they name nodes, and evidence may match them;
        # `region()` tells them apart where the version decision needs it): comments and string literals blanked, offsets unchanged.
        self.code = "".join(chars)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
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
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def col_of_offset(self, offset: int) -> int:
        return offset - self._line_starts[self.line_of_offset(offset) - 1] + 1

    def line_of(self, ident: str) -> int | None:
        """First code line that uses `ident`."""
        return self._first_line.get(ident)

    def line_text(self, line: int) -> str:
        lines = self.text.split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""

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

    def occurrences(self, name: str) -> list[dict]:
        """Every occurrence of `name` at identifier boundaries, with line, column and region."""
        out = []
        for m in bounded(name).finditer(self.text):
            out.append({"start": m.start(), "end": m.end(), "line": self.line_of_offset(m.start()),
                        "col": self.col_of_offset(m.start()), "region": self.region(m.start())})
        return out

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

    def summary(self) -> dict:
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


# --------------------------------------------------------------------------------------
# tree-sitter
@lru_cache(maxsize=1)
def _parser():
    import tree_sitter
    import tree_sitter_gdscript

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_gdscript.language()))


STRING_NODES = {"string", "string_name", "node_path"}
VAR_NODES = {"variable_statement", "export_variable_statement", "onready_variable_statement", "const_statement"}
PARAM_NODES = {"typed_parameter", "default_parameter", "typed_default_parameter"}


class _Walker:
    def __init__(self, text: str, data: bytes):
        self.text = text
        self.data = data
        ascii_only = len(data) == len(text)
        self._b2c = None if ascii_only else _byte_to_char(text)
        self.facts_kw: dict = {"comments": [], "strings": [], "chains": [], "calls": [], "names": [], "declared": set(),
                               "params": set(), "functions": set(), "local_types": {}, "literal_types": {}, "bindings": [], "assigned": [],
                               "annotations": [],
                               "markers": [], "parse_errors": [], "node_paths": [], "declarations": [], "narrowed": [],
                               "constructs": set()}
        self.extends: str | None = None
        self.extends_path: str | None = None
        self.class_name: str | None = None

    def pos(self, byte: int) -> int:
        return byte if self._b2c is None else self._b2c[byte]

    def src(self, node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def line(self, node) -> int:
        return node.start_point[0] + 1

    def col(self, node) -> int:
        s = self.pos(node.start_byte)
        return s - (self.text.rfind("\n", 0, s) + 1) + 1

    def scope(self, node) -> str:
        """The inner classes around a node (`Outer.Inner`), '' at the script's top level."""
        names = []
        p = node.parent
        while p is not None:
            if p.type in FUNCTION_NODES:
                return "<local>"
            if p.type == "class_definition":
                n = next((c for c in p.children if c.type == "name"), None)
                if n is not None:
                    names.append(self.src(n))
            p = p.parent
        return ".".join(reversed(names))

    def declare(self, name_node, kind: str, node, **extra) -> None:
        scope = self.scope(node)
        local = scope == "<local>"
        self.facts_kw["declarations"].append(Declaration(self.src(name_node), kind, self.line(name_node),
                                                         "" if local else scope, local=local, **extra))

    def walk(self, root) -> None:
        stack = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            t = node.type
            if t == "ERROR" or node.is_missing:
                self.facts_kw["parse_errors"].append(self.line(node))
            elif node.is_named:
                self.facts_kw["constructs"].add(construct_name(node))
            handler = getattr(self, "on_" + t, None)
            if handler is not None and handler(node, depth) is False:
                continue
            stack.extend((c, depth + 1) for c in reversed(node.children))

    # -- regions
    def on_comment(self, node, depth):
        self.facts_kw["comments"].append((self.pos(node.start_byte), self.pos(node.end_byte)))
        return False

    def _string(self, node):
        s, e = self.pos(node.start_byte), self.pos(node.end_byte)
        raw = self.text[s:e]
        value = raw.lstrip("&^")
        q = 3 if value.startswith(('"""', "'''")) else 1
        self.facts_kw["strings"].append((s, e, value[q:-q] if len(value) >= 2 * q else ""))
        return False

    def on_get_node(self, node, depth):
        # `$Skeleton/Arm` and `%Unique` name nodes of the scene, not classes: a path, like a string.
        s, e = self.pos(node.start_byte), self.pos(node.end_byte)
        self.facts_kw["node_paths"].append((s, e))
        return False

    def on_string(self, node, depth):
        return self._string(node)

    def on_string_name(self, node, depth):
        self.facts_kw["markers"].append(Marker("4", '&"StringName" literal', self.line(node)))
        return self._string(node)

    def on_node_path(self, node, depth):
        if self.src(node).startswith("^"):
            self.facts_kw["markers"].append(Marker("4", '^"NodePath" literal', self.line(node)))
        return self._string(node)

    # -- declarations
    def _var(self, node):
        name = node.child_by_field_name("name") or next((c for c in node.children if c.type == "name"), None)
        if name is None:
            return
        n = self.src(name)
        kind = "const" if node.type == "const_statement" else "var"
        self.facts_kw["declared"].add(n)
        typ = next((c for c in node.children if c.type == "type"), None)
        if typ is not None:
            self.facts_kw["local_types"][n] = _base_type(self.src(typ))
            self.declare(name, kind, node, type=self.facts_kw["local_types"][n])
            self.bind(name, node)
            return
        value = node.children[-1] if node.children else None
        ctor = _constructed_type(self, value)
        called = value is not None and value.type in VALUE_CALL_NODES
        cast = None if ctor or called else _cast_type(self, value)
        self.declare(name, kind, node, type=ctor or cast)
        if ctor:
            self.facts_kw["local_types"][n] = ctor
        elif value is not None and value.type in LITERAL_TYPES:
            self.facts_kw["literal_types"][n] = LITERAL_TYPES[value.type]
        elif value is not None and (called or cast):
            self.bind(name, node, value_start=self.pos(value.start_byte) if called else None, cast=cast)
            return
        self.bind(name, node)

    def bind(self, name_node, node, scope=None, **value) -> None:
        """A binding of the name at `name_node`, in the scope around `node` (or `scope`, a node)."""
        if scope is None:
            scope = node.parent
            while scope is not None and scope.type not in SCOPE_NODES:
                scope = scope.parent
        start, end = (self.pos(scope.start_byte), self.pos(scope.end_byte)) if scope is not None else (0, len(self.text))
        self.facts_kw["bindings"].append(Binding(self.src(name_node), self.pos(name_node.start_byte), start, end, **value))

    def on_assignment(self, node, depth):
        target = node.children[0] if node.children else None
        if target is not None and target.type == "identifier":
            self.facts_kw["assigned"].append((self.src(target), self.pos(target.start_byte)))

    def on_variable_statement(self, node, depth):
        self._var(node)
        for c in node.children:
            if c.type == "setget":
                self.facts_kw["markers"].append(Marker("3", "setget", self.line(c)))

    def on_const_statement(self, node, depth):
        self._var(node)

    def on_export_variable_statement(self, node, depth):
        self._var(node)
        self.facts_kw["markers"].append(Marker("3", "export var", self.line(node)))

    def on_onready_variable_statement(self, node, depth):
        self._var(node)
        self.facts_kw["markers"].append(Marker("3", "onready var", self.line(node)))

    def on_setget(self, node, depth):
        self.facts_kw["markers"].append(Marker("3", "setget", self.line(node)))

    def on_function_definition(self, node, depth):
        name = next((c for c in node.children if c.type == "name"), None)
        params = next((c for c in node.children if c.type == "parameters"), None)
        if name is not None:
            self.facts_kw["functions"].add(self.src(name))
            self.facts_kw["declared"].add(self.src(name))
            if node.type == "function_definition":
                static = any(c.type == "static_keyword" for c in node.children)
                typed = any(c.type == "type" for c in node.children) or any(
                    p.type in ("typed_parameter", "typed_default_parameter") for p in (params.children if params else []))
                self.declare(name, "static_func" if static else "func", node, typed=typed)
        if params is not None:
            for p, ident in _param_idents(params):
                n = self.src(ident)
                self.facts_kw["declared"].add(n)
                self.facts_kw["params"].add(n)
                self.bind(ident, node, scope=node)
                typ = next((c for c in p.children if c.type == "type"), None)
                if typ is not None:
                    self.facts_kw["local_types"][n] = _base_type(self.src(typ))

    def on_lambda(self, node, depth):
        self.facts_kw["markers"].append(Marker("4", "lambda func", self.line(node)))
        return self.on_function_definition(node, depth)

    def on_constructor_definition(self, node, depth):
        """`func _init(a, b):` and a setter's `set(value):`: their parameters are declared, and bind their names in
        them (for `binding_at`)."""
        params = next((c for c in node.children if c.type == "parameters"), None)
        for _, ident in _param_idents(params) if params is not None else []:
            self.facts_kw["declared"].add(self.src(ident))
            self.facts_kw["params"].add(self.src(ident))
            self.bind(ident, node, scope=node)

    on_set_body = on_constructor_definition

    def on_for_statement(self, node, depth):
        ident = next((c for c in node.children if c.type == "identifier"), None)
        if ident is not None:
            self.facts_kw["declared"].add(self.src(ident))
            self.bind(ident, node, scope=node)
        typ = next((c for c in node.children if c.type == "type"), None)
        if typ is not None and ident is not None:
            self.facts_kw["markers"].append(Marker("4", "typed for loop variable", self.line(node)))
            self.facts_kw["local_types"][self.src(ident)] = _base_type(self.src(typ))

    def _narrow(self, clause) -> None:
        """`if x is T:` / `elif x is T and ...:`: x is a T from the test to the end of the clause's body."""
        cond = next((c for c in clause.children if c.type not in ("if", "elif", ":", "comment")), None)
        body = next((c for c in clause.children if c.type == "body"), None)
        while cond is not None and body is not None and cond.type == "binary_operator":
            op = next((c for c in cond.children if c.type in ("is", "and", "&&")), None)
            if op is None:
                return
            left, right = cond.children[0], cond.children[-1]
            if op.type == "is":
                if left.type == "identifier" and right.type in ("identifier", "type"):
                    self.facts_kw["narrowed"].append((self.src(left), _base_type(self.src(right)),
                                                      self.pos(cond.end_byte), self.pos(body.end_byte)))
                return
            cond = left  # `x is T and x.m`: the test on the left holds for the right and the body

    def on_if_statement(self, node, depth):
        self._narrow(node)

    def on_elif_clause(self, node, depth):
        self._narrow(node)

    def on_class_definition(self, node, depth):
        name = next((c for c in node.children if c.type == "name"), None)
        if name is not None:
            self.facts_kw["declared"].add(self.src(name))
            ext = next((c for c in node.children if c.type == "extends_statement"), None)
            typ = next((c for c in ext.children if c.type in ("type", "string")), None) if ext is not None else None
            parent = None if typ is None else (_base_type(self.src(typ)) if typ.type == "type" else self.src(typ).strip("\"'"))
            self.declare(name, "class", node, extends=parent)

    def on_signal_statement(self, node, depth):
        name = next((c for c in node.children if c.type == "name"), None)
        if name is not None:
            self.facts_kw["declared"].add(self.src(name))
            self.declare(name, "signal", node)

    def on_enum_definition(self, node, depth):
        name = next((c for c in node.children if c.type == "name"), None)
        if name is not None:
            self.facts_kw["declared"].add(self.src(name))
            self.declare(name, "enum", node)
        for c in node.children:
            if c.type == "enumerator_list":
                for e in c.children:
                    if e.type == "enumerator":
                        left = e.children[0] if e.children else None
                        if left is not None and left.type == "identifier":
                            self.facts_kw["declared"].add(self.src(left))
                            self.declare(left, "enum_value", node)

    def on_class_name_statement(self, node, depth):
        name = next((c for c in node.children if c.type == "name"), None)
        if name is not None:
            self.class_name = self.src(name)
            self.facts_kw["declared"].add(self.class_name)
            self.declare(name, "class_name", node)

    def on_extends_statement(self, node, depth):
        typ = next((c for c in node.children if c.type in ("type", "string")), None)
        # Only the script's own `extends`: an inner class's has a parent class_definition.
        if typ is not None and (node.parent is None or node.parent.type == "source"):
            if typ.type == "type":
                self.extends = _base_type(self.src(typ))
            else:
                self.extends_path = self.src(typ).strip("\"'")
        return False

    def on_annotation(self, node, depth):
        ident = next((c for c in node.children if c.type == "identifier"), None)
        if ident is not None:
            name = self.src(ident)
            self.facts_kw["annotations"].append((name, self.line(node)))
            self.facts_kw["markers"].append(Marker("4", f"@{name} annotation", self.line(node)))

    def on_expression_statement(self, node, depth):
        # Godot 3's `tool` keyword parses as a lone identifier statement at the top of a script.
        if (len(node.children) == 1 and node.children[0].type == "identifier" and self.src(node) == "tool"
                and node.parent is not None and node.parent.type == "source"):
            self.facts_kw["markers"].append(Marker("3", "tool keyword", self.line(node)))

    def on_await_expression(self, node, depth):
        self.facts_kw["markers"].append(Marker("4", "await", self.line(node)))

    # -- uses
    def on_identifier(self, node, depth):
        if _names_a_value(node):
            self.facts_kw["names"].append(Name(self.src(node), self.pos(node.start_byte), self.line(node), self.col(node)))
        return False

    def on_call(self, node, depth):
        callee = node.children[0] if node.children else None
        if callee is None or callee.type not in ("identifier", "super"):
            return
        name = self.src(callee)
        args = next((c for c in node.children if c.type == "arguments"), None)
        kinds = tuple(c.type for c in (args.children if args is not None else []) if c.type not in ("(", ")", ","))
        s = self.pos(node.start_byte)
        self.facts_kw["calls"].append(Call(name, s, self.pos(callee.end_byte), self.line(node), self.col(node), kinds[:4]))
        if name == "yield":
            self.facts_kw["markers"].append(Marker("3", "yield()", self.line(node)))
        elif name == "super":
            self.facts_kw["markers"].append(Marker("4", "super()", self.line(node)))
        elif name == "connect" and len(kinds) >= 3 and kinds[0] == "string" and kinds[2] == "string":
            self.facts_kw["markers"].append(Marker("3", 'connect("signal", target, "method")', self.line(node)))

    def on_attribute(self, node, depth):
        kids = [c for c in node.children if c.type != "."]
        if not kids:
            return
        root = kids[0]
        kind, name = "other", ""
        if root.type == "identifier":
            name = self.src(root)
            kind = "self" if name == "self" else "identifier"
        elif root.type in ("self",):
            kind, name = "self", "self"
        elif root.type == "super":
            kind, name = "super", "super"
        elif root.type == "call":
            callee = root.children[0] if root.children else None
            if callee is not None and callee.type == "identifier":
                kind, name = "call", self.src(callee)
        elif root.type == "get_node":
            kind = "get_node"
        elif root.type in STRING_NODES:
            kind = "string"
        parts = []
        complete = True
        for k in kids[1:]:
            if k.type == "identifier":
                parts.append(Part(self.src(k), False, self.pos(k.start_byte), self.pos(k.end_byte), self.line(k), self.col(k)))
            elif k.type == "attribute_call":
                ident = next((c for c in k.children if c.type == "identifier"), None)
                if ident is None:
                    complete = False
                    break
                n = self.src(ident)
                parts.append(Part(n, True, self.pos(ident.start_byte), self.pos(ident.end_byte), self.line(ident), self.col(ident)))
                args = next((c for c in k.children if c.type == "arguments"), None)
                if n == "connect" and args is not None:
                    first = next((c for c in args.children if c.type not in ("(", ")", ",")), None)
                    if first is not None and first.type not in STRING_NODES:
                        self.facts_kw["markers"].append(Marker("4", "signal.connect(callable)", self.line(k)))
                    elif first is not None:
                        rest = [c.type for c in args.children if c.type not in ("(", ")", ",")]
                        if len(rest) >= 3 and rest[2] in STRING_NODES:
                            self.facts_kw["markers"].append(Marker("3", 'connect("signal", target, "method")', self.line(k)))
            else:
                complete = False
                break  # subscripts and other forms end what we can follow
        if kind == "super":
            self.facts_kw["markers"].append(Marker("4", "super.method()", self.line(node)))
        s = self.pos(node.start_byte)
        self.facts_kw["chains"].append(Chain(kind, name, s, tuple(parts), self.src(node), complete))


# Parents under which an identifier is never a value the script reads: types, annotations, match patterns,
# `setget` accessors, and the parts of chains and calls (the chain and call facts hold those).
NOT_VALUE_PARENTS = {"type", "annotation", "pattern_section", "attribute_call", "attribute", "setget", "enumerator",
                     "extends_statement", "class_name_statement", "signal_statement", "parameters"}
# Parents whose first identifier child is a name being declared (a parameter, the loop variable), or the callee.
FIRST_IS_NOT_VALUE = PARAM_NODES | {"for_statement", "call"}


def _param_idents(params) -> list:
    """(parameter node, its name's identifier node) of each parameter of a `parameters` node."""
    out = []
    for p in params.children:
        ident = p if p.type == "identifier" else next((c for c in p.children if c.type == "identifier"), None)
        if ident is not None and p.type in PARAM_NODES | {"identifier"}:
            out.append((p, ident))
    return out


def construct_name(node) -> str:
    """A named node's construct: its grammar type, and for a keyword node (`static_keyword`) the node it modifies
    too, as `parent/keyword`: a static function and a static variable are two constructs, taught by two sections."""
    t = node.type
    return f"{node.parent.type}/{t}" if t.endswith(KEYWORD_NODE) and node.parent is not None else t


def _names_a_value(node) -> bool:
    """Whether an identifier node is a bare name read or written as a value (`velocity` in `velocity = v`)."""
    parent = node.parent
    if parent is None or parent.type in NOT_VALUE_PARENTS:
        return False
    if parent.type in FIRST_IS_NOT_VALUE:
        return next((c for c in parent.children if c.type == "identifier"), None) != node
    if parent.type == "pair":  # `{key = value}`: the key is a name, not a read
        return not (parent.children and parent.children[0] == node and len(parent.children) > 1
                    and parent.children[1].type == "=")
    return True


def _byte_to_char(text: str) -> list[int]:
    out = []
    for i, ch in enumerate(text):
        out.extend([i] * len(ch.encode("utf-8")))
    out.append(len(text))
    return out


def _base_type(t: str) -> str:
    """`Array[Node]` -> `Array`; `Dictionary[String, int]` -> `Dictionary`; `Outer . Inner` (spaces, a line
    continuation) -> `Outer.Inner`."""
    return "".join(t.split("[", 1)[0].replace("\\", " ").split())


# Literal values whose type is plain from the syntax.
LITERAL_TYPES = {"array": "Array", "dictionary": "Dictionary", "string": "String"}
VALUE_CALL_NODES = ("call", "attribute")  # a value that is a bare call or a call chain: its type is a return type
# Bodies whose `var`s are locals: functions, lambdas, and a property's setter and getter (`var hp: int: set(v): ...`).
FUNCTION_NODES = ("function_definition", "constructor_definition", "lambda", "set_body", "get_body")
SCOPE_NODES = FUNCTION_NODES + ("class_definition",)  # where a `var` lives


def _constructed_type(w: _Walker, value) -> str | None:
    """`Timer.new()` -> `Timer`; `preload(...)`, literals and other values -> None."""
    if value is None or value.type != "attribute":
        return None
    kids = [c for c in value.children if c.type != "."]
    if len(kids) == 2 and kids[0].type == "identifier" and kids[1].type == "attribute_call":
        ident = next((c for c in kids[1].children if c.type == "identifier"), None)
        if ident is not None and w.src(ident) == "new":
            return w.src(kids[0])
    return None


def _cast_type(w: _Walker, value) -> str | None:
    """`$Label as Label` -> `Label`: the type a value is cast to."""
    if value is None or value.type != "binary_operator" or len(value.children) != 3 or value.children[1].type != "as":
        return None
    typ = value.children[2]
    return _base_type(w.src(typ)) if typ.type in ("identifier", "type") else None


def _tree_sitter_facts(text: str) -> GDScriptFacts:
    data = text.encode("utf-8")
    tree = _parser().parse(data)
    w = _Walker(text, data)
    w.walk(tree.root_node)
    kw = w.facts_kw
    kw["parse_errors"] = sorted(set(kw["parse_errors"]))
    kw["comments"].sort()
    kw["strings"].sort()
    kw["node_paths"].sort()
    kw["chains"].sort(key=lambda c: c.root_start)
    kw["calls"].sort(key=lambda c: c.start)
    kw["names"].sort(key=lambda n: n.start)
    kw["markers"].sort(key=lambda m: m.line)
    return GDScriptFacts(text=text, parser="tree-sitter", extends=w.extends, class_name=w.class_name,
                         extends_path=w.extends_path, **kw)


# --------------------------------------------------------------------------------------
# regex fallback, for text the parser rejects
DECL_RE = re.compile(r"\b(?:var|const|for|signal|class|enum)\s+([A-Za-z_][A-Za-z0-9_]*)")
FUNC_RE = re.compile(r"\bfunc\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)")
PARAM_RE = re.compile(r"(?:^|,)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*([A-Za-z_][A-Za-z0-9_]*))?")
TYPED_VAR_RE = re.compile(r"\bvar\s+([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([A-Za-z_][A-Za-z0-9_]*)")
NEW_VAR_RE = re.compile(r"\bvar\s+([A-Za-z_][A-Za-z0-9_]*)\s*:?=\s*([A-Z][A-Za-z0-9_]*)\.new\s*\(")
ACCESS_RE = re.compile(r"(\$[A-Za-z0-9_/]+|[A-Za-z_][A-Za-z0-9_]*(?:\s*\([^()\n]*\))?)((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*\()?)+)")
BARE_CALL_RE = re.compile(r"(?<![A-Za-z0-9_.$])([A-Za-z_][A-Za-z0-9_]*)\s*\(")
MARKER_RES = [
    ("4", "@annotation", re.compile(r"(?m)^\s*@[a-z_]+")), ("4", "await", re.compile(r"\bawait\b")),
    ("4", "super()", re.compile(r"\bsuper\s*[.(]")),
    ("3", "export var", re.compile(r"(?m)^\s*export\b")), ("3", "onready var", re.compile(r"(?m)^\s*onready\s+var\b")),
    ("3", "yield()", re.compile(r"\byield\s*\(")), ("3", "setget", re.compile(r"\bsetget\b")),
    ("3", "tool keyword", re.compile(r"(?m)^tool\s*$")),
]


def _regex_facts(text: str, errors: list[int]) -> GDScriptFacts:
    strings, comments = [], []
    pos = 0
    # One left-to-right scan, so a `#` inside a string is not a comment and quotes in a comment are not strings.
    scan = re.compile(STRING_RE.pattern + "|" + COMMENT_RE.pattern)
    for m in scan.finditer(text, pos):
        s = m.group(0)
        if s.startswith("#"):
            comments.append((m.start(), m.end()))
        else:
            body = s.lstrip("&^")
            q = 3 if body.startswith(('"""', "'''")) else 1
            strings.append((m.start(), m.end(), body[q:-q]))
    facts = GDScriptFacts(text=text, parser="regex-fallback", parse_errors=errors, comments=comments, strings=strings)
    code = facts.code
    for m in DECL_RE.finditer(code):
        facts.declared.add(m.group(1))
        kind = m.group(0).split()[0]
        if kind != "for":
            line = facts.line_of_offset(m.start(1))
            indented = facts.line_text(line)[:1] in (" ", "\t")
            facts.declarations.append(Declaration(m.group(1), "class" if kind == "class" else kind, line, local=indented and kind == "var"))
    for m in re.finditer(rf"(?m)^class_name\s+({IDENT})", code):
        facts.class_name = m.group(1)
        facts.declarations.append(Declaration(m.group(1), "class_name", facts.line_of_offset(m.start(1))))
    for m in FUNC_RE.finditer(code):
        facts.functions.add(m.group(1))
        facts.declared.add(m.group(1))
        static = code[max(0, m.start() - 7):m.start()].strip() == "static"
        facts.declarations.append(Declaration(m.group(1), "static_func" if static else "func",
                                              facts.line_of_offset(m.start(1)), typed=":" in m.group(2)))
        for p in PARAM_RE.finditer(m.group(2)):
            facts.declared.add(p.group(1))
            facts.params.add(p.group(1))
            if p.group(2):
                facts.local_types[p.group(1)] = p.group(2)
    for m in TYPED_VAR_RE.finditer(code):
        facts.local_types[m.group(1)] = m.group(2)
    for m in NEW_VAR_RE.finditer(code):
        facts.local_types[m.group(1)] = m.group(2)
    ext = re.search(r"(?m)^extends\s+([A-Za-z_][A-Za-z0-9_]*)", code)
    facts.extends = ext.group(1) if ext else None
    for m in ACCESS_RE.finditer(code):
        head = m.group(1)
        if head.startswith("$"):
            kind, root = "get_node", ""
        elif "(" in head:
            kind, root = "call", head.split("(")[0].strip()
        else:
            kind, root = ("self", "self") if head == "self" else ("identifier", head)
        parts = []
        base = m.start(2)
        for pm in re.finditer(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)(\s*\()?", m.group(2)):
            at = base + pm.start(1)
            parts.append(Part(pm.group(1), bool(pm.group(2)), at, at + len(pm.group(1)),
                              facts.line_of_offset(at), facts.col_of_offset(at)))
        facts.chains.append(Chain(kind, root, m.start(), tuple(parts), m.group(0)))
    for m in BARE_CALL_RE.finditer(code):
        if m.group(1) in ("func", "if", "elif", "while", "for", "match", "return", "and", "or", "not"):
            continue
        facts.calls.append(Call(m.group(1), m.start(), m.end(1), facts.line_of_offset(m.start()), facts.col_of_offset(m.start())))
    for version, what, rx in MARKER_RES:
        for m in rx.finditer(code):
            facts.markers.append(Marker(version, what, facts.line_of_offset(m.start())))
    facts.markers.sort(key=lambda mk: mk.line)
    return facts


@lru_cache(maxsize=256)
def parse_chunk(text: str) -> GDScriptFacts:
    """The chunk's facts, parsed once per distinct text (the stages share the cached result)."""
    return parse_script(text)


def parse_script(text: str) -> GDScriptFacts:
    """The facts of a text, not cached: a whole file, read once (the project's symbol table)."""
    try:
        facts = _tree_sitter_facts(text)
    except Exception:  # noqa: BLE001 - a missing or broken parser must not stop retrieval
        return _regex_facts(text, [])
    if facts.parse_errors:
        # Error recovery keeps most of the tree, but a chunk that is mostly errors is better read by regex.
        n_lines = max(1, text.count("\n") + 1)
        if len(facts.parse_errors) > n_lines / 4:
            return _regex_facts(text, facts.parse_errors)
    return facts
