"""F's third candidate source, `api`: the class-reference entry that documents each API use the
resolve stage found, joined to the docs candidates that BM25 and the embedding shortlisted."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...gdscript.classref import ClassReference
from ..engine.stage import Stage
from ..engine.state import PartKey, Pool, QueryState
from ..engine.trace import SCORE_DIGITS, ApiInfo, ApiUseEntry
from ..engine.types import Candidate
from ..query.parse import FACTS, RESOLUTION

BOLD_NAME_RE = re.compile(r"\*\*(@?[A-Za-z_\\][A-Za-z0-9_\\]*)\*\*")


def build_api_index(docs: Mapping[str, dict[str, Any]], ref: ClassReference) -> dict[str, Any]:
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
    return {"members": members, "first": first, "page_class": page_class}


def run_shortlist(ctx: QueryState, pool: Pool) -> Pool:
    """Only the first rerank_top docs candidates go on to the validator; the other tables go whole."""
    docs = ctx.table_lists(pool, "docs_chunks")
    if not docs:
        return pool
    out = dict(pool)
    out["docs_chunks"] = [docs[: ctx.cfg.rerank_top]]
    ctx.record_ids("docs_chunks", "shortlist", out["docs_chunks"][0])  # what goes on (the web page's "lost at")
    ctx.note(kept=len(out["docs_chunks"][0]), dropped=max(0, len(docs) - ctx.cfg.rerank_top))
    return out


def extended_class(ctx: QueryState) -> str | None:
    """The class the chunk's own `extends` line names, when the setting `api_extends` is on and the class is no hub
    of the hierarchy (`extends Camera3D`, not `extends Node2D`): a use of the class, whose description is evidence
    for a script of that node type. A hint's or the project's `extends` is not the chunk's own line: every chunk of
    a file would get the description."""
    res = ctx[RESOLUTION]
    if not ctx.cfg.api_extends or res.own_class_from != "chunk" or res.own_class is None:
        return None
    model = ctx.resources.guide_model()
    if model is None or model[1].generic(res.own_class):
        return None
    return res.own_class


def typed_classes(ctx: QueryState) -> dict[str, str]:
    """The classes the chunk writes as a type (`var anim: AnimationPlayer`, `p: Timer`, `for l: Label in ...`) and
    uses nothing of, with the declaration that writes each (`anim: AnimationPlayer`), when the setting `api_typed` is
    on: an engine object class that is no hub of the hierarchy (not `Node2D`, nor a value type such as `Vector2`,
    whose description tells a reviewer nothing). A class the chunk uses a member of already has that member's entry."""
    model = ctx.resources.guide_model()
    if not ctx.cfg.api_typed or model is None:
        return {}
    ref, stats, used = ctx.resources.class_reference(), model[1], ctx[RESOLUTION].classes
    out: dict[str, str] = {}
    for name, cls in ctx[FACTS].local_types.items():
        # A value type (`Vector2`, `Color`) is a class with no parent; so is `Object`, a hub of its own.
        if (cls not in out and cls not in used and ref.has_class(cls) and ref.classes[cls].get("inherits")
                and not stats.generic(cls)):
            out[cls] = f"{name}: {cls}"
    return out


class ClassUse(NamedTuple):
    via: str  # extends | typed
    code: str  # the code that says so: `extends Camera3D`, `anim: AnimationPlayer`


CLASS_USES = PartKey[Mapping[str, ClassUse]]("class_uses", "the classes the chunk uses as a whole")


def class_uses(ctx: QueryState) -> dict[str, ClassUse]:
    """The classes the chunk uses as a whole rather than through a member: the one its own `extends` names
    (`extended_class`) and those it writes as a type (`typed_classes`), each with the code that says so. Their class
    descriptions are evidence (`docs_evidence._resolved_api`)."""
    out = {cls: ClassUse("typed", code) for cls, code in typed_classes(ctx).items()}
    if (cls := extended_class(ctx)) is not None:
        out[cls] = ClassUse("extends", f"extends {cls}")
    return out


def api_list(ctx: QueryState) -> list[Candidate]:
    index = ctx.resources.api_index()
    recs = ctx.resources.records("docs_chunks")
    weight = ctx.cfg.weight_api
    found: dict[str, tuple[int, list[ApiUseEntry]]] = {}
    for use in ctx[RESOLUTION].uses:
        rid = index["members"].get((use.cls, use.member)) or index["first"].get(use.cls)
        if rid is None:
            continue
        entry = ApiUseEntry(api=use.api, line=use.line, col=use.col, code=use.text, via=use.via,
                            entry="member" if (use.cls, use.member) in index["members"] else "class page")
        found.setdefault(rid, (len(found) + 1, []))[1].append(entry)
    for cls, whole in ctx[CLASS_USES].items():
        if (rid := index["first"].get(cls)) is not None:
            found.setdefault(rid, (len(found) + 1, []))[1].append(
                ApiUseEntry(api=cls, line=ctx[FACTS].line_of(cls) or 1, col=1, code=whole.code, via=whole.via,
                            entry="class page"))
    out = []
    for rid, (rank, uses) in found.items():
        c = Candidate(table="docs_chunks", id=rid, payload=recs[rid], score=weight, rank=rank, source="api",
                      group="api_reference")
        c.add_stage("api", ApiInfo(rank=rank, weight=weight, score=weight, uses=uses))
        out.append(c)
    return out


def run_api(ctx: QueryState, pool: Pool) -> Pool:
    ctx[CLASS_USES] = class_uses(ctx)
    if "docs_chunks" not in ctx.tables:
        return pool
    weight = ctx.cfg.weight_api
    api = {c.id: c for c in api_list(ctx)}
    ctx.record_ids("docs_chunks", "api", list(api.values()))
    joined = []
    for c in ctx.table_lists(pool, "docs_chunks"):
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
    ctx.note(uses=len(ctx[RESOLUTION].uses), joined=sum(1 for c in joined if c.group == "api_reference"), added=len(api))
    return out


SHORTLIST = Stage("shortlist", run_shortlist, "the first rerank_top docs candidates go on; the rest stop here",
                  requires=("pool",))
API = Stage("api", run_api, "the class-reference entry of each resolved use joins the docs (source api, weight_api)",
            requires=("pool", FACTS, RESOLUTION), provides=(CLASS_USES,))
