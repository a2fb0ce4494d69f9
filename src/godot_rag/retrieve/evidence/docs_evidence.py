"""The docs-evidence rules of the validator, as tables: what a docs record shares with the chunk's code
(`EVIDENCE_RULES`, each adding weighted items of its kind), and why a record is rejected
(`REJECT_RULES`, in order; the trace names the rules that fired). Weights and thresholds are the
named constants beside them (`RESOLVED_API`, ..., `MIN_CONFIDENCE`).

An item's weight is its kind's base plus the idf (in the docs) of its name; a record is accepted on at
least `min_direct_evidence` items, one of them strong, with no API contradiction in its code, for a
class the chunk uses when it is a class-reference record, and with
confidence = support / (support + against_factor * against + prior) >= min_confidence."""
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from ...gdscript.lexicon import CHAIN_RE, DIGITS_RE, IDENT, IDENT_RE, shape
from ...records import evidence_text, record_code
from ..engine.decision import Decision
from ..engine.trace import Contradiction, DocsEvidence, DocsEvidenceKind
from ..engine.types import Candidate
from ..recall.codematch import clone_match, numbered_code_lines
from .decision import DocsFigures, DocsVerdict
from .guide_decision import GuideInput, candidate_cosine, decide_guide, guide_overrule
from .validation_scope import MIN_IDF, ValidationScope

METHOD_CALL_RE = re.compile(rf"\.({IDENT})\s*\(")
WEIGHT_DIGITS, CONFIDENCE_DIGITS = 3, 4  # as the trace shows them
CLASSES_SHOWN = 6  # the chunk's classes a class-page rejection names
MEMBERS_SHOWN = 4  # the members a class-page rejection names


# The evidence rules' weights (a rule's item weighs its constant, + idf where said) and the confidence they make.
RESOLVED_API = 6.0  # a class-reference record that documents a member the chunk resolves to
CHAIN_SYMBOL = 3.0  # + idf: an API symbol of the record written in one of the chunk's call chains
BARE_SYMBOL = 1.0  # + idf: a rare API symbol of the record that the chunk names
CALL = 2.0  # + idf: an `Owner.member` call the chunk and the record share
METHOD_CALL = 1.0  # + idf: a rare method the chunk and the record both call
METHOD_CALL_IDF_SLACK = 1.0  # a method call counts from idf MIN_IDF - this
CODE_LINE = 2.0  # + CODE_LINE_PER_CLONE x clone ratio: a code line of the chunk in the record's code
CODE_LINE_PER_CLONE = 4.0
CODE_LINES_SHOWN = 6  # code lines taken as items
MIN_CONTRADICTION = 1.0  # a contradiction weighs its idf, at least this
AGAINST_FACTOR = 1.5  # how much a contradiction outweighs support, in the confidence
PRIOR = 4.0  # support needed for a confidence of one half, without contradictions
MIN_CONFIDENCE = 0.5
STRONG_KINDS = ("resolved_api", "api_symbol", "call", "code_line")  # plus a method call of a rare enough name


def _pairs(chains: list[str]) -> set[str]:
    out: set[str] = set()
    for ch in chains:
        parts = ch.split(".")
        out.update(f"{a}.{b}" for a, b in itertools.pairwise(parts))
    return out


# A record's names, read once: the same records come back for chunk after chunk (read-only results).
RECORD_TEXT_CACHE = 4096


@lru_cache(maxsize=RECORD_TEXT_CACHE)
def _record_pairs(text: str) -> frozenset[str]:
    return frozenset(_pairs(CHAIN_RE.findall(text)))


@lru_cache(maxsize=2 * RECORD_TEXT_CACHE)
def _idents(text: str) -> frozenset[str]:
    return frozenset(IDENT_RE.findall(text))


@lru_cache(maxsize=RECORD_TEXT_CACHE)
def _digit_idents(text: str) -> frozenset[str]:
    """The record's names with a digit run: the only ones that can be a near miss of the chunk's (`_contradictions`)."""
    return frozenset(i for i in _idents(text) if DIGITS_RE.search(i))


