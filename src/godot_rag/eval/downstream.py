"""Scoring a downstream model's answers with our own parser and class reference (bench/downstream.py).

Task M (migration): the model ports a Godot 3 chunk; its code is read with the same GDScript facts and
resolver the retriever uses, never by string match alone. Task R (review): the model lists migration
problems as JSON; on valid Godot 4 code every claim is false, on Godot 3 code claims meet the gold.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ..gdscript.classref import ClassReference
from ..gdscript.facts import parse_chunk
from ..gdscript.lexicon import bounded
from ..gdscript.resolve import resolve_uses

CODE_BLOCK_RE = re.compile(r"```[a-zA-Z0-9_]*\n(.*?)(?:```|$)", re.S)
PROBLEMS_HEAD_RE = re.compile(r'\{\s*"problems"\s*:\s*\[')
FLAT_OBJECT_RE = re.compile(r"\{[^{}]*\}")
BOOTSTRAP_ROUNDS = 1000
CONFIDENCE = 0.95


def code_of(answer: str) -> str:
    """The first fenced code block of an answer, or the whole answer when it has none."""
    m = CODE_BLOCK_RE.search(answer)
    return (m.group(1) if m else answer).strip("\n")


def _uses(code: str, name: str) -> bool:
    return bool(bounded(name).search(code))


@dataclass
class PortScore:
    """One ported chunk, measured."""
    renamed: int  # gold pairs whose new name is used and old name gone, in code
    gold: int
    leftovers: list[str] = field(default_factory=list)  # Godot 3 names Godot 4 has nowhere
    invented: list[str] = field(default_factory=list)  # Class.member uses that resolve to nothing
    parse_failed: bool = False

    def to_dict(self) -> dict:
        return {"renamed": self.renamed, "gold": self.gold, "leftovers": self.leftovers, "invented": self.invented,
                "parse_failed": self.parse_failed}


def score_port(answer: str, gold: list[tuple[str, str, str]], ref: ClassReference, godot3_names: AbstractSet[str]) -> PortScore:
    code = code_of(answer)
    facts = parse_chunk(code)
    plain = facts.code  # comments and strings blanked
    renamed = sum(1 for _, old, new in gold if _uses(plain, new) and not _uses(plain, old))
    leftovers = sorted(n for n in facts.identifiers & godot3_names if not ref.exists(n) and not ref.has_class(n))
    invented = sorted({f"{u.missing_on}.{u.name}" for u in resolve_uses(facts, ref).missing()})
    failed = bool(facts.parse_errors) or facts.parser != "tree-sitter" or not code.strip()
    return PortScore(renamed, len(gold), leftovers, invented, failed)


def claims_of(answer: str) -> list[dict] | None:
    """The problems a review answer lists; None when the answer is no JSON object with a `problems` list.
    The first JSON object counts (text after it is ignored); an answer cut off by its token limit inside
    the list counts by its complete problems."""
    start = answer.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(answer[start:])
    except json.JSONDecodeError:
        head = PROBLEMS_HEAD_RE.match(answer[start:])
        if not head:
            return None
        rest = answer[start + head.end():]
        cut = [c for c in (_loads(m.group(0)) for m in FLAT_OBJECT_RE.finditer(rest)) if isinstance(c, dict)]
        return cut if cut or "{" not in rest else None  # a first problem cut off is no answer
    problems = data.get("problems") if isinstance(data, dict) else None
    return [p for p in problems if isinstance(p, dict)] if isinstance(problems, list) else None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def claim_text(claim: dict) -> str:
    return " ".join(str(v) for v in claim.values())


def score_review(answer: str, gold: list[tuple[str, str, str]]) -> dict:
    """Claims, and on a chunk with gold: which gold old names the claims name, and claims naming none."""
    claims = claims_of(answer)
    listed = claims or []
    found = {old for _, old, _ in gold if any(_uses(claim_text(c), old) for c in listed)}
    unmatched = [c for c in listed if not any(_uses(claim_text(c), old) for _, old, _ in gold)]
    return {"claims": len(listed), "parsed": claims is not None, "gold": len({old for _, old, _ in gold}),
            "found": len(found), "unmatched": len(unmatched)}


def bootstrap(values: list[float], seed: int, rounds: int = BOOTSTRAP_ROUNDS) -> tuple[float, float, float]:
    """Mean with a percentile bootstrap interval over items."""
    if not values:
        return (float("nan"),) * 3
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    lo = means[int((1 - CONFIDENCE) / 2 * rounds)]
    hi = means[min(rounds - 1, int((1 + CONFIDENCE) / 2 * rounds))]
    return sum(values) / n, lo, hi


def ratio_bootstrap(num: list[float], den: list[float], seed: int, rounds: int = BOOTSTRAP_ROUNDS) -> tuple[float, float, float]:
    """sum(num)/sum(den) (a micro average, e.g. rename recall over pairs) with items resampled."""
    if not den or sum(den) == 0:
        return (float("nan"),) * 3
    rng = random.Random(seed)
    n = len(den)
    stats = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        d = sum(den[i] for i in idx)
        stats.append(sum(num[i] for i in idx) / d if d else 0.0)
    stats.sort()
    return (sum(num) / sum(den), stats[int((1 - CONFIDENCE) / 2 * rounds)],
            stats[min(rounds - 1, int((1 + CONFIDENCE) / 2 * rounds))])
