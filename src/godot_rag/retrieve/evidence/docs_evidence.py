"""The docs-evidence rules of the validator, as tables: what a docs record shares with the chunk's code
(`EVIDENCE_RULES`, each adding weighted items of its kind), and why a record is rejected
(`REJECT_RULES`, in order; the trace names the rules that fired). Weights and thresholds are the
named settings of `DocsEvidenceSettings`.

An item's weight is its kind's base plus the idf (in the docs) of its name; a record is accepted on at
least `min_direct_evidence` items, one of them strong, with no API contradiction in its code, for a
class the chunk uses when it is a class-reference record, and with
confidence = support / (support + against_factor * against + prior) >= min_confidence."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from ...gdscript.lexicon import CHAIN_RE, DIGITS_RE, IDENT, IDENT_RE, shape
from ...records import evidence_text, record_code
from ..engine.trace import Contradiction, DocsEvidence, DocsEvidenceKind
from ..engine.types import Candidate
from ..recall.codematch import clone_match, numbered_code_lines
from .docs_features import GUIDE_SHARE_RULES, candidate_cosine, decide_guide
from .validation_context import DocsEvidenceSettings, ValidationContext

METHOD_CALL_RE = re.compile(rf"\.({IDENT})\s*\(")
WEIGHT_DIGITS, CONFIDENCE_DIGITS = 3, 4  # as the trace shows them
CLASSES_SHOWN = 6  # the chunk's classes a class-page rejection names
MEMBERS_SHOWN = 4  # the members a class-page rejection names


STRONG_KINDS = ("resolved_api", "api_symbol", "call", "code_line")  # plus a method call of a rare enough name


def _pairs(chains: list[str]) -> set[str]:
    out: set[str] = set()
    for ch in chains:
        parts = ch.split(".")
        out.update(f"{a}.{b}" for a, b in zip(parts, parts[1:]))
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
    v: ValidationContext
    c: Candidate
    text: str
    symbols: set[str]
    page_class: str | None
    items: list[DocsEvidence] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    contradictions: list[Contradiction] = field(default_factory=list)
    clone_lines: list[int] = field(default_factory=list)
    clone_ratio: float = 0.0

    @property
    def s(self) -> DocsEvidenceSettings:
        return self.v.docs

    def rare(self, name: str, slack: float = 0.0) -> bool:
        return self.v.idf(name) >= self.v.min_idf - slack

    @property
    def strong(self) -> list[DocsEvidence]:
        rare_call = self.s.method_call + self.v.min_idf
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
        return s / (s + self.s.against_factor * self.against + self.s.prior) if s else 0.0


Found = tuple[str, float, int | None]  # (literal, weight, chunk line: None to look it up by name)


def _resolved_api(d: DocsCase) -> Iterator[Found]:
    """The record documents a member the chunk resolves to (or the class of a `Class.new()`), or it is the description
    of a class the chunk uses as a whole: its own `extends`, or a type it writes (`api_source.class_uses`)."""
    if d.page_class is not None:
        for use in d.v.resolution.uses:
            if use.api in d.symbols or (use.member == "new" and use.cls == d.page_class):
                yield use.api, d.s.resolved_api, use.line
        if d.page_class in d.v.class_uses and len(d.c.payload.get("section_path") or []) <= 1:
            yield d.v.class_uses[d.page_class].code, d.s.resolved_api, d.v.facts.line_of(d.page_class)


def _api_symbol(d: DocsCase) -> Iterator[Found]:
    chains, idf = d.v.chain_haystack, d.v.idf
    for sym in sorted(d.symbols):
        if "." in sym and ("." + sym) in chains and "\n" not in sym:
            yield sym, d.s.chain_symbol + idf(sym.split(".")[-1]), None
        elif "." not in sym and sym in d.v.facts.identifiers and d.rare(sym):
            yield sym, d.s.bare_symbol + idf(sym), None


def _call(d: DocsCase) -> Iterator[Found]:
    rec_pairs = _record_pairs(d.text)
    for pair in sorted(d.v.call_pairs):
        if pair not in d.seen and pair in rec_pairs:
            yield pair, d.s.call + d.v.idf(pair.split(".")[-1]), None


def _method_call(d: DocsCase) -> Iterator[Found]:
    for m in sorted(d.v.facts.method_calls & set(METHOD_CALL_RE.findall(d.text))):
        shown = {i.literal[-len(m) - 1:] for i in d.items}
        if m not in d.seen and f".{m}" not in shown and d.rare(m.lower(), d.s.method_call_idf_slack):
            yield f".{m}()", d.s.method_call + d.v.idf(m.lower()), None


def _code_line(d: DocsCase) -> Iterator[Found]:
    ratio, lines = clone_match(d.v.facts.text, record_code(d.c.payload), d.v.renameable)
    d.clone_lines, d.clone_ratio = lines, ratio
    tokens_of = dict(numbered_code_lines(d.v.facts.text)) if lines else {}
    for n in lines[: d.s.code_lines_shown]:
        yield " ".join(tokens_of[n]), d.s.code_line + d.s.code_line_per_clone * ratio, n


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
            weight = round(max(d.v.idf(ident.lower()), d.s.min_contradiction), WEIGHT_DIGITS)
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


def _entry_of(ref, cls: str, member: str) -> str | None:
    """The entry that documents a member under another name: a setter's or getter's property, a constant's enum."""
    found = ref.member(cls, member)
    if not found:
        return None
    return found[1].get("accessor_of") or (found[1].get("type") if found[1].get("kind") == "constant" else None)


