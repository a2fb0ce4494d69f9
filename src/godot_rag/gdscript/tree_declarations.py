"""The tree walk's declaration handlers: the names a script declares (vars, consts, functions and their
parameters, `for` variables, classes, signals, enums, `class_name`, `extends`), the types it gives them, the
bindings `binding_at` reads, and the `is` tests that narrow a name's type."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .elements import Marker
from .tree_nodes import LITERAL_TYPES, VALUE_CALL_NODES, base_type, child_of_type, param_idents
from .tree_walk import TreeWalk

if TYPE_CHECKING:
    from tree_sitter import Node


class DeclarationWalk(TreeWalk):
    def constructed_type(self, value: Node | None) -> str | None:
        """`Timer.new()` -> `Timer`; `preload(...)`, literals and other values -> None."""
        if value is None or value.type != "attribute":
            return None
        kids = [c for c in value.children if c.type != "."]
        if len(kids) == 2 and kids[0].type == "identifier" and kids[1].type == "attribute_call":
            ident = child_of_type(kids[1], "identifier")
            if ident is not None and self.src(ident) == "new":
                return self.src(kids[0])
        return None

    def cast_type(self, value: Node | None) -> str | None:
        """`$Label as Label` -> `Label`: the type a value is cast to."""
        if value is None or value.type != "binary_operator" or len(value.children) != 3 or value.children[1].type != "as":
            return None
        typ = value.children[2]
        return base_type(self.src(typ)) if typ.type in ("identifier", "type") else None

    def _var(self, node: Node) -> None:
        name = node.child_by_field_name("name") or child_of_type(node, "name")
        if name is None:
            return
        n = self.src(name)
        kind = "const" if node.type == "const_statement" else "var"
        self.fields["declared"].add(n)
        typ = child_of_type(node, "type")
        if typ is not None:
            self.fields["local_types"][n] = base_type(self.src(typ))
            self.declare(name, kind, node, type=self.fields["local_types"][n])
            self.bind(name, node)
            return
        self._untyped_var(name, kind, node)

    def _untyped_var(self, name: Node, kind: str, node: Node) -> None:
        """A `var` or `const` without a stated type: its type from its value (constructed, a literal, a cast), and
        where a value that is a call starts (the resolver types it by the call's return type)."""
        n = self.src(name)
        value = node.children[-1] if node.children else None
        ctor = self.constructed_type(value)
        called = value is not None and value.type in VALUE_CALL_NODES
        cast = None if ctor or called else self.cast_type(value)
        self.declare(name, kind, node, type=ctor or cast)
        if ctor:
            self.fields["local_types"][n] = ctor
        elif value is not None and value.type in LITERAL_TYPES:
            self.fields["literal_types"][n] = LITERAL_TYPES[value.type]
        elif value is not None and (called or cast):
            self.bind(name, node, value_start=self.pos(value.start_byte) if called else None, cast=cast)
            return
        self.bind(name, node)

    def on_assignment(self, node: Node) -> None:
        target = node.children[0] if node.children else None
        if target is not None and target.type == "identifier":
            self.fields["assigned"].append((self.src(target), self.pos(target.start_byte)))

    def on_variable_statement(self, node: Node) -> None:
        self._var(node)
        for c in node.children:
            if c.type == "setget":
                self.fields["markers"].append(Marker("3", "setget", self.line(c)))

    def on_const_statement(self, node: Node) -> None:
        self._var(node)

    def on_export_variable_statement(self, node: Node) -> None:
        self._var(node)
        self.fields["markers"].append(Marker("3", "export var", self.line(node)))

    def on_onready_variable_statement(self, node: Node) -> None:
        self._var(node)
        self.fields["markers"].append(Marker("3", "onready var", self.line(node)))

    def on_setget(self, node: Node) -> None:
        self.fields["markers"].append(Marker("3", "setget", self.line(node)))

    def on_function_definition(self, node: Node) -> None:
        name = child_of_type(node, "name")
        params = child_of_type(node, "parameters")
        if name is not None:
            self.fields["functions"].add(self.src(name))
            self.fields["declared"].add(self.src(name))
            if node.type == "function_definition":
                static = any(c.type == "static_keyword" for c in node.children)
                typed = any(c.type == "type" for c in node.children) or any(
                    p.type in ("typed_parameter", "typed_default_parameter") for p in (params.children if params else []))
                self.declare(name, "static_func" if static else "func", node, typed=typed)
        if params is not None:
            for p, ident in param_idents(params):
                n = self.src(ident)
                self.fields["declared"].add(n)
                self.fields["params"].add(n)
                self.bind(ident, node, scope=node)
                typ = child_of_type(p, "type")
                if typ is not None:
                    self.fields["local_types"][n] = base_type(self.src(typ))

    def on_lambda(self, node: Node) -> None:
        self.fields["markers"].append(Marker("4", "lambda func", self.line(node)))
        self.on_function_definition(node)

    def on_constructor_definition(self, node: Node) -> None:
        """`func _init(a, b):` and a setter's `set(value):`: their parameters are declared, and bind their names in
        them (for `binding_at`)."""
        params = child_of_type(node, "parameters")
        for _, ident in param_idents(params) if params is not None else []:
            self.fields["declared"].add(self.src(ident))
            self.fields["params"].add(self.src(ident))
            self.bind(ident, node, scope=node)

    on_set_body = on_constructor_definition

    def on_for_statement(self, node: Node) -> None:
        ident = child_of_type(node, "identifier")
        if ident is not None:
            self.fields["declared"].add(self.src(ident))
            self.bind(ident, node, scope=node)
        typ = child_of_type(node, "type")
        if typ is not None and ident is not None:
            self.fields["markers"].append(Marker("4", "typed for loop variable", self.line(node)))
            self.fields["local_types"][self.src(ident)] = base_type(self.src(typ))

    def _narrow(self, clause: Node) -> None:
        """`if x is T:` / `elif x is T and ...:`: x is a T from the test to the end of the clause's body."""
        cond = next((c for c in clause.children if c.type not in ("if", "elif", ":", "comment")), None)
        body = child_of_type(clause, "body")
        while cond is not None and body is not None and cond.type == "binary_operator":
            op = child_of_type(cond, "is", "and", "&&")
            if op is None:
                return
            left, right = cond.children[0], cond.children[-1]
            if op.type == "is":
                if left.type == "identifier" and right.type in ("identifier", "type"):
                    self.fields["narrowed"].append((self.src(left), base_type(self.src(right)),
                                                    self.pos(cond.end_byte), self.pos(body.end_byte)))
                return
            cond = left  # `x is T and x.m`: the test on the left holds for the right and the body

    def on_if_statement(self, node: Node) -> None:
        self._narrow(node)

    def on_elif_clause(self, node: Node) -> None:
        self._narrow(node)

    def on_class_definition(self, node: Node) -> None:
        name = child_of_type(node, "name")
        if name is not None:
            self.fields["declared"].add(self.src(name))
            ext = child_of_type(node, "extends_statement")
            typ = child_of_type(ext, "type", "string") if ext is not None else None
            parent = None if typ is None else (base_type(self.src(typ)) if typ.type == "type" else self.src(typ).strip("\"'"))
            self.declare(name, "class", node, extends=parent)

    def on_signal_statement(self, node: Node) -> None:
        name = child_of_type(node, "name")
        if name is not None:
            self.fields["declared"].add(self.src(name))
            self.declare(name, "signal", node)

    def on_enum_definition(self, node: Node) -> None:
        name = child_of_type(node, "name")
        if name is not None:
            self.fields["declared"].add(self.src(name))
            self.declare(name, "enum", node)
        for c in node.children:
            if c.type != "enumerator_list":
                continue
            for e in c.children:
                left = e.children[0] if e.type == "enumerator" and e.children else None
                if left is not None and left.type == "identifier":
                    self.fields["declared"].add(self.src(left))
                    self.declare(left, "enum_value", node)

    def on_class_name_statement(self, node: Node) -> None:
        name = child_of_type(node, "name")
        if name is not None:
            class_name = self.src(name)
            self.fields["class_name"] = class_name
            self.fields["declared"].add(class_name)
            self.declare(name, "class_name", node)

    def on_extends_statement(self, node: Node) -> bool:
        typ = child_of_type(node, "type", "string")
        # Only the script's own `extends`: an inner class's has a parent class_definition.
        if typ is not None and (node.parent is None or node.parent.type == "source"):
            if typ.type == "type":
                self.fields["extends"] = base_type(self.src(typ))
            else:
                self.fields["extends_path"] = self.src(typ).strip("\"'")
        return False
