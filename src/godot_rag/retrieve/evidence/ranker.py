"""The learned ranker (`rank`, F's stage after the API check, before the optional judge): per docs group a logistic
regression over named features of each candidate (ranker_features.py), fitted on graded (chunk, record) pairs by
`godot-rag fit-ranker` and read from `store/ranker_model.json`. It decides every docs record that no contradiction
rejected: accepted when its P(direct) clears the group's threshold (chosen out of fold, by project, for the precision
targets; `ranker_thresholds` overrides it); the cut then orders the accepted records by P, most useful first. A
contradiction stays a rule that rejects before any model: a record F's rules accepted in spite of one is rejected
(rule `contradicted`), as the fit counted it. Each record's trace (`rank`) holds every feature's value and
contribution; a reject names the feature that kept it out."""
from __future__ import annotations

from typing import Any, NamedTuple

from ..engine.stage import Stage
from ..engine.state import QueryState, Verdicts
from ..engine.trace import RankInfo
from ..engine.types import Candidate
from .decision import CONTRADICTED_RULE, RANKER_RULE, decided
from .ranker_features import candidate_features, group_of, vetoed
from .ranker_model import score, strongest
from .resources import EvidenceResources

DOCS = "docs_chunks"


def ranked(c: Candidate, group: str, out: dict[str, Any]) -> Candidate:
    """The candidate under the ranker's decision (rule `ranker`), its trace `rank` added."""
    before = c.decision
    assert before is not None, "the ranker decides only decided candidates"
    sign = ">=" if out["accepted"] else "<"
    detail = f"P(direct) {out['p']:.2f} {sign} {out['threshold']:.2f}"
    if out["accepted"]:
        reason, detail = None, f"{detail} ({strongest(out['contributions'])})"
    else:
        worst = out["kept_out_by"]
        kept_out = f"kept out most by {worst} {out['contributions'][worst]:+.2f}" if worst else strongest(out["contributions"])
        reason = f"ranker: {detail} ({kept_out})"
    new = decided(c, before.overruled(RANKER_RULE, out["accepted"], reason=reason, detail=detail))
    new.add_stage("rank", RankInfo(group=group, p=out["p"], threshold=out["threshold"], accepted=out["accepted"],
                                   verdict_before="accept" if before.accepted else "reject", bias=out["bias"],
                                   logit=out["logit"], features=out["features"], contributions=out["contributions"],
                                   kept_out_by=out["kept_out_by"]))
    return new


def contradicted(c: Candidate) -> Candidate:
    """A record a contradiction marks, which F's rules accepted on weightier evidence: rejected under rule
    `contradicted`, as the fit counted it (a contradiction rejects before any model)."""
    before = c.decision  # the ranker has not decided it: the rules' decision
    assert before is not None and before.contradictions
    shown = ", ".join(x.literal + (f" where the chunk has {x.near_miss_of}" if x.near_miss_of else "")
                      for x in before.contradictions)
    return decided(c, before.overruled(CONTRADICTED_RULE, False, reason=f"contradiction before the ranker: {shown}"))


class Ranked(NamedTuple):
    verdicts: Verdicts


def run_rank(q: QueryState[EvidenceResources], verdicts: Verdicts) -> Ranked:
    """Each docs record that no contradiction rejected, decided by the fitted ranker of its group (learned_ranker)."""
    if not q.cfg.learned_ranker or DOCS not in q.tables:
        q.note(skipped="learned_ranker is off" if not q.cfg.learned_ranker else "no docs_chunks")
        return Ranked(verdicts)
    model = q.resources.ranker_model()
    if model is None:
        q.note(skipped="no ranker model (store/ranker_model.json)")
        return Ranked(verdicts)
    groups = model.with_thresholds({str(g): t for g, t in (q.cfg.ranker_thresholds or {}).items()})
    out, changed, vetoes = [], 0, 0
    for c in verdicts.of(DOCS):
        group, veto = group_of(c), c.decision is not None and vetoed(c)
        if c.decision is None or group not in groups or veto:
            vetoes += veto
            out.append(contradicted(c) if veto and c.verdict == "accept" else c)
            continue
        new = ranked(c, group, score(groups[group], group, candidate_features(c)))
        changed += new.verdict != c.verdict
        out.append(new)
    q.note(thresholds={g: m.threshold for g, m in groups.items()}, decided=len(out) - vetoes, vetoed=vetoes,
           changed=changed, data_digest=model.data_digest[:12])
    return Ranked(Verdicts({**verdicts.tables, DOCS: out}))


RANK = Stage("rank", run_rank,
             "learned ranker (learned_ranker): each docs record no contradiction rejected is accepted when its fitted "
             "P(direct) clears its group's threshold; the cut orders accepts by P")