def members_unused(v: ValidationContext, c: Candidate, page_class: str) -> str | None:
    """Why a class page's section of member entries (`metadata.members`) describes nothing the chunk uses: none
    of its members (a setter counts as its property, a constant as its enum; a name the chunk calls on a receiver
    the resolver could not type counts too), and not the class, as its description does. None when it does."""
    members = (c.payload.get("metadata") or {}).get("members") or []
    if not members or page_class in members:
        return None
    uses = v.resolution.uses
    used = {u.member for u in uses if u.cls == page_class}
    used |= {entry for m in used if (entry := _entry_of(v.ref, page_class, m))}  # `set_text()`, `TRANS_SINE`
    elsewhere = {u.member for u in uses if u.cls != page_class} - used  # a name resolved to another class
    if used & set(members) or (set(members) & v.facts.identifiers) - elsewhere:
        return None
    return (f"describes {page_class}'s {', '.join(members[:MEMBERS_SHOWN])}, none of which the chunk uses"
            + (f" (it uses {', '.join(sorted(used)[:MEMBERS_SHOWN])})" if used else ""))


def _low_confidence(d: DocsCase, reasons: list[str]) -> str | None:
    conf = d.confidence
    if reasons or conf >= d.s.min_confidence:
        return None
    return f"confidence {conf:.2f} < {d.s.min_confidence} (contradicting evidence)"


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


def docs_evidence(v: ValidationContext, c: Candidate) -> dict:
    """The record's evidence, contradictions, confidence and verdict (the validate info's fields)."""
    symbols = set(c.payload.get("api_symbols") or [])
    if c.payload.get("symbol"):
        symbols.add(c.payload["symbol"])
    page_class = v.class_of_page.get(c.page or "")
    if page_class is None:
        v = v.alone  # a guide: the chunk's own resolution (ValidationContext.alone)
    d = DocsCase(v, c, evidence_text(c.payload), symbols, page_class)
    for rule in EVIDENCE_RULES:
        for literal, weight, line in rule.find(d):  # lazily: a rule sees the items added before
            if literal in d.seen:
                continue
            d.seen.add(literal)
            at = line if line is not None else v.facts.line_of(literal.split(".")[0].strip("."))
            d.items.append(DocsEvidence(literal=literal, kind=rule.kind, weight=round(weight, WEIGHT_DIGITS), chunk_line=at))
    d.contradictions = list(_contradictions(d))
    reasons: list[str] = []
    fired: list[str] = []
    for reject in REJECT_RULES:
        if (why := reject.test(d, reasons)) is not None:
            reasons.append(why)
            fired.append(reject.name)
    model = None
    cosine = candidate_cosine(c, v.cosines)
    if d.page_class is None and v.guide_model is not None:
        # A guide: contradictions stay rules; the fitted model (docs_features.py) decides the rest.
        model, ruled = decide_guide(*v.guide_model, v.resolution, v.facts, c, d.clone_ratio, v.copy_source_share,
                                    v.renameable, cosine, v.guide_side, v.code_renames,
                                    godot3=v.godot3, min_specificity=v.min_guide_specificity)
        kept = [(name, why) for name, why in zip(fired, reasons) if name in FACT_RULES]
        fired = [name for name, _ in kept] + ([guide_rule(model)] if ruled else [])
        reasons = [why for _, why in kept] + ruled
    return {"evidence": d.items, "contradictions": d.contradictions, "support": round(d.support, WEIGHT_DIGITS),
            "against": round(d.against, WEIGHT_DIGITS), "confidence": round(d.confidence, CONFIDENCE_DIGITS),
            "strong": len(d.strong), "page_class": d.page_class, "clone_lines": d.clone_lines,
            "accepted": not reasons, "reasons": reasons, "rules": fired, "model": model,
            "cosine": round(cosine, 6) if cosine is not None else None}


