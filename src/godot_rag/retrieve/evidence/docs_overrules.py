"""The overrules of the docs verdicts, across the chunk's docs records: a page the chunk copies stands for the guides
that show nothing more (`copied_page_overrules`), a page or record that shows nothing new is the same evidence
again (`same_evidence_overrules`), a class page's section about other members gives way to the one that describes
what the chunk uses (`other_members_overruled`). Each takes the records with their decisions, in retrieval order,
and returns them with a new decision, under its rule, for each record it overrules (nothing is changed in place)."""
from __future__ import annotations

from ...gdscript.classref import ClassReference
from ...gdscript.lexicon import IDENT_RE
from ..engine.decision import Decision
from ..engine.types import Candidate
from ..recall.codematch import numbered_code_lines
from .decision import model_shared
from .docs_evidence import MEMBERS_SHOWN
from .validation_scope import ValidationScope

MIN_COPIED_LINES = 3  # a page the chunk copies matches at least this many of its code lines
Decided = list[tuple[Candidate, Decision]]  # the docs records with their decisions, in retrieval order


def _entry_of(ref: ClassReference, cls: str, member: str) -> str | None:
    """The entry that documents a member under another name: a setter's or getter's property, a constant's enum."""
    found = ref.member(cls, member)
    if not found:
        return None
    return found[1].get("accessor_of") or (found[1].get("type") if found[1].get("kind") == "constant" else None)


def members_unused(v: ValidationScope, c: Candidate, page_class: str) -> str | None:
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


def _shown_names(d: Decision) -> set[str]:
    """The names and strings of the chunk that a docs record's evidence shows (code lines apart)."""
    out: set[str] = set()
    for i in d.evidence:
        if i.kind == "string":
            out.add(i.literal)
        elif i.kind != "code_line":
            out.update(IDENT_RE.findall(i.literal))
    return out


def copied_page_overrules(v: ValidationScope, docs: Decided) -> Decided:
    """A chunk copied from a guide page has that page as its evidence. A page is a copied one when its
    accepted records match, up to renaming, at least `min_copied_lines` of the chunk's code lines holding
    `copy_source_share` of its code tokens. Another guide record that shows nothing of the chunk a copied
    page does not already show (every code line it matches, every name and string it shares) is then
    rejected (rule `copied_page`): it is the same evidence again, from a page the chunk did not come from.
    Class-reference entries are kept: they document the members themselves. The copied page's records are
    marked `copy_source`."""
    sizes = {n: len(toks) for n, toks in numbered_code_lines(v.facts.text)}
    total = sum(sizes.values())
    if not total or not v.copy_source_share:
        return docs
    # Each accepted guide with its place, its page, the chunk lines it matches and the names it shows.
    guides = [(at, c.page or c.id, set(d.clone_lines or ()), _shown_names(d)) for at, (c, d) in enumerate(docs)
              if d.accepted and d.page_class is None]
    lines: dict[str, set[int]] = {}
    names: dict[str, set[str]] = {}
    for _, page, matched, shown in guides:
        lines.setdefault(page, set()).update(matched)
        names.setdefault(page, set()).update(shown)
    share = {p: sum(sizes[n] for n in ls) / total for p, ls in lines.items()}
    copied = sorted((p for p, ls in lines.items() if len(ls) >= MIN_COPIED_LINES and share[p] >= v.copy_source_share),
                    key=lambda p: (-share[p], p))
    out = list(docs)
    for at, page, matched, shown in guides:
        c, d = docs[at]
        if page in copied:
            out[at] = (c, d.marked(copy_source=True))
            continue
        source = next((p for p in copied if matched <= lines[p] and shown <= names[p]), None)
        if source is not None:
            out[at] = (c, d.overruled("copied_page", accepted=False, copied_from=source, reason=(
                f"the chunk copies {source} ({len(lines[source])} of its {len(sizes)} code lines); "
                "this record shows nothing of the chunk that page does not")))
    return out


def model_shown(d: Decision) -> frozenset[tuple[str, str | int]]:
    """What an accepted guide shows of the chunk, as the guide model weighed it: the API, globals, callbacks,
    classes and constructs both share, and the chunk's code lines its code matches. Names either side chose are no evidence, so
    they are not counted (`_shown_names` counts them against a copied page, whose lines the chunk holds)."""
    return frozenset(model_shared(d.model or {}) + [("line", n) for n in d.clone_lines or ()])


