""""Why this record / why not this record?" over one retrieve result: the stage that lost it, with its
rank and score at every stage it reached, and the reason. The same reading of a result as the
debugger page's why-not (web/static/journey.js `buildJourney` / `whyNot`), for the MCP `explain` tool.

It reads only the result: the candidates' own traces (results, cut, rejected; run with explain=True
so the cut records come back) and `trace.candidate_ids` (table -> stage -> ranked ids).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel

from ...gdscript.facts import GDScriptFacts, parse_chunk
from ...records import TABLES
from ..engine.trace import CutInfo
from ..engine.types import Candidate, RetrieveResult
from ..recall.prefilter import TABLE as PREFILTER_TABLE
from ..recall.prefilter import absent_reason, source_absent

# Stages that say something about each record (a column of the page's matrix); the others are query-level.
RECORD_STAGES = ("tsquery", "bm25", "embedding", "union", "fuse", "codematch", "merge", "rerank", "shortlist", "api",
                 "validate", "check", "judge", "rank", "score", "cut")
LOSSY = {"shortlist", "validate", "judge", "rank", "cut"}  # a record can be gone after these
# A record absent here was simply not found by it (the API check's findings accept a derived record the validator
# rejected: the record is back through it).
SOURCES = {"tsquery", "bm25", "embedding", "api", "check"}
Outcome = Literal["returned", "cut", "rejected", "lost", "unseen"]


StepStatus = Literal["reached", "lost here", "absent", "off"]


class WhyStep(BaseModel):
    stage: str
    status: StepStatus
    rank: int | None = None
    score: float | None = None
    detail: str = ""


class WhyRecord(BaseModel):
    table: str
    id: str
    outcome: Outcome
    lost_at: str | None = None  # the stage that lost it (None when returned)
    final_rank: int | None = None
    group: str | None = None
    verdict: str  # one line: "returned at #1 (guides)" or "lost at validate: <reason>"
    rule: str | None = None  # the named rule that decided its verdict (Candidate.decision), when one did
    rule_chain: list[str] = []  # the decisions' rules, the first (the rule tables') to the last (an overrule)
    steps: list[WhyStep]
    ranks_only: bool = False  # only the trace's id lists saw it: no per-stage scores in the result


def page_of(record_id: str) -> str:
    return record_id.split("#", 1)[0]


def _validate_detail(info: Any) -> str:
    return f"{info.verdict}, confidence {info.confidence}" + (": " + "; ".join(info.reasons) if info.reasons else "")


def _cut_cell(info: Any) -> dict[str, Any]:
    return {"rank": info.rank if info.kept else None,
            "detail": f"kept: rank {info.rank}" if info.kept else f"cut: position {info.position} > k {info.k}"}


# stage -> what its info (of that stage's own class) and the record's rank in its list say, as cell fields
CELL_OF: dict[str, Callable[[Any, int | None], dict[str, Any]]] = {
    "tsquery": lambda info, _: {"score": info.ts_rank_cd, "detail": f"ts_rank_cd {info.ts_rank_cd}"},
    "bm25": lambda info, _: {"score": info.score,
                             "detail": f"BM25 {info.score}" + (f" in segment {info.text}" if info.text else "")},
    "embedding": lambda info, _: {"score": info.cosine, "detail": f"cosine {info.cosine}"},
    "union": lambda info, list_rank: {"rank": list_rank, "detail": "found by " + info.source},
    "fuse": lambda info, _: {"score": info.score, "detail": f"{info.method} fused score {info.score}"},
    "codematch": lambda info, _: {"score": info.ratio, "detail": f"code-clone ratio {info.ratio}"},
    "merge": lambda info, _: {"score": info.score, "detail": f"best rank {info.best_rank} over the chunk and its segments"},
    "rerank": lambda info, _: {"score": info.score, "detail": f"{info.backend}: #{info.rank_before or '-'} -> #{info.rank}"},
    "api": lambda info, _: {"score": info.score,
                            "detail": "api source: " + ", ".join(f"{u.api} (line {u.line})" for u in info.uses)},
    "validate": lambda info, _: {"score": info.confidence, "verdict": info.verdict, "detail": _validate_detail(info)},
    "check": lambda info, _: {"verdict": "accept", "detail": "API check: " + "; ".join(
        f"{f.kind} at line {f.line}: {f.api} ({f.rule})" for f in info.findings)},
    "judge": lambda info, _: {"score": info.confidence, "verdict": "accept" if info.accepted else "reject",
                              "detail": f"judge {info.answer} P(yes) {info.p_yes}"},
    "rank": lambda info, _: {"score": info.p, "verdict": "accept" if info.accepted else "reject",
                             "detail": f"ranker P(direct) {info.p} {'>=' if info.accepted else '<'} {info.threshold}"
                                       + (f", kept out most by {info.kept_out_by}" if info.kept_out_by else "")},
    "score": lambda info, _: {"score": info.score, "detail": f"final score {info.score}"},
    "cut": lambda info, _: _cut_cell(info),
}


def _cell(stage: str, info: Any, list_rank: int | None) -> dict:
    """{present, rank, score, verdict, detail} of one record at one stage (`info`: that stage's, of its own class)."""
    if info is None and list_rank is None:
        return {"present": False}
    cell = {"present": True, "rank": getattr(info, "rank", None) if info is not None else None, "score": None,
            "verdict": None, "detail": ""}
    if cell["rank"] is None:
        cell["rank"] = list_rank
    if info is None:
        cell["detail"] = "rank only"
        return cell
    if stage in CELL_OF:
        cell.update(CELL_OF[stage](info, list_rank))
    return cell


def absent_source(result: RetrieveResult, table: str, rid: str, records: Mapping[str, dict] | None) -> str | None:
    """The source_api of an api_mapping record the chunk cannot hold (the prefilter's test, on demand), else None."""
    payload = (records or {}).get(rid) if table == PREFILTER_TABLE else None
    if payload is None or not source_absent(_facts(result.chunk_text), payload):
        return None
    return payload["source_api"]


@lru_cache(maxsize=8)
def _facts(chunk: str) -> GDScriptFacts:
    return parse_chunk(chunk)


def _passed(stage: str, cell: dict, info: Any, list_rank: int | None, rank_in: dict[str, dict[str, int]]) -> bool:
    """Whether the record went on past this stage."""
    passed = cell["present"]
    if stage in ("validate", "judge", "rank"):
        if cell.get("verdict"):
            passed = cell["verdict"] == "accept"
        elif stage == "validate" and "validate" in rank_in:
            passed = list_rank is not None
    if stage == "cut" and isinstance(info, CutInfo):
        passed = info.kept
    if stage == "cut" and info is None and "cut" in rank_in:
        passed = list_rank is not None
    return passed


@dataclass(frozen=True)
class Reading:
    """What every record's journey is read against: the result, its record stages (the columns), and the asked
    record with the api_mapping records by id (`why`'s `records`, which only its own journey reads)."""
    result: RetrieveResult
    columns: list[str]
    record: str
    records: Mapping[str, dict] | None = None

    def records_for(self, rid: str) -> Mapping[str, dict] | None:
        return self.records if rid == self.record else None


def _journey(read: Reading, table: str, rid: str, placed: tuple[Candidate, str] | None, lists: dict) -> dict:
    cand, where = placed if placed else (None, None)
    trace = cand.trace if cand is not None else {}
    rank_in = {stage: {i: n for n, i in enumerate(ids, 1)} for stage, ids in lists.items()}
    cells, seen, lost = {}, False, None
    for stage in read.columns:
        list_rank = rank_in[stage].get(rid) if stage in rank_in else None
        info = trace.get(stage)
        cell = _cell(stage, info, list_rank)
        if _passed(stage, cell, info, list_rank, rank_in):
            if lost and (stage in SOURCES or stage == "rank"):
                lost = None  # back through another source (the api list), or accepted by the ranker after a rule rejected it
            seen = True
        elif seen and not lost and stage in LOSSY and (cell["present"] or stage in rank_in or info is not None):
            lost = stage
        elif stage == "rank" and cell["present"]:
            lost = stage  # the ranker decides again what a rule rejected: its reject is the one that stands
        cells[stage] = cell
    rec: dict[str, Any] = {"cells": cells, "cand": cand}
    rec.update(_outcome(Journey(table, rid, cand, where, lost, seen, cells, read.columns), read.result,
                        read.records_for(rid)))
    return rec


@dataclass(frozen=True)
class Journey:
    """Where one record went through the columns' stages: the stage that lost it, whether any stage let it pass."""
    table: str
    rid: str
    cand: Candidate | None
    where: str | None  # returned | cut | rejected, where the result places it
    lost: str | None
    seen: bool
    cells: dict
    columns: list[str]


def _outcome(j: Journey, result: RetrieveResult, records: Mapping[str, dict] | None) -> dict[str, Any]:
    """{outcome, lost, reason}: where the record's journey ended, and why."""
    table, rid, cand, where, lost, cells = j.table, j.rid, j.cand, j.where, j.lost, j.cells
    if where == "returned":
        return {"outcome": "returned", "lost": None}
    if lost == "cut" or where == "cut":
        ci = cand.trace.get("cut") if cand is not None else None
        ci = ci if isinstance(ci, CutInfo) else None
        reason = (f"accepted, but position {ci.position}{' in ' + ci.group if ci.group else ''} > k {ci.k}" if ci else
                  f"not among the first k ({result.k.get(table, result.config.get('k'))}) at the cut")
        return {"outcome": "cut", "lost": "cut", "reason": reason}
    if lost in ("validate", "judge", "rank") or where == "rejected":
        dropped = absent_source(result, table, rid, records)
        return {"outcome": "rejected", "lost": lost or "validate",
                "reason": cand.reason if cand is not None and cand.reason else
                absent_reason(dropped) + " (known before validation: no candidate was built for it)" if dropped else
                "rejected by the validator (its reasons are not in the result: only the first k rejected records "
                "of each table come back)"}
    if lost == "shortlist":
        merged = cells.get("merge", {})
        rank = merged.get("rank") if merged.get("present") else _last_rank(cells, j.columns)
        return {"outcome": "lost", "lost": "shortlist", "reason": f"ranked #{rank} before the shortlist; only the first "
                f"rerank_top ({result.config.get('rerank_top')}) docs go on to the validator"}
    if lost:
        return {"outcome": "lost", "lost": lost, "reason": f"lost at {lost}"}
    if not j.seen:
        return {"outcome": "unseen", "lost": None, "reason": "no stage saw it"}
    return {"outcome": "lost", "lost": "cut", "reason": "not returned"}


def _last_rank(cells: dict, columns: list[str]) -> int | None:
    for stage in reversed(columns):
        c = cells.get(stage) or {}
        if c.get("present") and c.get("rank") is not None and stage != "cut":
            return c["rank"]
    return None


def unseen_reason(result: RetrieveResult) -> str:
    """What a record that no stage saw was up against."""
    names = result.trace.stage_list
    if "tsquery" in names:
        return "no stage saw it: the tsquery (every token ANDed) did not match it" + (
            f" ({result.trace.tsquery})" if result.trace.tsquery else "")
    parts = []
    if "bm25" in names:
        parts.append(f"the top {result.config.get('candidates')} of BM25")
    if "embedding" in names:
        parts.append(f"the top {result.config.get('candidates')} of the embedding")
    if "api" in names:
        parts.append("the class-reference entries of the resolved API uses")
    return "no stage saw it: it was not among " + ", nor ".join(parts) + " for this chunk"


def why(result: RetrieveResult, record: str, records: Mapping[str, dict] | None = None) -> list[WhyRecord]:
    """Every record the result knows under `record` (a record id, or a docs page path such as
    `getting_started/first_2d_game/03.coding_the_player`), in table order; [] when no stage saw it.
    `records`: the api_mapping records by id, to give the reason of one that the prefilter dropped."""
    columns = [s for s in dict.fromkeys(result.trace.stage_list) if s in RECORD_STAGES]
    placed: dict[tuple[str, str], tuple[Candidate, str]] = {}
    for where, cands in (("returned", result.results), ("cut", result.cut), ("rejected", result.rejected)):
        for c in cands:
            placed.setdefault((c.table, c.id), (c, where))
    tables = result.config.get("tables") or TABLES
    read = Reading(result, columns, record, records)
    journeys = {}
    for table in tables:
        lists = result.trace.candidate_ids.get(table, {})
        ids = set().union(*lists.values()) if lists else set()
        ids |= {rid for (t, rid) in placed if t == table}
        for rid in ids:
            journeys[(table, rid)] = _journey(read, table, rid, placed.get((table, rid)), lists)
    # a stage no record reached, or one the query skipped, is "off" (the page greys its column)
    skipped = {log.stage for log in result.trace.stages if (log.info or {}).get("skipped")}
    off = {s for s in columns if s in skipped or not any(j["cells"][s]["present"] for j in journeys.values())}
    wanted = [key for key in journeys if key[1] == record] or sorted(
        (key for key in journeys if key[0] == "docs_chunks" and page_of(key[1]) == record), key=lambda k: k[1])
    return [_why_record(table, rid, journeys[(table, rid)], columns, off)
            for table, rid in sorted(wanted, key=lambda k: tables.index(k[0]) if k[0] in tables else 99)]


def _why_record(table: str, rid: str, j: dict[str, Any], columns: list[str], off: set[str]) -> WhyRecord:
    """One record's journey (`_journey`) as the answer gives it: a step per column and a one-line verdict."""
    cand = j["cand"]
    steps = []
    for s in columns:
        cell = j["cells"][s]
        lost_here = j["lost"] == s and j["outcome"] != "returned"
        status: StepStatus = ("off" if s in off else "lost here" if lost_here else "reached" if cell["present"]
                              else "absent")
        steps.append(WhyStep(stage=s, status=status, rank=cell.get("rank") if cell["present"] else None,
                             score=cell.get("score") if cell["present"] else None,
                             detail=(cell.get("detail") or "") if cell["present"] else ""))
    if j["outcome"] == "returned":
        verdict = f"returned at #{cand.rank}" + (f" ({cand.group})" if cand.group else "")
    else:
        verdict = f"lost at {'the cut at k' if j['lost'] == 'cut' else j['lost']}: {j['reason']}"
    decision = cand.decision if cand is not None else None
    if decision is not None and j["outcome"] == "rejected":
        verdict += f" (rule {decision.rule})"
    return WhyRecord(table=table, id=rid, outcome=j["outcome"], lost_at=j["lost"],
                     final_rank=cand.rank if j["outcome"] == "returned" else None,
                     group=cand.group if j["outcome"] == "returned" else None,
                     verdict=" ".join(verdict.split()), steps=steps, ranks_only=cand is None,
                     rule=decision.rule if decision is not None else None,
                     rule_chain=decision.rule_chain if decision is not None else [])