def guide_rule(model: dict) -> str:
    """The rule that rejected a guide the model decides: a rule over what it shares, or the model's P."""
    return next((name for name in GUIDE_SHARE_RULES if model.get(name)), "guide_model")


def _shown_names(info: dict) -> set[str]:
    """The names and strings of the chunk that a docs record's evidence shows (code lines apart)."""
    out: set[str] = set()
    for i in info["evidence"]:
        if i.kind == "string":
            out.add(i.literal)
        elif i.kind != "code_line":
            out.update(IDENT_RE.findall(i.literal))
    return out


def copied_page_overrules(v: ValidationContext, docs: list[tuple[Candidate, dict]]) -> None:
    """A chunk copied from a guide page has that page as its evidence. A page is a copied one when its
    accepted records match, up to renaming, at least `min_copied_lines` of the chunk's code lines holding
    `copy_source_share` of its code tokens. Another guide record that shows nothing of the chunk a copied
    page does not already show (every code line it matches, every name and string it shares) is then
    rejected (rule `copied_page`): it is the same evidence again, from a page the chunk did not come from.
    Class-reference entries are kept: they document the members themselves. Changes `docs`' infos in place."""
    sizes = {n: len(toks) for n, toks in numbered_code_lines(v.facts.text)}
    total = sum(sizes.values())
    if not total or not v.copy_source_share:
        return
    # Each accepted guide with its page, the chunk lines it matches and the names it shows.
    guides = [(c.page or c.id, info, set(info["clone_lines"]), _shown_names(info)) for c, info in docs
              if info["accepted"] and info["page_class"] is None]
    lines: dict[str, set[int]] = {}
    names: dict[str, set[str]] = {}
    for page, _, matched, shown in guides:
        lines.setdefault(page, set()).update(matched)
        names.setdefault(page, set()).update(shown)
    share = {p: sum(sizes[n] for n in ls) / total for p, ls in lines.items()}
    copied = sorted((p for p, ls in lines.items() if len(ls) >= v.docs.min_copied_lines and share[p] >= v.copy_source_share),
                    key=lambda p: (-share[p], p))
    for page, info, matched, shown in guides:
        if page in copied:
            info["copy_source"] = True
            continue
        source = next((p for p in copied if matched <= lines[p] and shown <= names[p]), None)
        if source is None:
            continue
        info["accepted"] = False
        info["copied_from"] = source
        info["rules"] = [*info.get("rules", []), "copied_page"]
        info["reasons"].append(f"the chunk copies {source} ({len(lines[source])} of its {len(sizes)} code lines); "
                               "this record shows nothing of the chunk that page does not")


def model_shown(info: dict) -> frozenset[tuple[str, str | int]]:
    """What an accepted guide shows of the chunk, as the guide model weighed it: the API, globals, callbacks,
    classes and constructs both share, and the chunk's code lines its code matches. Names either side chose are no evidence, so
    they are not counted (`_shown_names` counts them against a copied page, whose lines the chunk holds)."""
    return frozenset(model_shared(info["model"] or {}) + [("line", n) for n in info["clone_lines"] or []])


def model_shared(m: dict) -> list[tuple[str, str]]:
    """(kind, name) of what the guide model's basis says a guide shares with the chunk, in the basis's order: API,
    globals, callbacks, classes, constructs."""
    return ([("api", e["api"]) for e in m.get("shared_api") or []]
            + [("global", e["api"]) for e in m.get("shared_globals") or []]
            + [("callback", e["api"]) for e in m.get("shared_callbacks") or []]
            + [("class", c) for c in m.get("shared_classes") or []]
            + [("construct", e["construct"]) for e in m.get("shared_constructs") or []])


