"""Direct-evidence validator, deterministic layer: what the chunk and a record literally share.

Evidence is matched at identifier boundaries (`AnimatedSprite` is not in
`AnimatedSprite2D`). Which shared identifiers count is decided by the corpus,
not by a list: a shared identifier is evidence when its idf in the docs index is
at least `min_idf` (so `func`, `var`, `velocity` do not count, `screen_size` does);
a shared call chain (`Input.is_action_pressed`, `position.clamp`) always counts.

Contradicting evidence is found by name shape: an identifier in the record that
equals one of the chunk's identifiers once digit runs are masked (`Vector3` vs
`Vector2`, `CharacterBody3D` vs `CharacterBody2D`) but that the chunk never uses.

Acceptance rules:
- docs_chunks: at least `min_direct_evidence` items, one of them strong
  (a call chain, an API symbol of the record, a code line of the chunk found in the
  record's code up to renaming, or a rare method call), and confidence >= 0.5 where
  confidence = support / (support + 1.5 * contradiction + 4);
- api_mapping: the `source_api` occurs in the chunk (regex `re:` terms for
  syntax changes, a call for prose-derived method changes), an occurrence is
  left over once every negative pattern has claimed its matches, the chunk does
  not declare that name itself (`var white`), and C#-only records need C# code;
- label_prototypes: every `must_match` rule matches, no `must_not_match` rule
  does, and a required api_mapping type was accepted for this chunk.
"""
from __future__ import annotations

import math
import re
from typing import Callable

from .codematch import clone_match, code_lines, record_code
from .tokenize import declared_names
from .types import Candidate

IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CHAIN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
METHOD_CALL_RE = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)\s*\(")
CALL_CHAIN_RE = re.compile(r"((?:[A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*)\s*\(")
STRING_RE = re.compile(r"&?\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'")
COMMENT_RE = re.compile(r"#.*$", re.M)
DIGITS_RE = re.compile(r"\d+")


def bounded(name: str) -> re.Pattern:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])")


def strip_comments(code: str) -> str:
    """Drop `#` comments that are not inside strings."""
    out = []
    for line in code.split("\n"):
        masked = STRING_RE.sub(lambda m: "\0" * len(m.group(0)), line)
        cut = masked.find("#")
        out.append(line if cut < 0 else line[:cut])
    return "\n".join(out)


def looks_csharp(code: str) -> bool:
    lines = [l.strip() for l in code.split("\n") if l.strip()]
    if not lines:
        return False
    semis = sum(l.endswith((";", "{", "}")) for l in lines)
    return semis / len(lines) > 0.4


def shape(ident: str) -> str:
    return DIGITS_RE.sub("#", ident)


class ChunkFacts:
    """What the validator needs to know about the query chunk, computed once."""

    def __init__(self, chunk: str):
        self.text = chunk
        self.code = strip_comments(chunk)
        self.identifiers = set(IDENT_RE.findall(self.code))
        self.chains = set(CHAIN_RE.findall(self.code))
        self.calls = set(CALL_CHAIN_RE.findall(self.code))
        self.methods = set(METHOD_CALL_RE.findall(self.code))
        self.declared = declared_names(self.code)
        self.strings = {a or b for a, b in STRING_RE.findall(self.code) if (a or b)}
        self.shapes: dict[str, set[str]] = {}
        for ident in self.identifiers:
            if DIGITS_RE.search(ident):
                self.shapes.setdefault(shape(ident), set()).add(ident)
        self.csharp = looks_csharp(chunk)
        self.all_identifiers = set(IDENT_RE.findall(chunk))  # comments and strings included
        self._first_line: dict[str, int] = {}
        for i, line in enumerate(chunk.split("\n"), 1):
            for ident in IDENT_RE.findall(line):
                self._first_line.setdefault(ident, i)

    def line_of(self, literal: str) -> int | None:
        return self._first_line.get(literal)


def _record_text(c: Candidate) -> str:
    p = c.payload
    code = "\n".join(b.get("code", "") for b in p.get("code_blocks") or [] if b.get("language") != "csharp")
    return (p.get("content") or "") + "\n" + code


def _pairs(chains: list[str]) -> set[str]:
    out = set()
    for ch in chains:
        parts = ch.split(".")
        out.update(f"{a}.{b}" for a, b in zip(parts, parts[1:]))
    return out


