"""The overrules of the docs verdicts, across the chunk's docs records: a page the chunk copies stands for the guides
that show nothing more (`copied_page_overrules`), a page or record that shows nothing new is the same evidence
again (`same_evidence_overrules`), a class page's section about other members gives way to the one that describes
what the chunk uses (`other_members_overruled`). Each changes the records' infos in place."""
from __future__ import annotations

from ...gdscript.classref import ClassReference
from ...gdscript.lexicon import IDENT_RE
from ..engine.types import Candidate
from ..recall.codematch import numbered_code_lines
from .docs_evidence import MEMBERS_SHOWN
from .validation_scope import ValidationScope

MIN_COPIED_LINES = 3  # a page the chunk copies matches at least this many of its code lines


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


def _shown_names(info: dict) -> set[str]:
    """The names and strings of the chunk that a docs record's evidence shows (code lines apart)."""
    out: set[str] = set()
    for i in info["evidence"]:
        if i.kind == "string":
            out.add(i.literal)
        elif i.kind != "code_line":
            out.update(IDENT_RE.findall(i.literal))
    return out


def copied_page_overrules(v: ValidationScope, docs: list[tuple[Candidate, dict]]) -> None:
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
    copied = sorted((p for p, ls in lines.items() if len(ls) >= MIN_COPIED_LINES and share[p] >= v.copy_source_share),
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


def other_members_overruled(v: ValidationScope, docs: list[tuple[Candidate, dict]]) -> None:
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
