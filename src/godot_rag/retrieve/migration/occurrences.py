"""The occurrence pass of the version stage: every literal occurrence of an api_mapping candidate's Godot 3 name
in the chunk, each with its version decision (`version_rules.classify_in_context`), before any verdict."""
from __future__ import annotations

import re
from typing import Any

from ...gdscript.facts import GDScriptFacts
from ..engine.trace import Occurrence
from ..engine.types import Candidate
from ..recall.prefilter import source_absent
from .version_occurrence import ChunkScope
from .version_rules import classify_in_context

# Characters quoted (display only): a syntax change's match, a negative pattern in a reason.
SYNTAX_QUOTED, NEGATIVE_QUOTED = 60, 50

# api_mapping candidate id -> each occurrence of its source_api, with the version decision (the version stage's)
Occurrences = dict[str, list[Occurrence]]


def _regex_hits(facts: GDScriptFacts, patterns: list[str]) -> list[dict[str, Any]]:
    """Occurrences of syntax-change patterns, matched on the code with comments removed."""
    out = []
    for rx in patterns:
        for m in re.finditer(rx, facts.no_comments):
            if facts.region(m.start()) != "code":
                continue
            out.append({"start": m.start(), "end": m.end(), "line": facts.line_of_offset(m.start()),
                        "col": facts.col_of_offset(m.start()), "region": "code", "literal": m.group(0)[:SYNTAX_QUOTED]})
    return out


def _claimed(facts: GDScriptFacts, patterns: list[str], start: int, end: int) -> str | None:
    for neg in patterns:
        for m in re.finditer(neg, facts.no_comments):
            if m.start() <= start < m.end() or start <= m.start() < end:
                return neg
    return None


def _overrides_virtual(p: dict[str, Any], facts: GDScriptFacts) -> bool:
    """`func get_preset_name():` where Godot 4 renamed the callback to `_get_preset_name`: the
    declaration is the Godot 3 override, not a local name."""
    return (p["change_type"] in ("method_rename", "method_change") and str(p["target_api"]).startswith("_")
            and p["source_api"] in facts.functions)


def mapping_occurrences(v: ChunkScope, c: Candidate) -> dict[str, list[dict[str, Any]]]:
    """Every literal occurrence of the mapping's source, each with its version decision (pass 1)."""
    facts, p = v.facts, c.payload
    src = p["source_api"]
    regex_terms = [t.removeprefix("re:") for t in p.get("match_terms") or [] if t.startswith("re:")]
    decisions = []
    if regex_terms:
        # Syntax changes: each pattern is Godot 3-only syntax, so a match in code is Godot 3 use.
        for h in _regex_hits(facts, regex_terms):
            decisions.append({**h, "status": "godot3", "why": f"line {h['line']}:{h['col']}: Godot 3 syntax `{h['literal']}`",
                              "rule": "godot3_syntax"})
    elif not source_absent(facts, p):
        for occ in facts.occurrences(src):
            status, why, rule = classify_in_context(v, p, occ)
            decisions.append({**occ, "status": status, "why": why, "rule": rule})
    for d in decisions:
        neg = _claimed(facts, p.get("negative_patterns") or [], d["start"], d["end"]) if d["status"] != "ignored" else None
        if neg:
            why = f"line {d['line']}:{d['col']}: claimed by negative pattern {neg[:NEGATIVE_QUOTED]}"
            d["status"], d["why"], d["rule"] = "ignored", why, "negative_pattern"
        elif d["status"] != "ignored" and not regex_terms and src in facts.declared and not _overrides_virtual(p, facts):
            why = f"line {d['line']}:{d['col']}: the chunk declares '{src}' itself"
            d["status"], d["why"], d["rule"] = "ignored", why, "declared_by_chunk"
    return {"occurrences": decisions}