@dataclass
class DocsCase:
    """One docs record against the chunk: what both hold, and the items found so far (a rule sees the
    items of the rules before it: a literal counts once, under the first rule that finds it)."""
    v: ValidationScope
    c: Candidate
    text: str
    symbols: set[str]
    page_class: str | None
    items: list[DocsEvidence] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    contradictions: list[Contradiction] = field(default_factory=list)
    clone_lines: list[int] = field(default_factory=list)
    clone_ratio: float = 0.0

    def rare(self, name: str, slack: float = 0.0) -> bool:
        return self.v.idf(name) >= MIN_IDF - slack

    @property
    def strong(self) -> list[DocsEvidence]:
        rare_call = METHOD_CALL + MIN_IDF
        return [i for i in self.items if i.kind in STRONG_KINDS or (i.kind == "method_call" and i.weight >= rare_call)]

    @property
    def support(self) -> float:
        return sum(i.weight for i in self.items)

    @property
    def against(self) -> float:
        return sum(x.weight for x in self.contradictions)

    @property
    def confidence(self) -> float:
        s = self.support
        return s / (s + AGAINST_FACTOR * self.against + PRIOR) if s else 0.0


Found = tuple[str, float, int | None]  # (literal, weight, chunk line: None to look it up by name)


def _resolved_api(d: DocsCase) -> Iterator[Found]:
    """The record documents a member the chunk resolves to (or the class of a `Class.new()`), or it is the description
    of a class the chunk uses as a whole: its own `extends`, or a type it writes (`api_source.class_uses`)."""
    if d.page_class is not None:
        for use in d.v.resolution.uses:
            if use.api in d.symbols or (use.member == "new" and use.cls == d.page_class):
                yield use.api, RESOLVED_API, use.line
        if d.page_class in d.v.class_uses and len(d.c.payload.get("section_path") or []) <= 1:
            yield d.v.class_uses[d.page_class].code, RESOLVED_API, d.v.facts.line_of(d.page_class)


def _api_symbol(d: DocsCase) -> Iterator[Found]:
    chains, idf = d.v.chain_haystack, d.v.idf
    for sym in sorted(d.symbols):
        if "." in sym and ("." + sym) in chains and "\n" not in sym:
            yield sym, CHAIN_SYMBOL + idf(sym.split(".")[-1]), None
        elif "." not in sym and sym in d.v.facts.identifiers and d.rare(sym):
            yield sym, BARE_SYMBOL + idf(sym), None


def _call(d: DocsCase) -> Iterator[Found]:
    rec_pairs = _record_pairs(d.text)
    for pair in sorted(d.v.call_pairs):
        if pair not in d.seen and pair in rec_pairs:
            yield pair, CALL + d.v.idf(pair.split(".")[-1]), None


def _method_call(d: DocsCase) -> Iterator[Found]:
    for m in sorted(d.v.facts.method_calls & set(METHOD_CALL_RE.findall(d.text))):
        shown = {i.literal[-len(m) - 1:] for i in d.items}
        if m not in d.seen and f".{m}" not in shown and d.rare(m.lower(), METHOD_CALL_IDF_SLACK):
            yield f".{m}()", METHOD_CALL + d.v.idf(m.lower()), None


def _code_line(d: DocsCase) -> Iterator[Found]:
    ratio, lines = clone_match(d.v.facts.text, record_code(d.c.payload), d.v.renameable)
    d.clone_lines, d.clone_ratio = lines, ratio
    tokens_of = dict(numbered_code_lines(d.v.facts.text)) if lines else {}
    for n in lines[: CODE_LINES_SHOWN]:
        yield " ".join(tokens_of[n]), CODE_LINE + CODE_LINE_PER_CLONE * ratio, n


def _string(d: DocsCase) -> Iterator[Found]:
    rec_idents = _idents(d.text)
    for lit in d.v.long_rare_strings:
        if lit in rec_idents:
            yield f'"{lit}"', d.v.idf(lit.lower()), None


def _identifier(d: DocsCase) -> Iterator[Found]:
    rec_idents = _idents(d.text)
    for ident in d.v.long_rare_identifiers:
        if ident not in d.seen and ident in rec_idents:
            yield ident, d.v.idf(ident.lower()), None


