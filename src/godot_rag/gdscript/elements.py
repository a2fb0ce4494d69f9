"""The parts of a chunk's GDScript facts: access chains and their links, bare calls and names, declarations,
bindings and version markers; and `ScriptFields`, what a parser (tree-sitter or the regex fallback) collects
before `GDScriptFacts` is built from it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict


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



class ScriptFields(TypedDict):
    """What a parser collects of a text: `GDScriptFacts`'s fields but the text and the parser's name."""
    parse_errors: list[int]
    comments: list[tuple[int, int]]
    strings: list[tuple[int, int, str]]
    node_paths: list[tuple[int, int]]
    chains: list[Chain]
    calls: list[Call]
    names: list[Name]
    declared: set[str]
    params: set[str]
    functions: set[str]
    local_types: dict[str, str]
    literal_types: dict[str, str]
    bindings: list[Binding]
    assigned: list[tuple[str, int]]
    annotations: list[tuple[str, int]]
    extends: str | None
    class_name: str | None
    markers: list[Marker]
    declarations: list[Declaration]
    extends_path: str | None
    constructs: set[str]
    narrowed: list[tuple[str, str, int, int]]


def empty_fields() -> ScriptFields:
    """Nothing collected yet."""
    return ScriptFields(parse_errors=[], comments=[], strings=[], node_paths=[], chains=[], calls=[], names=[],
                        declared=set(), params=set(), functions=set(), local_types={}, literal_types={}, bindings=[],
                        assigned=[], annotations=[], extends=None, class_name=None, markers=[], declarations=[],
                        extends_path=None, constructs=set(), narrowed=[])
