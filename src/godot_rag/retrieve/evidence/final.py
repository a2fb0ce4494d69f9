"""The last stages: F's final score (the validator's confidence scales the score), and the cut at k."""
from __future__ import annotations

from typing import Literal, NamedTuple

from ..engine.stage import Stage
from ..engine.state import Pool, QueryState, Verdicts, table_list
from ..engine.trace import SCORE_DIGITS, CutInfo, ScoreInfo
from ..engine.types import Candidate
from .check import CHECK_CONFIDENCE, GROUP
from .judge import Judged
from .resources import EvidenceResources

SCORE_FLOOR = 0.5  # decided: the share of its score a record of confidence 0 keeps


def _confidence(c: Candidate) -> tuple[Literal["judge", "check", "validate"], float]:
    """The confidence the final score reads: the judge's, else the API check's (its findings), else the validator's."""
    if (judge := c.info("judge")) is not None:
        return "judge", judge.confidence
    if c.info("check") is not None:
        return "check", CHECK_CONFIDENCE
    return "validate", c.info("validate").confidence


def run_score(q: QueryState[EvidenceResources], verdicts: Verdicts) -> Judged:
    """score x (floor + (1 - floor) x confidence), floor SCORE_FLOOR = 0.5: a sure accept keeps its score, a
    doubtful one loses up to half."""
    out: dict[str, list[Candidate]] = {}
    for table in q.tables:
        scored = []
        for c in verdicts.of(table):
            source, conf = _confidence(c)
            c = c.derive()
            before = c.score
            c.score = float(before) * (SCORE_FLOOR + (1 - SCORE_FLOOR) * float(conf))
            c.add_stage("score", ScoreInfo(score_before=round(before, SCORE_DIGITS), confidence=conf, confidence_from=source,
                                           score=round(c.score, SCORE_DIGITS)))
            scored.append(c)
        out[table] = scored
    return Judged(Verdicts(out))


def _keep(cands: list[Candidate], k: int, group: str | None, rank_from: int = 0) -> list[Candidate]:
    kept = []
    for i, c in enumerate(cands):
        c.add_stage("cut", CutInfo(kept=i < k, rank=rank_from + i + 1 if i < k else None, group=group, k=k, position=i + 1))
        if i < k:
            kept.append(c)
    return kept


def _keep_findings(acc: list[Candidate], k: int) -> tuple[list[Candidate], list[Candidate]]:
    """(kept, every) of the accepted label_prototypes. The API check's findings are few and each is decided by the
    reference: all are kept, first (by severity, then line, as the check ranked them), and k applies to the other
    prototypes after them, so that no finding is cut silently."""
    found = sorted((c for c in acc if c.group == GROUP), key=lambda c: c.rank or 0)
    others = [c for c in acc if c.group != GROUP]
    kept_found = _keep(found, max(k, len(found)), GROUP)
    return kept_found + _keep(others, k, None, len(kept_found)), found + others


def usefulness(c: Candidate) -> float:
    """The ranker's P(direct) (its trace `rank`), which orders accepted docs records before their score; 0 when the
    ranker did not decide the record (learned_ranker off), so the score alone orders."""
    rank = c.info("rank")
    return float(rank.p) if rank is not None else 0.0


class CutResults(NamedTuple):
    results: Pool  # what the query returns: each table's kept records
    cut: list[Candidate]  # accepted, then cut at k
    rejected: list[Candidate]  # rejected by the validator (the first k of each table)


def run_cut(q: QueryState[EvidenceResources], pool: Pool) -> CutResults:
    """The first k of each table, in the order of the last stage that ranked them."""
    out: Pool = {}
    for table in q.tables:
        out[table] = [_keep(table_list(pool, table), q.cfg.k, None)]
        q.record_ids(table, "cut", out[table][0])
    q.note(k=q.cfg.k)
    return CutResults(out, [], [])


def run_cut_validated(q: QueryState[EvidenceResources], verdicts: Verdicts) -> CutResults:
    """F: accepted records by score, k per table; the docs in two groups, each with its own k: the best
    guides, then the member entries of the API the chunk calls that the guides did not already hold."""
    cfg = q.cfg
    out: Pool = {}
    cut: list[Candidate] = []
    rejected: list[Candidate] = []
    for table in q.tables:
        mine = verdicts.of(table)
        acc = sorted([c for c in mine if c.verdict == "accept"], key=lambda c: (-c.score, c.id))
        rej = sorted([c for c in mine if c.verdict != "accept"], key=lambda c: (-c.score, c.id))
        if table == "docs_chunks":
            # Most useful first: the ranker's P(direct), then the score.
            guides = sorted((c for c in acc if c.group != "api_reference"), key=lambda c: (-usefulness(c), -c.score, c.id))
            # P, then the highest score (found by BM25/embedding too), then in the order the chunk uses them.
            api_acc = sorted((c for c in acc if c.group == "api_reference"), key=lambda c: (
                -usefulness(c), -round(c.score, SCORE_DIGITS), min(u.line for u in c.info("api").uses), c.id))
            for c in guides:
                c.group = "guides"
            kept_guides = _keep(guides, cfg.k, "guides")
            kept = kept_guides + _keep(api_acc, cfg.k_api, "api_reference", len(kept_guides))
            every = guides + api_acc
        elif table == "label_prototypes":
            kept, every = _keep_findings(acc, cfg.k)
        else:
            kept = _keep(acc, cfg.k, None)
            every = acc
        for i, c in enumerate(kept):
            c.rank = i + 1
        cut += [c for c in every if not c.info("cut").kept]
        rejected += rej[: cfg.k]
        out[table] = [kept]
        q.record_ids(table, "cut", kept)
    q.note(k=cfg.k, k_api=cfg.k_api, cut_after_accept=len(cut))
    return CutResults(out, cut, rejected)


SCORE = Stage("score", run_score, "final score = fused score x (0.5 + 0.5 x validator or judge confidence)")
CUT = Stage("cut", run_cut, "the first k of each table")
CUT_VALIDATED = Stage("cut", run_cut_validated,
                      "accepted records by final score (docs: by the ranker's P, then score): k per table, docs as k guides "
                      "+ k_api API entries")
