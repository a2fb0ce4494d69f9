"""F's third candidate source, `api`: the class-reference entry that documents each API use the
resolve stage found, joined to the docs candidates that BM25 and the embedding shortlisted."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts
from ...gdscript.resolution import Resolution
from ..engine.stage import Stage
from ..engine.state import Pool, Pooled, QueryState, table_list
from ..engine.trace import SCORE_DIGITS, ApiInfo, ApiUseEntry
from ..engine.types import Candidate
from ..query.parse import ResolvedChunk
from .resources import ApiIndex, EvidenceResources

BOLD_NAME_RE = re.compile(r"\*\*(@?[A-Za-z_\\][A-Za-z0-9_\\]*)\*\*")


def build_api_index(docs: Mapping[str, dict[str, Any]], ref: ClassReference) -> ApiIndex:
    """Where the class reference documents each member: (class, member) -> docs chunk id,
    class -> its page's first chunk, page path -> class."""
    page_class = {info["page"]: cls for cls, info in ref.classes.items()}
    members: dict[tuple[str, str], str] = {}
    first: dict[str, str] = {}
    for rid, rec in docs.items():
        cls = page_class.get((rec.get("metadata") or {}).get("page_path"))
        if cls is None:
            continue
        first.setdefault(cls, rid)
        sym = rec.get("symbol") or ""
        if sym.startswith(cls + "."):
            members[(cls, sym.split(".", 1)[1])] = rid  # the member's own entry wins
        for m in (rec.get("metadata") or {}).get("members") or []:
            members.setdefault((cls, m), rid)
        # Constants inside an enum entry, and table rows, are found by their bold name.
        for m in BOLD_NAME_RE.findall(rec.get("content") or ""):
            members.setdefault((cls, m.replace("\\", "")), rid)
    return ApiIndex(members=members, first=first, page_class=page_class)


def run_shortlist(q: QueryState[EvidenceResources], pool: Pool) -> Pooled:
    """Only the first rerank_top docs candidates go on to the validator; the other tables go whole."""
    docs = table_list(pool, "docs_chunks")
    if not docs:
        return Pooled(pool)
    out = dict(pool)
    out["docs_chunks"] = [docs[: q.cfg.rerank_top]]
    q.record_ids("docs_chunks", "shortlist", out["docs_chunks"][0])  # what goes on (the web page's "lost at")
    q.note(kept=len(out["docs_chunks"][0]), dropped=max(0, len(docs) - q.cfg.rerank_top))
    return Pooled(out)


def extended_class(q: QueryState[EvidenceResources], res: Resolution) -> str | None:
    """The class the chunk's own `extends` line names, when the setting `api_extends` is on and the class is no hub
    of the hierarchy (`extends Camera3D`, not `extends Node2D`): a use of the class, whose description is evidence
    for a script of that node type. A hint's or the project's `extends` is not the chunk's own line: every chunk of
    a file would get the description."""
    if not q.cfg.api_extends or res.own_class_from != "chunk" or res.own_class is None:
        return None
    model = q.resources.guide_model()
    if model is None or model[1].generic(res.own_class):
        return None
    return res.own_class


def typed_classes(q: QueryState[EvidenceResources], facts: GDScriptFacts, res: Resolution) -> dict[str, str]:
    """The classes the chunk writes as a type (`var anim: AnimationPlayer`, `p: Timer`, `for l: Label in ...`) and
    uses nothing of, with the declaration that writes each (`anim: AnimationPlayer`), when the setting `api_typed` is
    on: an engine object class that is no hub of the hierarchy (not `Node2D`, nor a value type such as `Vector2`,
    whose description tells a reviewer nothing). A class the chunk uses a member of already has that member's entry."""
    model = q.resources.guide_model()
    if not q.cfg.api_typed or model is None:
        return {}
    ref, stats, used = q.resources.class_reference(), model[1], res.classes
    out: dict[str, str] = {}
    for name, cls in facts.local_types.items():
        # A value type (`Vector2`, `Color`) is a class with no parent; so is `Object`, a hub of its own.
        if (cls not in out and cls not in used and ref.has_class(cls) and ref.classes[cls].get("inherits")
                and not stats.generic(cls)):
            out[cls] = f"{name}: {cls}"
    return out


