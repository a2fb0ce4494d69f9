"""Code-aware tokenizer for raw GDScript and for the docs it is matched against.

Rule (the same for queries and documents):
- identifiers (`[A-Za-z_][A-Za-z0-9_]*`) are kept whole and lowercased:
  `is_action_pressed`, `animatedsprite2d`, `screen_size`, `_process`;
- the text of string literals is tokenized like code, so `"move_right"` and
  `&"move_right"` both give `move_right`;
- numbers, punctuation and operators are dropped, and so are one-letter
  identifiers (`x`, `i`): they carry no evidence;
- optional `parts` adds the pieces of snake_case and camelCase identifiers
  (`is`, `action`, `pressed`), and optional `dotted` adds member chains
  (`position.clamp`). `godot-rag eval` measures both; see the README.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Protocol

from .lexicon import CHAIN_RE, IDENT, IDENT_RE

CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+[A-Za-z]*")


@dataclass(frozen=True)
class TokenizerConfig:
    parts: bool = False
    dotted: bool = False
    min_len: int = 2

    def key(self) -> str:
        return f"parts={int(self.parts)},dotted={int(self.dotted)},min_len={self.min_len}"


DEFAULT = TokenizerConfig()


def identifier_parts(ident: str) -> list[str]:
    pieces = []
    for snake in ident.split("_"):
        pieces.extend(CAMEL_RE.findall(snake))
    return [p.lower() for p in pieces]


def tokenize(text: str, config: TokenizerConfig = DEFAULT) -> list[str]:
    out: list[str] = []
    for m in IDENT_RE.finditer(text):
        ident = m.group(0)
        if len(ident) >= config.min_len:
            out.append(ident.lower())
        if config.parts:
            parts = identifier_parts(ident)
            if len(parts) > 1:
                out.extend(p for p in parts if len(p) >= config.min_len)
    if config.dotted:
        for m in CHAIN_RE.finditer(text):
            names = m.group(0).lower().split(".")
            out.extend(f"{a}.{b}" for a, b in pairwise(names))
    return out


DECL_RE = re.compile(rf"\b(?:var|const|for)\s+({IDENT})")
FUNC_RE = re.compile(rf"\bfunc\s+{IDENT}\s*\(([^)]*)\)")
PARAM_RE = re.compile(rf"(?:^|,)\s*({IDENT})")


def declared_names(text: str) -> set[str]:
    """Names declared with `var`, `const` or `for x in`, case kept."""
    return set(DECL_RE.findall(text))


def local_names(text: str) -> set[str]:
    """Names the chunk declares itself (`var x`, `const X`, `for x in`, function parameters).

    Their spelling is the author's choice, so they say little about which doc is
    right; BM25 weighs them down (`local_weight`) instead of trusting a rare
    spelling such as `v1` or `my_timer`. Tokens are lowercased, so a name counts as local only when
    every spelling of it in the chunk is a declared one: `var sprite = $Top/Sprite` still names the
    class `Sprite`."""
    declared = set(declared_names(text))
    for m in FUNC_RE.finditer(text):
        declared |= {p.group(1) for p in PARAM_RE.finditer(m.group(1))}
    spellings: dict[str, set[str]] = {}
    for m in IDENT_RE.finditer(text):
        spellings.setdefault(m.group(0).lower(), set()).add(m.group(0))
    return {n.lower() for n in declared if spellings.get(n.lower(), {n}) <= declared}


def local_weights(chunk: str, local_weight: float) -> dict[str, float] | None:
    """BM25 query-term weights for the names the chunk declares itself (None when not down-weighted)."""
    if local_weight == 1.0:
        return None
    return {n: local_weight for n in local_names(chunk)}


class TokenizerSettings(Protocol):
    """The settings a tokenizer is made from (a retrieve config has them; this package does not import it)."""
    tokenizer_parts: bool
    tokenizer_dotted: bool


def tokenizer_of(cfg: TokenizerSettings) -> TokenizerConfig:
    return TokenizerConfig(parts=cfg.tokenizer_parts, dotted=cfg.tokenizer_dotted)