def docs_evidence(facts: ChunkFacts, c: Candidate, idf: Callable[[str], float], min_idf: float) -> dict:
    text = _record_text(c)
    symbols = set(c.payload.get("api_symbols") or [])
    # Identifier sets make every boundary-respecting test a set lookup.
    rec_idents = set(IDENT_RE.findall(text))
    rec_pairs = _pairs(CHAIN_RE.findall(text))
    items: list[dict] = []
    seen: set[str] = set()

    def add(literal: str, kind: str, weight: float) -> None:
        if literal in seen:
            return
        seen.add(literal)
        items.append({"literal": literal, "kind": kind, "weight": round(weight, 3), "chunk_line": facts.line_of(literal.split(".")[0])})

    for sym in sorted(symbols):
        if "." in sym and any(sym == ch or ch.endswith("." + sym) or ch.startswith(sym + ".") or ("." + sym) in ("." + ch) for ch in facts.chains):
            add(sym, "api_symbol", 3.0 + idf(sym.split(".")[-1]))
        elif "." not in sym and sym in facts.identifiers and idf(sym) >= min_idf:
            add(sym, "api_symbol", 1.0 + idf(sym))
    for chain in sorted(facts.calls):
        tail = ".".join(chain.split(".")[-2:])
        if tail not in seen and tail in rec_pairs:
            add(tail, "call", 2.0 + idf(tail.split(".")[-1]))
    rec_methods = set(METHOD_CALL_RE.findall(text))
    for m in sorted(facts.methods & rec_methods):
        if m not in seen and f".{m}" not in {i["literal"][-len(m) - 1:] for i in items} and idf(m.lower()) >= min_idf - 1:
            add(f".{m}()", "method_call", 1.0 + idf(m.lower()))
    ratio, lines = clone_match(facts.text, record_code(c))
    if lines:
        qlines = code_lines(facts.text)
        for i in lines[:6]:
            add(" ".join(qlines[i - 1]), "code_line", 2.0 + 4.0 * ratio)
    for lit in sorted(facts.strings):
        if len(lit) >= 3 and IDENT_RE.fullmatch(lit) and lit in rec_idents and idf(lit.lower()) >= min_idf:
            add(f'"{lit}"', "string", idf(lit.lower()))
    for ident in sorted(facts.identifiers):
        if ident in seen or len(ident) < 3 or ident not in rec_idents or idf(ident.lower()) < min_idf:
            continue
        add(ident, "identifier", idf(ident.lower()))
    contra: list[dict] = []
    for ident in sorted(rec_idents | {s for sym in symbols for s in sym.split(".")}):
        if ident in facts.identifiers or not DIGITS_RE.search(ident):
            continue
        twins = facts.shapes.get(shape(ident))
        if twins:
            contra.append({"literal": ident, "near_miss_of": sorted(twins)[0], "weight": round(max(idf(ident.lower()), 1.0), 3)})
    support = sum(i["weight"] for i in items)
    against = sum(i["weight"] for i in contra)
    confidence = support / (support + 1.5 * against + 4.0) if support else 0.0
    strong = [i for i in items if i["kind"] in ("api_symbol", "call", "code_line")
              or (i["kind"] == "method_call" and i["weight"] >= 1.0 + min_idf)]
    return {"evidence": items, "contradictions": contra, "support": round(support, 3), "against": round(against, 3),
            "confidence": round(confidence, 4), "strong": len(strong)}


