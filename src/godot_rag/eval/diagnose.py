"""failures.jsonl: why a query missed a relevant page, mapping or API member, and which mappings it wrongly accepted."""
from __future__ import annotations

from typing import Any

from ..retrieve.engine.types import Candidate, RetrieveResult
from ..retrieve.migration.version import EVIDENCE_STATUSES
from .metrics import dedupe_pages, mapping_triple, page_of
from .queries import Query

PRE_RERANK_STAGES = ("merge", "codematch", "fuse", "union")  # the last order before the reranker and the validator


def first_rank(ids: list[str], page: str) -> int | None:
    for i, cid in enumerate(ids, 1):
        if page_of(cid) == page:
            return i
    return None


def accepted_mappings(result: RetrieveResult) -> set[tuple[str, str, str]]:
    """The converter-table triples of the accepted mappings (prose and syntax mappings have none)."""
    return {t for c in result.by_table("api_mapping") if (t := mapping_triple(c.id)) is not None}


def symbols_of(c: Candidate) -> set[str]:
    return set(c.payload.get("api_symbols") or []) | ({c.payload["symbol"]} if c.payload.get("symbol") else set())


def accepted_symbols(result: RetrieveResult) -> set[str]:
    out: set[str] = set()
    for c in result.by_table("docs_chunks"):
        out |= symbols_of(c)
    return out


def api_page(api: str, q: Query) -> str | None:
    cls = api.split(".", 1)[0].lower()
    return next((p for p in q.relevant_api_pages if p == f"classes/class_{cls}"), None)


def wrong_mapping(q: Query, strategy: str, c: Candidate, stage: str) -> dict[str, Any]:
    """A failures.jsonl entry for a wrongly accepted mapping, with the occurrences it was accepted on."""
    v = c.info("validate")
    occ = [o for o in ((v.occurrences if v else None) or []) if o.status in EVIDENCE_STATUSES]
    return {"query": q.id, "file": q.file, "strategy": strategy, "wrongly_accepted_mapping": c.id, "stage": stage,
            "occurrences": [{"line": o.line, "col": o.col, "region": o.region, "status": o.status, "why": o.why}
                            for o in occ[:5]]}


def _page_stage(page: str, strategy: str, result: RetrieveResult, ranks: dict[str, int | None], k: int) -> str:
    """The stage where a relevant page fell out of the top k."""
    ids = result.trace.candidate_ids.get("docs_chunks", {})
    pre = next((s for s in PRE_RERANK_STAGES if s in ranks), "union")
    if strategy == "A":
        return "no tsquery hit" if not result.by_table("docs_chunks") else "ranked below k by ts_rank_cd"
    if not any(ranks.get(s) for s in ("bm25", "embedding")):
        used = [s for s in ("bm25", "embedding") if s in ids]
        return "never retrieved by " + " or ".join("BM25" if s == "bm25" else "embedding" for s in used)
    if ranks.get(pre) is None or ((ranks.get(pre) or 0) > k and "rerank" not in ranks):
        return f"cut after the {pre} stage"
    rerank = ranks.get("rerank")
    if "rerank" in ranks and (rerank is None or rerank > k):
        return "reranked below k"
    rejected = {c.id: c for c in result.rejected if c.table == "docs_chunks"}
    rej = next((c for cid, c in rejected.items() if page_of(cid) == page), None)
    return f"rejected by the validator: {rej.reason}" if rej else "ranked below k"


def _missed_pages(q: Query, strategy: str, result: RetrieveResult, k: int) -> list[dict[str, Any]]:
    pages = dedupe_pages([c.id for c in result.by_table("docs_chunks")])
    ids = result.trace.candidate_ids.get("docs_chunks", {})
    out = []
    for page in q.relevant_pages:
        rank = pages.index(page) + 1 if page in pages else None
        if rank is not None and rank <= k:
            continue
        ranks = {stage: first_rank(lst, page) for stage, lst in ids.items()}
        stage = _page_stage(page, strategy, result, ranks, k)
        best = next((c for c in result.results + result.rejected if page_of(c.id) == page), None)
        terms = []
        if best is not None and best.info("explain") is not None:
            terms = [t["term"] for t in best.info("explain").matched_terms[:10]]
        out.append({"query": q.id, "file": q.file, "variant": q.variant, "strategy": strategy, "missed": page,
                    "stage": stage, "final_page_rank": rank, "stage_ranks": ranks, "matched_terms": terms})
    return out


def _missed_mappings(q: Query, strategy: str, result: RetrieveResult) -> list[dict[str, Any]]:
    out = []
    for m in sorted(set(q.relevant_mappings) - accepted_mappings(result)):
        ids_m = result.trace.candidate_ids.get("api_mapping", {})
        mid = f"{m[0]}:{m[1]}->{m[2]}"
        rej = next((c for c in result.rejected if c.id == mid), None)
        stage = (f"rejected by the validator: {rej.reason}" if rej else
                 "never retrieved" if not any(mid in lst for lst in ids_m.values()) else "ranked below k")
        out.append({"query": q.id, "file": q.file, "strategy": strategy, "missed_mapping": list(m), "stage": stage})
    return out


def _wrong_mappings(q: Query, strategy: str, result: RetrieveResult) -> list[dict[str, Any]]:
    gold = set(q.relevant_mappings)
    out = []
    for c in result.by_table("api_mapping"):
        triple = mapping_triple(c.id)
        wrong = (q.expect_no_mappings or (triple is not None and gold and triple not in gold)
                 or (triple is not None and not gold and q.variant == "godot3"))
        if wrong:
            out.append(wrong_mapping(q, strategy, c, "accepted without being in the gold"))
    return out


def _api_stage(api: str, result: RetrieveResult) -> str:
    """Why an API member the chunk uses has no accepted record documenting it."""
    resolved = {u["api"] for u in (result.trace.resolve or {}).get("uses", [])}
    api_ids = result.trace.candidate_ids.get("docs_chunks", {}).get("api", [])
    if api not in resolved:
        return "not resolved by the resolve stage"
    if not api_ids:
        return "resolved, but no class-reference record documents it"
    rej = next((c for c in result.rejected if c.table == "docs_chunks" and api in symbols_of(c)), None)
    return f"rejected by the validator: {rej.reason}" if rej else "cut at k"


def _missed_api(q: Query, strategy: str, result: RetrieveResult) -> list[dict[str, Any]]:
    if not q.relevant_api_pages:
        return []
    accepted_pages = {c.page for c in result.by_table("docs_chunks")}
    symbols = accepted_symbols(result)
    return [{"query": q.id, "file": q.file, "strategy": strategy, "missed_api": api,
             "page_accepted": api_page(api, q) in accepted_pages, "stage": _api_stage(api, result)}
            for api in q.relevant_api if api not in symbols]


def diagnose(q: Query, strategy: str, result: RetrieveResult, k: int) -> list[dict[str, Any]]:
    """One entry per relevant page or mapping that was missed, and per wrongly accepted mapping."""
    return (_missed_pages(q, strategy, result, k) + _missed_mappings(q, strategy, result)
            + _wrong_mappings(q, strategy, result) + _missed_api(q, strategy, result))