@dataclass(frozen=True)
class EvidenceRule:
    kind: DocsEvidenceKind
    find: Callable[[DocsCase], Iterator[Found]]


# In order: a literal found by an earlier rule is not counted again by a later one.
EVIDENCE_RULES = (
    EvidenceRule("resolved_api", _resolved_api),
    EvidenceRule("api_symbol", _api_symbol),
    EvidenceRule("call", _call),
    EvidenceRule("method_call", _method_call),
    EvidenceRule("code_line", _code_line),
    EvidenceRule("string", _string),
    EvidenceRule("identifier", _identifier),
)


def _contradictions(d: DocsCase) -> Iterator[Contradiction]:
    """Names of the record equal to one of the chunk's once digit runs are masked, where neither side
    writes the other's spelling."""
    facts, rec_idents = d.v.facts, _idents(d.text)
    rec_code_idents = _idents(record_code(d.c.payload))
    for ident in sorted(_digit_idents(d.text) | {s for sym in d.symbols for s in sym.split(".") if DIGITS_RE.search(s)}):
        if ident in facts.identifiers:
            continue
        twins = facts.shapes.get(shape(ident))
        if twins and not (twins & rec_idents):
            api = d.v.ref.has_class(ident) and all(d.v.ref.has_class(t) for t in twins)
            weight = round(max(d.v.idf(ident.lower()), MIN_CONTRADICTION), WEIGHT_DIGITS)
            yield Contradiction(literal=ident, near_miss_of=sorted(twins)[0], weight=weight, api=api,
                                in_code=ident in rec_code_idents)


def _no_evidence(d: DocsCase, reasons: list[str]) -> str | None:
    return "no direct evidence shared with the chunk" if len(d.items) < d.v.min_direct_evidence else None


def _weak_only(d: DocsCase, reasons: list[str]) -> str | None:
    weak = len(d.items) >= d.v.min_direct_evidence and not d.strong
    return "only weak evidence (no shared API call or symbol)" if weak else None


def _api_contradiction(d: DocsCase, reasons: list[str]) -> str | None:
    found = [x for x in d.contradictions if x.api and x.in_code]
    if not found or any(i.kind == "resolved_api" for i in d.items):
        return None
    return f"contradiction: the record's code uses {found[0].literal} where the chunk uses {found[0].near_miss_of}"


def _unused_class_page(d: DocsCase, reasons: list[str]) -> str | None:
    if d.page_class is None or d.page_class in d.v.resolution.classes or d.page_class in d.v.class_uses:
        return None
    used = sorted(d.v.resolution.classes)
    return (f"class reference for {d.page_class}, which the chunk does not use"
            + (f" (it uses {', '.join(used[:CLASSES_SHOWN])})" if used else " (no Godot API use of the chunk resolves)"))


def _class_name_only(d: DocsCase, reasons: list[str]) -> str | None:
    """A class page's record that shares only the class with the chunk (its name, or `Class.new()`), none of its
    members, is evidence as the class's description; its other sections (the method and property tables, the
    tutorial list, members the chunk does not use) show nothing specific to the chunk."""
    if d.page_class is None or reasons or len(d.c.payload.get("section_path") or []) <= 1:
        return None
    if d.items and all(i.literal in (d.page_class, f"{d.page_class}.new") for i in d.items):
        return f"shares only the class {d.page_class} with the chunk, in a section other than its description"
    return None


def _generic_api(d: DocsCase, reasons: list[str]) -> str | None:
    """A class-reference entry whose every resolved use is a generic member (`Node.get_node`, `Node.add_child`):
    a reviewer of the chunk learns nothing specific from it. The threshold is the setting `min_api_specificity`
    (0.16: the judged entries below it were all graded 1, the first graded 2 is `Node.name` at 0.18); it needs the
    corpus's use counts (the guide model's)."""
    least = d.v.min_api_specificity
    if not least or d.page_class is None or reasons or d.v.guide_model is None:
        return None
    resolved = [i.literal for i in d.items if i.kind == "resolved_api"]
    if not resolved:
        return None
    stats = d.v.guide_model[1]
    specificity = {api: stats.member_specificity(api) for api in resolved}
    if max(specificity.values()) >= least:
        return None
    return ("documents only generic API the chunk uses: "
            + ", ".join(f"{api} (specificity {s:.2f})" for api, s in list(specificity.items())[:MEMBERS_SHOWN])
            + f" < min_api_specificity {least}")