def mapping_evidence(facts: ChunkFacts, c: Candidate) -> dict:
    p = c.payload
    src, change = p["source_api"], p["change_type"]
    regex_terms = [t[3:] for t in p.get("match_terms") or [] if t.startswith("re:")]
    hits: list[tuple[int, int]] = []
    if regex_terms:
        for rx in regex_terms:
            hits += [m.span() for m in re.finditer(rx, facts.code)]
    elif change in ("method_change", "api_change"):
        hits = [m.span() for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(src) + r"(?![A-Za-z0-9_])\s*\(", facts.code)]
    elif IDENT_RE.fullmatch(src) and src not in facts.all_identifiers:
        hits = []  # the common case, answered by a set lookup
    else:
        hits = [m.span() for m in bounded(src).finditer(facts.text)]
    text = facts.code if (regex_terms or change in ("method_change", "api_change")) else facts.text
    claimed: list[dict] = []
    free = []
    for start, end in hits:
        owner = None
        for neg in p.get("negative_patterns") or []:
            for m in re.finditer(neg, text):
                if m.start() <= start < m.end() or start <= m.start() < end:
                    owner = neg
                    break
            if owner:
                break
        if owner:
            claimed.append({"at": start, "negative_pattern": owner})
        else:
            free.append(start)
    reasons = []
    if not hits:
        reasons.append(f"source_api '{src}' does not occur in the chunk")
    elif not free:
        reasons.append(f"every occurrence of '{src}' is accounted for by a negative pattern")
    if change.startswith("csharp") and not facts.csharp:
        reasons.append("C#-only change, and the chunk is GDScript")
    if free and src in facts.declared:
        reasons.append(f"the chunk declares '{src}' itself (a local name, not the Godot 3 API)")
    evidence = []
    if free:
        line = text[: free[0]].count("\n") + 1
        evidence.append({"literal": src, "kind": "source_api", "chunk_line": line, "occurrences": len(free)})
    accepted = not reasons
    confidence = float(p.get("confidence") or 0.0) if accepted else 0.0
    return {"evidence": evidence, "claimed_by_negative_patterns": claimed, "contradictions": [],
            "confidence": round(confidence, 4), "accepted": accepted, "reasons": reasons}


def prototype_evidence(facts: ChunkFacts, c: Candidate, accepted_types: set[str]) -> dict:
    rules = c.payload.get("validator_rules") or {}
    evidence, reasons = [], []
    for rx in rules.get("must_match", []):
        m = re.search(rx, facts.code)
        if m:
            evidence.append({"literal": m.group(0)[:80], "kind": "must_match", "chunk_line": facts.code[: m.start()].count("\n") + 1})
        else:
            reasons.append("a must_match rule does not match the chunk")
    for rx in rules.get("must_not_match", []):
        if re.search(rx, facts.code):
            reasons.append(f"must_not_match rule matches: {rx[:60]}")
    need = rules.get("requires_accepted_mapping_type")
    if need and need not in accepted_types:
        reasons.append(f"no accepted api_mapping of type {need}")
    accepted = not reasons and bool(evidence)
    return {"evidence": evidence, "contradictions": [], "confidence": 1.0 if accepted else 0.0,
            "accepted": accepted, "reasons": reasons}


def validate(chunk: str, candidates: list[Candidate], idf: Callable[[str], float], *, min_idf: float = 5.0,
             min_direct_evidence: int = 1, stage: str = "validate") -> list[Candidate]:
    """Adds a `validate` explanation and a verdict to every candidate (pure: no I/O)."""
    facts = ChunkFacts(chunk)
    out = []
    for c in candidates:
        if c.table == "api_mapping":
            info = mapping_evidence(facts, c)
        elif c.table == "docs_chunks":
            info = docs_evidence(facts, c, idf, min_idf)
            reasons = []
            if len(info["evidence"]) < min_direct_evidence:
                reasons.append("no direct evidence shared with the chunk")
            elif not info["strong"]:
                reasons.append("only weak evidence (no shared API call or symbol)")
            if info["confidence"] < 0.5 and not reasons:
                reasons.append(f"confidence {info['confidence']:.2f} < 0.5 (contradicting evidence)")
            info["accepted"] = not reasons
            info["reasons"] = reasons
        else:
            continue
        out.append(_verdict(c, info, stage))
    accepted_types = {c.payload["change_type"] for c in out if c.table == "api_mapping" and c.verdict == "accept"}
    for c in candidates:
        if c.table == "label_prototypes":
            out.append(_verdict(c, prototype_evidence(facts, c, accepted_types), stage))
    return out


def _verdict(c: Candidate, info: dict, stage: str) -> Candidate:
    c = c.derive()
    c.verdict = "accept" if info["accepted"] else "reject"
    lits = ", ".join(i["literal"] for i in info["evidence"][:8])
    c.reason = (f"direct evidence = {lits}" if info["accepted"] else "; ".join(info["reasons"]))
    info = dict(info, verdict=c.verdict, layer="deterministic")
    c.add_stage(stage, info)
    return c


def idf_from_df(df: dict[str, int] | Callable[[str], int], n_docs: int) -> Callable[[str], float]:
    get = df.get if isinstance(df, dict) else df

    def idf(term: str) -> float:
        d = get(term.lower(), 0) or 0
        return math.log1p((n_docs - d + 0.5) / (d + 0.5))

    return idf
