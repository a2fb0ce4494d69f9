"""F's docs candidates as the ranker's rows (`godot-rag fit-ranker`, `ranker_fit.py`): what F already computed for
each candidate, read from its trace infos, never recomputed.

Per chunk, F runs once with explain on (its accepts, rejects and cut records) and D once (its top 10 docs records,
the baseline). Each docs candidate of F becomes one row: its group, F's verdict and rule, whether a contradiction
rejected it (a veto: the ranker never accepts it), and its named features (`retrieve/evidence/ranker_features.py`: the
rank stage reads the same; a guide also has the guide model's features, `guide.<name>`).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..gdscript.project import RequestContext
from ..retrieve.engine.config import RetrieveConfig
from ..retrieve.engine.types import Candidate
from ..retrieve.evidence.ranker_features import candidate_features, group_of, rules_decision, vetoed
from ..retrieve.pipeline import Retriever

DOCS = "docs_chunks"
D_TOP = 10  # D's docs records the baseline reads per chunk
MAX_API = 100  # API entries F may return per chunk when every candidate is wanted (RetrieveConfig's most)


@dataclass(frozen=True)
class RankerQuery:
    """One graded chunk: its id (`rc4:2d/...#0`, `beehave:addons/...#5`), its text and its project's context."""
    id: str
    text: str
    context: RequestContext | None = None


def candidate_row(query_id: str, c: Candidate) -> dict[str, Any]:
    """One docs candidate of F as a row: group, F's verdict and rule before the ranker's, veto, features."""
    d = rules_decision(c)
    accepted = d.accepted if d is not None else c.verdict == "accept"
    return {"query_id": query_id, "record_id": c.id, "group": group_of(c), "f_accepted": accepted,
            "f_rule": d.rule if d is not None else None, "vetoed": vetoed(c), "features": candidate_features(c)}


def every_candidate() -> RetrieveConfig:
    """F with every shortlisted docs candidate back: k as large as the reranker's shortlist, every API entry
    (F returns at most k rejects per table, and k accepts per group)."""
    return RetrieveConfig(k=RetrieveConfig().rerank_top, k_api=MAX_API)


def chunk_rows(retriever: Retriever, q: RankerQuery, cfg: RetrieveConfig) -> dict[str, Any]:
    """F's docs candidates of one chunk as rows (`cfg`: `every_candidate`), F's accepted order with the default
    settings, and D's top docs records."""
    res = retriever.retrieve(q.text, "F", cfg, explain=True, context=q.context)
    seen: set[str] = set()
    rows = []
    for c in [*res.results, *res.cut, *res.rejected]:
        if c.table == DOCS and c.id not in seen:
            seen.add(c.id)
            rows.append(candidate_row(q.id, c))
    f = retriever.retrieve(q.text, "F", RetrieveConfig(), explain=False, context=q.context)
    d = retriever.retrieve(q.text, "D", RetrieveConfig(k=D_TOP, tables=[DOCS]), explain=False, context=q.context)
    return {"rows": rows, "f_order": [c.id for c in f.results if c.table == DOCS],
            "d_order": [c.id for c in d.results if c.table == DOCS][:D_TOP]}


def collect(retriever: Retriever, queries: Sequence[RankerQuery], quiet: bool = False) -> dict[str, Any]:
    """`chunk_rows` of every query: {"rows": [...], "f_order": {query: ids}, "d_order": {query: ids}}."""
    cfg = every_candidate()
    out: dict[str, Any] = {"rows": [], "f_order": {}, "d_order": {}}
    for q in tqdm(queries, desc="run F and D", disable=quiet, unit="chunk"):
        got = chunk_rows(retriever, q, cfg)
        out["rows"].extend(got["rows"])
        out["f_order"][q.id] = got["f_order"]
        out["d_order"][q.id] = got["d_order"]
    return out


def cached_collect(retriever: Retriever, queries: Iterable[RankerQuery], cache: Path | None,
                   quiet: bool = False) -> dict[str, Any]:
    """`collect`, read from `cache` where it exists, else written there (a refit without rerunning F)."""
    if cache is not None and cache.exists():
        data: dict[str, Any] = json.loads(cache.read_text())
        return data
    data = collect(retriever, list(queries), quiet)
    if cache is not None:
        cache.write_text(json.dumps(data))
    return data
