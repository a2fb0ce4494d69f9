"""The walk over a tree-sitter-gdscript tree that collects a chunk's facts: the walker's state, positions
(bytes to characters, lines, columns), scopes, and the dispatch of each node to its `on_<type>` handler.
The handlers live in `tree_declarations` (what the script declares) and `tree_uses` (regions and uses)."""
from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, Unpack

from .elements import Binding, Declaration, ScriptFields, empty_fields
from .tree_nodes import FUNCTION_NODES, SCOPE_NODES, byte_to_char, child_of_type, construct_name

if TYPE_CHECKING:
    from tree_sitter import Node

LOCAL_SCOPE = "<local>"  # `scope()` of a node inside a function: a local, in no class


class DeclarationDetails(TypedDict, total=False):
    """What one kind of declaration states (see `Declaration`): a class its parent, a function whether it is
    typed, a var or const its type."""
    extends: str | None
    typed: bool
    type: str | None


class TreeWalk:
    """The state and the positions every handler reads; `walk` calls `on_<node type>(node)` for each node, and
    does not descend into a node whose handler returns False."""

    def __init__(self, text: str, data: bytes) -> None:
        self.text = text
        self.data = data
        ascii_only = len(data) == len(text)
        self._b2c = None if ascii_only else byte_to_char(text)
        self.fields: ScriptFields = empty_fields()

    def pos(self, byte: int) -> int:
        return byte if self._b2c is None else self._b2c[byte]

    def src(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def line(self, node: Node) -> int:
        return node.start_point[0] + 1

    def col(self, node: Node) -> int:
        s = self.pos(node.start_byte)
        return s - (self.text.rfind("\n", 0, s) + 1) + 1

    def scope(self, node: Node) -> str:
        """The inner classes around a node (`Outer.Inner`), '' at the script's top level."""
        names = []
        p = node.parent
        while p is not None:
            if p.type in FUNCTION_NODES:
                return LOCAL_SCOPE
            if p.type == "class_definition":
                n = child_of_type(p, "name")
                if n is not None:
                    names.append(self.src(n))
            p = p.parent
        return ".".join(reversed(names))

    def declare(self, name_node: Node, kind: str, node: Node, **details: Unpack[DeclarationDetails]) -> None:
        """The declaration of the name at `name_node`, in the scope around `node`."""
        scope = self.scope(node)
        local = scope == LOCAL_SCOPE
        self.fields["declarations"].append(Declaration(self.src(name_node), kind, self.line(name_node), "" if local else scope,
                                                       local=local, **details))

    def bind(self, name_node: Node, node: Node, scope: Node | None = None, *, value_start: int | None = None,
             cast: str | None = None) -> None:
        """A binding of the name at `name_node`, in the scope around `node` (or `scope`, a node)."""
        if scope is None:
            scope = node.parent
            while scope is not None and scope.type not in SCOPE_NODES:
                scope = scope.parent
        start, end = (self.pos(scope.start_byte), self.pos(scope.end_byte)) if scope is not None else (0, len(self.text))
        self.fields["bindings"].append(Binding(self.src(name_node), self.pos(name_node.start_byte), start, end,
                                               value_start=value_start, cast=cast))

    def walk(self, root: Node) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "ERROR" or node.is_missing:
                self.fields["parse_errors"].append(self.line(node))
            elif node.is_named:
                self.fields["constructs"].add(construct_name(node))
            handler = getattr(self, "on_" + t, None)
            if handler is not None and handler(node) is False:
                continue
            stack.extend(reversed(node.children))