def _low_confidence(d: DocsCase, reasons: list[str]) -> str | None:
    conf = d.confidence
    if reasons or conf >= MIN_CONFIDENCE:
        return None
    return f"confidence {conf:.2f} < {MIN_CONFIDENCE} (contradicting evidence)"


@dataclass(frozen=True)
class RejectRule:
    name: str
    test: Callable[[DocsCase, list[str]], str | None]  # the reason, given the reasons of the rules before it


# Reject rules that are facts, not guesses: they hold for a guide whatever the fitted model says.
FACT_RULES = {"api_contradiction"}

REJECT_RULES = (
    RejectRule("no_evidence", _no_evidence),
    RejectRule("weak_only", _weak_only),
    RejectRule("api_contradiction", _api_contradiction),
    RejectRule("unused_class_page", _unused_class_page),
    RejectRule("class_name_only", _class_name_only),
    RejectRule("generic_api", _generic_api),
    RejectRule("low_confidence", _low_confidence),
)


def docs_evidence(v: ValidationScope, c: Candidate) -> DocsVerdict:
    """The record's decision by the rule tables (a guide's by the guide model over them), and its figures."""
    symbols = set(c.payload.get("api_symbols") or [])
    if c.payload.get("symbol"):
        symbols.add(c.payload["symbol"])
    page_class = v.class_of_page.get(c.page or "")
    if page_class is None:
        v = v.alone  # a guide: the chunk's own resolution (ValidationScope.alone)
    d = DocsCase(v, c, evidence_text(c.payload), symbols, page_class)
    for rule in EVIDENCE_RULES:
        for literal, weight, line in rule.find(d):  # lazily: a rule sees the items added before
            if literal in d.seen:
                continue
            d.seen.add(literal)
            at = line if line is not None else v.facts.line_of(literal.split(".")[0].strip("."))
            d.items.append(DocsEvidence(literal=literal, kind=rule.kind, weight=round(weight, WEIGHT_DIGITS), chunk_line=at))
    d.contradictions = list(_contradictions(d))
    decision = _rules_decision(d)
    cosine = candidate_cosine(c, v.cosines)
    if d.page_class is None and v.guide_model is not None:
        # A guide: contradictions stay rules; the fitted model (guide_decision.py) decides the rest.
        model, ruled = decide_guide(*v.guide_model, GuideInput(v.resolution, v.facts, c, d.clone_ratio, v.copy_source_share,
                                                               v.renameable, cosine, v.guide_side, v.code_renames,
                                                               godot3=v.godot3, min_specificity=v.min_guide_specificity))
        decision = guide_overrule(decision, model, ruled, FACT_RULES)
    figures = DocsFigures(support=round(d.support, WEIGHT_DIGITS), against=round(d.against, WEIGHT_DIGITS),
                          strong=len(d.strong), cosine=round(cosine, 6) if cosine is not None else None)
    return DocsVerdict(decision, figures)


def _rules_decision(d: DocsCase) -> Decision:
    """The decision of REJECT_RULES: every rule is tested, and any that fires rejects (its name and reason kept).
    An accept is decided by its first strong item's evidence rule (`resolved_api`, `call`, ...)."""
    reasons: list[str] = []
    fired: list[str] = []
    for reject in REJECT_RULES:
        if (why := reject.test(d, reasons)) is not None:
            reasons.append(why)
            fired.append(reject.name)
    strong = d.strong
    rule = fired[0] if fired else strong[0].kind if strong else "evidence"
    return Decision(accepted=not reasons, rule=rule, confidence=round(d.confidence, CONFIDENCE_DIGITS),
                    evidence=tuple(d.items), contradictions=tuple(d.contradictions), reasons=tuple(reasons),
                    rules=tuple(fired), page_class=d.page_class, clone_lines=tuple(d.clone_lines))