def same_evidence_overrules(docs: Decided) -> Decided:
    """A guide page whose accepted records show the chunk nothing (`model_shown`) that one page retrieved before it
    does not show too is the same evidence again (a tutorial's steps repeat its script; two manual pages show the
    same call), and so is a record that shows nothing another record of its page retrieved before it does not:
    they are rejected (rule `same_evidence`; `repeats` names that page, or that record). Pages are compared whole:
    one whose records each show a part of what an earlier page shows, and together more, stays. `docs` is in
    retrieval order; a page the chunk copies goes first and stays, and so does a record whose code the chunk copies
    (`copied_code`). A guide that shows nothing at all (the model accepts one on its likeness for a chunk that uses
    no API) repeats nothing, so it stays too. Class-reference records stay: they document the members themselves."""
    pages: dict[str, list[tuple[int, Decision, frozenset]]] = {}
    for at, (c, d) in enumerate(docs):
        if d.accepted and d.page_class is None and d.model:
            pages.setdefault(c.page or c.id, []).append((at, d, model_shown(d)))
    order = sorted(pages, key=lambda p: not any(d.copy_source for _, d, _ in pages[p]))  # stable
    whole = {p: frozenset().union(*(shown for _, _, shown in pages[p])) for p in pages}
    out = list(docs)
    kept: list[str] = []
    for page in order:
        stays = any(_copied(d) for _, d, _ in pages[page]) or not whole[page]
        earlier = None if stays else next((k for k in kept if whole[page] <= whole[k]), None)
        if earlier is not None:
            for at, d, _ in pages[page]:
                out[at] = (docs[at][0], _repeats(d, earlier, "page"))
            continue
        kept.append(page)
        shown_before: list[tuple[Candidate, frozenset]] = []
        for at, d, shown in pages[page]:
            first = None if _copied(d) or not shown else next((k for k, s in shown_before if shown <= s), None)
            if first is None:
                shown_before.append((docs[at][0], shown))
            else:
                out[at] = (docs[at][0], _repeats(d, first.id, "record of its page"))
    return out


def _copied(d: Decision) -> bool:
    """The record is of a page the chunk copies, or its code is what the chunk copies."""
    return bool(d.copy_source or (d.model or {}).get("copied_code"))


def _repeats(d: Decision, what: str, kind: str) -> Decision:
    return d.overruled("same_evidence", accepted=False, repeats=what, reason=(
        f"shows nothing of the chunk that the {kind} {what}, retrieved before it, does not show too: the same evidence "
        "again"))


def other_members_overruled(v: ValidationScope, docs: Decided) -> Decided:
    """A class page's section that names the chunk's API only in other members' entries (`members_unused`:
    `add_icon_radio_check_item` saying "see set_item_checked") shows the page's topic, not the chunk's API. When
    another accepted record of that page describes what the chunk uses (or is its table or description), that
    record is the page's evidence and the section is rejected (rule `other_members`). Otherwise the page's first
    such section stays, as the class's page is still the reference for a class the chunk uses, unless what the
    chunk uses of the page is generic (its entry rejected by `generic_api`)."""
    by_page: dict[str, list[tuple[int, str | None]]] = {}
    generic: dict[str, str] = {}  # page -> its entry that documents only generic API the chunk uses
    for at, (c, d) in enumerate(docs):
        if d.accepted and d.page_class is not None:
            by_page.setdefault(c.page or c.id, []).append((at, members_unused(v, c, d.page_class)))
        elif "generic_api" in d.rules:
            generic.setdefault(c.page or c.id, c.id)
    out = list(docs)
    for page, entries in by_page.items():
        describing = [docs[at][0] for at, why in entries if why is None]
        mentioning = [(at, why) for at, why in entries if why is not None]
        keeper = describing[0] if describing else None if page in generic else docs[mentioning[0][0]][0]
        for at, why in mentioning:
            c, d = docs[at]
            if c is keeper:
                continue
            out[at] = (c, d.overruled("other_members", accepted=False, reason=f"{why}; " + (
                f"{keeper.id} is this page's evidence for the chunk" if keeper is not None
                else f"what the chunk uses of this page is generic ({generic[page]})")))
    return out