def same_evidence_overrules(docs: list[tuple[Candidate, dict]]) -> None:
    """A guide page whose accepted records show the chunk nothing (`model_shown`) that one page retrieved before it
    does not show too is the same evidence again (a tutorial's steps repeat its script; two manual pages show the
    same call), and so is a record that shows nothing another record of its page retrieved before it does not:
    they are rejected (rule `same_evidence`; `repeats` names that page, or that record). Pages are compared whole:
    one whose records each show a part of what an earlier page shows, and together more, stays. `docs` is in
    retrieval order; a page the chunk copies goes first and stays, and so does a record whose code the chunk copies
    (`copied_code`). A guide that shows nothing at all (the model accepts one on its likeness for a chunk that uses
    no API) repeats nothing, so it stays too. Class-reference records stay: they document the members themselves.
    Changes `docs`' infos in place."""
    pages: dict[str, list[tuple[Candidate, dict, frozenset]]] = {}
    for c, info in docs:
        if info["accepted"] and info["page_class"] is None and info["model"]:
            pages.setdefault(c.page or c.id, []).append((c, info, model_shown(info)))
    order = sorted(pages, key=lambda p: not any(info.get("copy_source") for _, info, _ in pages[p]))  # stable
    whole = {p: frozenset().union(*(shown for _, _, shown in pages[p])) for p in pages}
    kept: list[str] = []
    for page in order:
        stays = any(_copied(info) for _, info, _ in pages[page]) or not whole[page]
        earlier = None if stays else next((k for k in kept if whole[page] <= whole[k]), None)
        if earlier is not None:
            for _, info, _ in pages[page]:
                _repeats(info, earlier, "page")
            continue
        kept.append(page)
        shown_before: list[tuple[Candidate, frozenset]] = []
        for c, info, shown in pages[page]:
            first = None if _copied(info) or not shown else next((k for k, s in shown_before if shown <= s), None)
            if first is None:
                shown_before.append((c, shown))
            else:
                _repeats(info, first.id, "record of its page")


def _copied(info: dict) -> bool:
    """The record is of a page the chunk copies, or its code is what the chunk copies."""
    return bool(info.get("copy_source") or (info["model"] or {}).get("copied_code"))


def _repeats(info: dict, what: str, kind: str) -> None:
    info["accepted"] = False
    info["repeats"] = what
    info["rules"] = [*info.get("rules", []), "same_evidence"]
    info["reasons"].append(f"shows nothing of the chunk that the {kind} {what}, retrieved before it, does not show "
                           "too: the same evidence again")


def other_members_overruled(v: ValidationContext, docs: list[tuple[Candidate, dict]]) -> None:
    """A class page's section that names the chunk's API only in other members' entries (`members_unused`:
    `add_icon_radio_check_item` saying "see set_item_checked") shows the page's topic, not the chunk's API. When
    another accepted record of that page describes what the chunk uses (or is its table or description), that
    record is the page's evidence and the section is rejected (rule `other_members`). Otherwise the page's first
    such section stays, as the class's page is still the reference for a class the chunk uses, unless what the
    chunk uses of the page is generic (its entry rejected by `generic_api`). Changes `docs`' infos in place."""
    by_page: dict[str, list[tuple[Candidate, dict, str | None]]] = {}
    generic: dict[str, str] = {}  # page -> its entry that documents only generic API the chunk uses
    for c, info in docs:
        if info["accepted"] and info["page_class"] is not None:
            by_page.setdefault(c.page or c.id, []).append((c, info, members_unused(v, c, info["page_class"])))
        elif "generic_api" in (info.get("rules") or []):
            generic.setdefault(c.page or c.id, c.id)
    for page, entries in by_page.items():
        describing = [c for c, _, why in entries if why is None]
        mentioning = [(c, info, why) for c, info, why in entries if why is not None]
        keeper = describing[0] if describing else None if page in generic else mentioning[0][0]
        for c, info, why in mentioning:
            if c is keeper:
                continue
            info["accepted"] = False
            info["rules"] = [*info.get("rules", []), "other_members"]
            info["reasons"].append(f"{why}; " + (f"{keeper.id} is this page's evidence for the chunk" if keeper is not None
                                                 else f"what the chunk uses of this page is generic ({generic[page]})"))