class ClassUse(NamedTuple):
    via: str  # extends | typed
    code: str  # the code that says so: `extends Camera3D`, `anim: AnimationPlayer`


ClassUses = Mapping[str, ClassUse]  # class -> how the chunk uses it as a whole


def class_uses(q: QueryState[EvidenceResources], facts: GDScriptFacts, res: Resolution) -> dict[str, ClassUse]:
    """The classes the chunk uses as a whole rather than through a member: the one its own `extends` names
    (`extended_class`) and those it writes as a type (`typed_classes`), each with the code that says so. Their class
    descriptions are evidence (`docs_evidence._resolved_api`)."""
    out = {cls: ClassUse("typed", code) for cls, code in typed_classes(q, facts, res).items()}
    if (cls := extended_class(q, res)) is not None:
        out[cls] = ClassUse("extends", f"extends {cls}")
    return out


def api_list(q: QueryState[EvidenceResources], facts: GDScriptFacts, res: Resolution, uses: ClassUses) -> list[Candidate]:
    index = q.resources.api_index()
    recs = q.resources.records("docs_chunks")
    weight = q.cfg.weight_api
    found: dict[str, tuple[int, list[ApiUseEntry]]] = {}
    for use in res.uses:
        rid = index["members"].get((use.cls, use.member)) or index["first"].get(use.cls)
        if rid is None:
            continue
        entry = ApiUseEntry(api=use.api, line=use.line, col=use.col, code=use.text, via=use.via,
                            entry="member" if (use.cls, use.member) in index["members"] else "class page")
        found.setdefault(rid, (len(found) + 1, []))[1].append(entry)
    for cls, whole in uses.items():
        if (rid := index["first"].get(cls)) is not None:
            found.setdefault(rid, (len(found) + 1, []))[1].append(
                ApiUseEntry(api=cls, line=facts.line_of(cls) or 1, col=1, code=whole.code, via=whole.via,
                            entry="class page"))
    out = []
    for rid, (rank, entries) in found.items():
        c = Candidate(table="docs_chunks", id=rid, payload=recs[rid], score=weight, rank=rank, source="api",
                      group="api_reference")
        c.add_stage("api", ApiInfo(rank=rank, weight=weight, score=weight, uses=entries))
        out.append(c)
    return out


class ApiJoined(NamedTuple):
    pool: Pool
    class_uses: ClassUses  # the classes the chunk uses as a whole


def run_api(q: QueryState[EvidenceResources], pool: Pool, resolved: ResolvedChunk) -> ApiJoined:
    facts, resolution = resolved
    uses = class_uses(q, facts, resolution)
    if "docs_chunks" not in q.tables:
        return ApiJoined(pool, uses)
    weight = q.cfg.weight_api
    api = {c.id: c for c in api_list(q, facts, resolution, uses)}
    q.record_ids("docs_chunks", "api", list(api.values()))
    joined = []
    for c in table_list(pool, "docs_chunks"):
        if c.id in api:  # found by BM25/embedding and resolved: one candidate, both sources
            own = api.pop(c.id).info("api")
            c = c.derive()
            before = c.score
            c.source = f"{c.source}+api"
            c.group = "api_reference"
            c.score = before + weight  # the api source's own weight, added to the fused score
            c.add_stage("api", ApiInfo(weight=weight, score_before=round(before, SCORE_DIGITS),
                                       score=round(c.score, SCORE_DIGITS), uses=own.uses))
        joined.append(c)
    out = dict(pool)
    out["docs_chunks"] = [joined + list(api.values())]
    q.note(uses=len(resolution.uses), joined=sum(1 for c in joined if c.group == "api_reference"), added=len(api))
    return ApiJoined(out, uses)


SHORTLIST = Stage("shortlist", run_shortlist, "the first rerank_top docs candidates go on; the rest stop here")
API = Stage("api", run_api, "the class-reference entry of each resolved use joins the docs (source api, weight_api)")
