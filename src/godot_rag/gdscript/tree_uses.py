"""The tree walk's region and use handlers (comments, strings, node paths; bare names, bare calls, access
chains; annotations and the syntax of one Godot version), and `tree_sitter_fields`, the walk of a whole text."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .elements import Call, Chain, Marker, Name, Part, ScriptFields
from .tree_declarations import DeclarationWalk
from .tree_nodes import STRING_NODES, child_of_type, gdscript_parser, names_a_value

if TYPE_CHECKING:
    from tree_sitter import Node

PUNCTUATION = ("(", ")", ",")  # an argument list's nodes that are no argument


class FactsWalk(DeclarationWalk):
    # -- regions
    def on_comment(self, node: Node) -> bool:
        self.fields["comments"].append((self.pos(node.start_byte), self.pos(node.end_byte)))
        return False

    def _string(self, node: Node) -> bool:
        s, e = self.pos(node.start_byte), self.pos(node.end_byte)
        raw = self.text[s:e]
        value = raw.lstrip("&^")
        q = 3 if value.startswith(('"""', "'''")) else 1
        self.fields["strings"].append((s, e, value[q:-q] if len(value) >= 2 * q else ""))
        return False

    def on_get_node(self, node: Node) -> bool:
        # `$Skeleton/Arm` and `%Unique` name nodes of the scene, not classes: a path, like a string.
        s, e = self.pos(node.start_byte), self.pos(node.end_byte)
        self.fields["node_paths"].append((s, e))
        return False

    def on_string(self, node: Node) -> bool:
        return self._string(node)

    def on_string_name(self, node: Node) -> bool:
        self.fields["markers"].append(Marker("4", '&"StringName" literal', self.line(node)))
        return self._string(node)

    def on_node_path(self, node: Node) -> bool:
        if self.src(node).startswith("^"):
            self.fields["markers"].append(Marker("4", '^"NodePath" literal', self.line(node)))
        return self._string(node)

    # -- markers
    def on_annotation(self, node: Node) -> None:
        ident = child_of_type(node, "identifier")
        if ident is not None:
            name = self.src(ident)
            self.fields["annotations"].append((name, self.line(node)))
            self.fields["markers"].append(Marker("4", f"@{name} annotation", self.line(node)))

    def on_expression_statement(self, node: Node) -> None:
        # Godot 3's `tool` keyword parses as a lone identifier statement at the top of a script.
        if (len(node.children) == 1 and node.children[0].type == "identifier" and self.src(node) == "tool"
                and node.parent is not None and node.parent.type == "source"):
            self.fields["markers"].append(Marker("3", "tool keyword", self.line(node)))

    def on_await_expression(self, node: Node) -> None:
        self.fields["markers"].append(Marker("4", "await", self.line(node)))

    # -- uses
    def on_identifier(self, node: Node) -> bool:
        if names_a_value(node):
            self.fields["names"].append(Name(self.src(node), self.pos(node.start_byte), self.line(node), self.col(node)))
        return False

    def on_call(self, node: Node) -> None:
        callee = node.children[0] if node.children else None
        if callee is None or callee.type not in ("identifier", "super"):
            return
        name = self.src(callee)
        args = child_of_type(node, "arguments")
        kinds = tuple(c.type for c in (args.children if args is not None else []) if c.type not in PUNCTUATION)
        s = self.pos(node.start_byte)
        self.fields["calls"].append(Call(name, s, self.pos(callee.end_byte), self.line(node), self.col(node), kinds[:4]))
        if name == "yield":
            self.fields["markers"].append(Marker("3", "yield()", self.line(node)))
        elif name == "super":
            self.fields["markers"].append(Marker("4", "super()", self.line(node)))
        elif name == "connect" and len(kinds) >= 3 and kinds[0] == "string" and kinds[2] == "string":
            self.fields["markers"].append(Marker("3", 'connect("signal", target, "method")', self.line(node)))

    def on_attribute(self, node: Node) -> None:
        kids = [c for c in node.children if c.type != "."]
        if not kids:
            return
        kind, name = self._chain_root(kids[0])
        parts, complete = self._chain_parts(kids[1:])
        if kind == "super":
            self.fields["markers"].append(Marker("4", "super.method()", self.line(node)))
        s = self.pos(node.start_byte)
        self.fields["chains"].append(Chain(kind, name, s, tuple(parts), self.src(node), complete))

    def _chain_root(self, root: Node) -> tuple[str, str]:
        """(kind, name) of a chain's receiver: see `Chain.root_kind`."""
        if root.type == "identifier":
            name = self.src(root)
            return ("self" if name == "self" else "identifier"), name
        if root.type in ("self", "super"):
            return root.type, root.type
        if root.type == "call":
            callee = root.children[0] if root.children else None
            return ("call", self.src(callee)) if callee is not None and callee.type == "identifier" else ("other", "")
        if root.type == "get_node":
            return "get_node", ""
        return ("string" if root.type in STRING_NODES else "other"), ""

    def _chain_parts(self, links: list[Node]) -> tuple[list[Part], bool]:
        """The links of a chain after its receiver, and whether they are all of it: subscripts and other forms
        end what we can follow."""
        parts = []
        for k in links:
            if k.type == "identifier":
                parts.append(Part(self.src(k), False, self.pos(k.start_byte), self.pos(k.end_byte), self.line(k), self.col(k)))
                continue
            ident = child_of_type(k, "identifier") if k.type == "attribute_call" else None
            if ident is None:
                return parts, False
            n = self.src(ident)
            parts.append(Part(n, True, self.pos(ident.start_byte), self.pos(ident.end_byte), self.line(ident), self.col(ident)))
            if n == "connect":
                self._connect_marker(k)
        return parts, True

    def _connect_marker(self, call: Node) -> None:
        """`x.connect(...)`: a callable argument is Godot 4's; a signal name, a target and a method name, Godot 3's."""
        args = child_of_type(call, "arguments")
        values = [c for c in args.children if c.type not in PUNCTUATION] if args is not None else []
        if not values:
            return
        if values[0].type not in STRING_NODES:
            self.fields["markers"].append(Marker("4", "signal.connect(callable)", self.line(call)))
        elif len(values) >= 3 and values[2].type in STRING_NODES:
            self.fields["markers"].append(Marker("3", 'connect("signal", target, "method")', self.line(call)))


def tree_sitter_fields(text: str) -> ScriptFields:
    """The facts tree-sitter-gdscript finds in `text`, each list in text order."""
    data = text.encode("utf-8")
    tree = gdscript_parser().parse(data)
    walk = FactsWalk(text, data)
    walk.walk(tree.root_node)
    fields = walk.fields
    fields["parse_errors"] = sorted(set(fields["parse_errors"]))
    fields["comments"].sort()
    fields["strings"].sort()
    fields["node_paths"].sort()
    fields["chains"].sort(key=lambda c: c.root_start)
    fields["calls"].sort(key=lambda c: c.start)
    fields["names"].sort(key=lambda n: n.start)
    fields["markers"].sort(key=lambda m: m.line)
    return fields
