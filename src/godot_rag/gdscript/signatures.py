"""A signature as the class reference writes it, `name(a: int, b: float = 1.0, ...) const`: its parameters with
their types and defaults, vararg and qualifiers. The class reference keeps each signature as that text (a string
loads far faster than nested lists); it is parsed here when a check reads it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

SIGNATURE_RE = re.compile(r"^(?P<name>@?[A-Za-z_][A-Za-z0-9_]*)\((?P<params>.*)\)(?P<quals>(?:\s+[a-z]+)*)\s*$")
PARAM_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<type>[^=]+?)\s*(?:=\s*(?P<default>.+))?$")
VARARG = "..."
OPENING, CLOSING = "([{", ")]}"
PARSED_CACHED = 4096  # distinct signature texts kept parsed


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    default: str | None  # as the reference writes it; None: the argument is required


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    vararg: bool
    qualifiers: tuple[str, ...]

    @property
    def min_args(self) -> int:
        return sum(1 for p in self.params if p.default is None)

    @property
    def max_args(self) -> int | None:
        """The most arguments it takes; None: any number (vararg)."""
        return None if self.vararg else len(self.params)

    def accepts(self, count: int) -> bool:
        top = self.max_args
        return self.min_args <= count and (top is None or count <= top)

    def text(self, name: str) -> str:
        """`name(a: int, b: float = 1.0, ...)`, as the reference writes it."""
        parts = [f"{p.name}: {p.type}" + (f" = {p.default}" if p.default is not None else "") for p in self.params]
        return f"{name}({', '.join(parts + ([VARARG] if self.vararg else []))})"


def split_params(text: str) -> list[str]:
    """The parameters of a signature's parentheses, cut at the commas outside brackets and quotes."""
    out: list[str] = []
    depth, quote, start = 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in OPENING:
            depth += 1
        elif ch in CLOSING:
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


@lru_cache(maxsize=PARSED_CACHED)
def parse_signature(text: str) -> tuple[str, Signature] | None:
    """(name, signature) of `name(a: int, b: float = 1.0, ...) const`, or None when the text is no signature."""
    m = SIGNATURE_RE.match(text.replace("**", "").strip())
    if m is None:
        return None
    params: list[Param] = []
    vararg = False
    for part in split_params(m.group("params")):
        if part == VARARG:
            vararg = True
        elif p := PARAM_RE.match(part):
            params.append(Param(p.group("name"), p.group("type"), p.group("default")))
        else:
            return None
    quals = m.group("quals").split()
    return m.group("name"), Signature(tuple(params), vararg or "vararg" in quals,
                                      tuple(q for q in quals if q != "vararg"))
