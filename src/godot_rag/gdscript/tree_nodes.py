"""tree-sitter-gdscript's side: the parser, the grammar's node types the facts read, and what a node is
(a parameter's name, a value read, a construct, a type as written)."""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

KEYWORD_NODE = "_keyword"  # how tree-sitter-gdscript names a modifier keyword's node (`static_keyword`)
STRING_NODES = {"string", "string_name", "node_path"}
VAR_NODES = {"variable_statement", "export_variable_statement", "onready_variable_statement", "const_statement"}
PARAM_NODES = {"typed_parameter", "default_parameter", "typed_default_parameter"}
# Parents under which an identifier is never a value the script reads: types, annotations, match patterns,
# `setget` accessors, and the parts of chains and calls (the chain and call facts hold those).
NOT_VALUE_PARENTS = {"type", "annotation", "pattern_section", "attribute_call", "attribute", "setget", "enumerator",
                     "extends_statement", "class_name_statement", "signal_statement", "parameters"}
# Parents whose first identifier child is a name being declared (a parameter, the loop variable), or the callee.
FIRST_IS_NOT_VALUE = PARAM_NODES | {"for_statement", "call"}
# Literal values whose type is plain from the syntax.
LITERAL_TYPES = {"array": "Array", "dictionary": "Dictionary", "string": "String"}
VALUE_CALL_NODES = ("call", "attribute")  # a value that is a bare call or a call chain: its type is a return type
# Bodies whose `var`s are locals: functions, lambdas, and a property's setter and getter (`var hp: int: set(v): ...`).
FUNCTION_NODES = ("function_definition", "constructor_definition", "lambda", "set_body", "get_body")
SCOPE_NODES = (*FUNCTION_NODES, "class_definition")  # where a `var` lives


@lru_cache(maxsize=1)
def gdscript_parser() -> Parser:
    """The one tree-sitter-gdscript parser of the project (the scan's chunker reads it too). Imported here, when
    first parsed: without the package, parsing falls back to regular expressions instead of failing at import."""
    import tree_sitter
    import tree_sitter_gdscript

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_gdscript.language()))


def child_of_type(node: Node, *types: str) -> Node | None:
    """The node's first child of one of `types`, or None."""
    return next((c for c in node.children if c.type in types), None)


def param_idents(params: Node) -> list[tuple[Node, Node]]:
    """(parameter node, its name's identifier node) of each parameter of a `parameters` node."""
    out = []
    for p in params.children:
        ident = p if p.type == "identifier" else child_of_type(p, "identifier")
        if ident is not None and p.type in PARAM_NODES | {"identifier"}:
            out.append((p, ident))
    return out


def construct_name(node: Node) -> str:
    """A named node's construct: its grammar type, and for a keyword node (`static_keyword`) the node it modifies
    too, as `parent/keyword`: a static function and a static variable are two constructs, taught by two sections."""
    t = node.type
    return f"{node.parent.type}/{t}" if t.endswith(KEYWORD_NODE) and node.parent is not None else t


def names_a_value(node: Node) -> bool:
    """Whether an identifier node is a bare name read or written as a value (`velocity` in `velocity = v`)."""
    parent = node.parent
    if parent is None or parent.type in NOT_VALUE_PARENTS:
        return False
    if parent.type in FIRST_IS_NOT_VALUE:
        return child_of_type(parent, "identifier") != node
    if parent.type == "pair":  # `{key = value}`: the key is a name, not a read
        return not (parent.children and parent.children[0] == node and len(parent.children) > 1
                    and parent.children[1].type == "=")
    return True


def byte_to_char(text: str) -> list[int]:
    """The character offset of each UTF-8 byte of `text` (and of its end)."""
    out = []
    for i, ch in enumerate(text):
        out.extend([i] * len(ch.encode("utf-8")))
    out.append(len(text))
    return out


def base_type(t: str) -> str:
    """`Array[Node]` -> `Array`; `Dictionary[String, int]` -> `Dictionary`; `Outer . Inner` (spaces, a line
    continuation) -> `Outer.Inner`."""
    return "".join(t.split("[", 1)[0].replace("\\", " ").split())
