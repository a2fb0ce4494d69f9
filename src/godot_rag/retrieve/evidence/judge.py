"""The optional Qwen judge: the second layer of F's validator, aimed where the deterministic layer is unsure.

What it sees:
- deterministic accepts whose confidence lies in the band where the calibration shows the judge
  separates right from wrong. Uncalibrated, the mappings asked about are the weak accepts (confidence
  0.6 or less): on an ambiguous occurrence (a name valid in both versions, accepted on the chunk's other
  Godot 3 markers) or a node name. An accept that rests only on a comment is never asked about: the
  question is about code;
- `api_mapping`: a focused question about the occurrence's line ("is `Viewport` on line 12 the
  Godot 3 `Viewport` that became `SubViewport`, or valid Godot 4 code?");
- `docs_chunks`: does the record document the API or technique the chunk uses (at most `validate_top`;
  the record shown as its section path and the lines holding the literals it shares with the chunk).

What it may do depends on the calibration stored for the model (store/calibration.py):
- `decide`: P(yes) >= the calibrated threshold keeps the accept; below it rejects. The judge never
  accepts what the deterministic layer rejected;
- `annotate`: the calibration found that the model separates nothing; P(yes) is recorded, the
  verdict is left alone. An uncalibrated model only annotates unless the request sets a threshold.

Answers are JSON under a schema (`{"answer": "yes"|"no", "evidence": [...]}`); cited evidence (asked
for only with `judge_citations`) that is not literally in both texts is dropped and logged as
hallucinated. Migration findings follow the mappings the judge leaves accepted.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ...records import evidence_text, model_text
from ...store import calibration
from ..engine.decision import Decision
from ..engine.stage import Stage
from ..engine.state import QueryState, Verdicts
from ..engine.trace import RATIO_DIGITS, JudgeInfo, Occurrence
from ..engine.types import Candidate
from ..migration.version import EVIDENCE_STATUSES, VersionMarkers, evidence_rank
from .decision import JUDGE_RULE, decided
from .judge_questions import JudgeLLM, ask, check_cited, prompt_id, question_of
from .resources import EvidenceResources
from .validation_scope import ValidationScope

STALE_SHOWN = 3  # skipped calibrations the trace names
JudgedTable = Literal["api_mapping", "docs_chunks"]  # the tables the judge asks about


def table_calibration(cal: dict | None, table: str, override: float | None) -> dict:
    """mode (decide | annotate), threshold and band for one table, from the calibration and the request."""
    tables = (cal or {}).get("tables") or {}
    t = dict(tables.get(table) or {}, calibrated=table in tables)
    if override is not None:
        return {**t, "mode": "decide", "threshold": override, "threshold_from": "request"}
    if table not in tables:
        return {"mode": "annotate", "calibrated": False, "threshold": None,
                "why": "no calibration for this model and table: annotate only "
                       "(run `godot-rag judge calibrate`, or set judge_thresholds)"}
    if t.get("mode") != "decide" or t.get("threshold") is None:
        return {**t, "mode": "annotate", "why": t.get("why") or "the calibration separates nothing: annotate only"}
    return {**t, "threshold_from": "calibration"}


def asked_occurrence(c: Candidate) -> Occurrence | None:
    """The occurrence a mapping's question is about: the strongest Godot 3 use (a sure use in code, else
    an ambiguous one, else a node name). None for a rejected mapping (the judge never accepts what the
    deterministic layer rejected), and for one that rests only on comments (the question is about code)."""
    if c.verdict != "accept":
        return None
    occ = [d for d in c.info("validate").occurrences or [] if d.status in EVIDENCE_STATUSES and d.region != "comment"]
    return min(occ, key=lambda d: evidence_rank({"status": d.status, "ambiguous": d.ambiguous}), default=None)


def asks_mappings(hint: str, lean: str | None) -> bool:
    """The request's hint, or the chunk's own Godot 4 markers, already decide the ambiguous cases."""
    return hint == "auto" and lean != "4"


def band_of(tcal: dict, uncalibrated: tuple[float, float]) -> tuple[float, float] | None:
    """The range of deterministic confidence the judge is asked about: the calibrated band; None when the
    calibration found no range where the judge separates (a request's threshold asks anyway); without a
    calibration for the table, `uncalibrated`."""
    if tcal.get("band"):
        return tuple(tcal["band"])
    if tcal.get("calibrated") and tcal.get("threshold_from") != "request":
        return None
    return uncalibrated


def _inside(cands: list[Candidate], band: tuple[float, float] | None) -> list[Candidate]:
    return [] if band is None else [c for c in cands if band[0] <= c.info("validate").confidence <= band[1]]


def mapping_targets(q: QueryState[EvidenceResources], version: VersionMarkers, mappings: list[Candidate],
                    tcal: dict) -> list[tuple[Candidate, Occurrence]]:
    """Accepted mappings inside the calibrated band of deterministic confidence (uncalibrated: the ambiguous ones)."""
    if not asks_mappings(version.hint, version.lean()):
        return []
    # Uncalibrated: the accepts that rest on weak or ambiguous occurrences (their confidence is capped at these settings).
    weak = (0.0, max(q.cfg.mapping_confidence_ambiguous, q.cfg.mapping_confidence_weak))
    return [(c, occ) for c in _inside(mappings, band_of(tcal, weak))
            if (occ := asked_occurrence(c)) is not None]


def docs_targets(q: QueryState[EvidenceResources], docs: list[Candidate], tcal: dict) -> list[Candidate]:
    """Deterministic accepts inside the calibrated band (uncalibrated: the top ones, to annotate). The
    records of a page the chunk copies are not asked about: the other guides were rejected for showing
    nothing more than they do (`copied_page_overrules`), and a judge's reject would leave no guide."""
    asked = [c for c in docs if c.verdict == "accept" and not c.info("validate").copy_source]
    inside = _inside(asked, band_of(tcal, (0.0, 1.0)))
    return sorted(inside, key=lambda c: -c.score)[: q.cfg.validate_top]


def _judged(job: JudgeJob, j: dict, tcal: dict, chunk: str) -> Candidate:
    """The candidate with the judge's answer `j` to `job` applied under the table's calibration `tcal`."""
    c, question, occ, cited_asked = job.candidate, job.question, job.occurrence, job.cite
    det = c.info("validate")
    # Citations are checked against the whole record, not only the lines shown.
    whole = evidence_text(c.payload) if c.table == "docs_chunks" else model_text(c.table, c.payload)
    rec = whole + "\n" + json.dumps(c.payload, ensure_ascii=False)
    ok, bad = check_cited(j.get("evidence") or [], chunk, rec)
    p, thr = j["p_yes"], tcal.get("threshold")
    before = c.verdict
    if tcal["mode"] == "decide":
        said_yes = p is not None and p >= thr
        # Asked to cite, the judge must back its yes with a verified literal unless the deterministic layer has one.
        accepted = before == "accept" and said_yes and (not cited_asked or len(det.evidence) + len(ok) > 0)
        rule = f"P(yes) {p} {'>=' if said_yes else '<'} threshold {thr} ({tcal.get('threshold_from')})"
        conf = round(p if question == "occurrence" else det.confidence * p, RATIO_DIGITS) if accepted else 0.0
        c = decided(c, judge_overrule(c, accepted, rule, conf))
    else:
        accepted = before == "accept"
        rule = tcal.get("why") or "annotate only"
        conf = det.confidence  # an annotation changes no score
        c = c.derive()
    occurrence = Occurrence.model_validate(occ) if isinstance(occ, dict) else occ
    c.add_stage("judge", JudgeInfo(model=j["model"], question=question, occurrence=occurrence, raw_answer=j["raw"],
                                   answer=j["answer"], p_yes=p, p_yes_source=j["p_yes_source"], mode=tcal["mode"],
                                   threshold=thr, rule=rule, verdict_before=before, cited_verified=ok,
                                   cited_hallucinated=bad, cached=j["cached"], accepted=accepted, confidence=conf))
    return c


def judge_overrule(c: Candidate, accepted: bool, rule: str, conf: float) -> Decision:
    """The judge's decision over the candidate's (rule `judge`): an accept it keeps, or a reject with its P(yes)."""
    assert c.decision is not None, "the judge is asked only about decided candidates"
    return c.decision.overruled(JUDGE_RULE, accepted, reason=None if accepted else f"judge: {rule}", confidence=conf,
                                detail=rule)


@dataclass(frozen=True)
class JudgeJob:
    """One question for the judge: about a mapping's occurrence, or about a docs record."""
    candidate: Candidate
    question: Literal["occurrence", "docs"]
    occurrence: Occurrence | None
    key: str  # the cache key of the question
    text: str
    cite: bool  # ask for cited evidence


def judge_jobs(q: QueryState[EvidenceResources], occ_targets: list[tuple[Candidate, Occurrence]], doc_targets: list[Candidate],
               tcal: dict) -> list[JudgeJob]:
    """The questions, in order. Cited evidence only on request (judge_citations), and only where the judge decides:
    generating it costs about 2 s per yes with the 1.5B on 2 cores, and the bundled models mostly make it up."""
    def cite(c: Candidate, asks: bool) -> bool:
        return asks and q.cfg.judge_citations and tcal[c.table]["mode"] == "decide"

    jobs = []
    for c, occ in occ_targets:
        key, text, asks = question_of(c, q.chunk, (occ.line, occ.col), [])
        jobs.append(JudgeJob(c, "occurrence", occ, key, text, cite(c, asks)))
    for c in doc_targets:
        key, text, asks = question_of(c, q.chunk, None, [e.literal for e in c.info("validate").evidence])
        jobs.append(JudgeJob(c, "docs", None, key, text, cite(c, asks)))
    return jobs


def ask_all(llm: JudgeLLM, chunk: str, jobs: list[JudgeJob]) -> list[dict]:
    """The answers, in the jobs' order; asked in parallel where the LLM serves several at once (a server)."""
    def one(job: JudgeJob) -> dict:
        return ask(llm, chunk, job.key, job.text, job.cite)

    if getattr(llm, "parallel", 1) > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(min(llm.parallel, len(jobs))) as pool_ex:
            return list(pool_ex.map(one, jobs))
    return [one(j) for j in jobs]


def table_calibrations(cal: dict | None, thresholds: dict[JudgedTable, float] | None) -> dict[str, dict]:
    """`table_calibration` of each table the judge asks about, under the request's thresholds."""
    over = thresholds or {}
    return {t: table_calibration(cal, t, over.get(t)) for t in ("api_mapping", "docs_chunks")}


class Judged(NamedTuple):
    verdicts: Verdicts


def run_judge(q: QueryState[EvidenceResources], verdicts: Verdicts, validation: ValidationScope) -> Judged:
    """The Qwen judge (validator_llm) over ambiguous mapping occurrences and docs accepts in the calibrated band."""
    from ...models.llm import LLMError

    cfg = q.cfg
    if not cfg.validator_llm:
        q.note(skipped="validator_llm is off")
        return Judged(verdicts)
    llm = q.resources.llm
    if llm is None:
        # No LLM is a missing service (HTTP 503), like a server that is down, not a bad setting.
        return _without_judge(q, verdicts, "validator_llm needs an LLM: --llm-gguf, --llm-bundled or --llm-url")
    ident = llm.identity()
    try:
        cal, cal_file, stale = calibration.find(ident, q.resources.judge_calibration, prompt_id())
    except calibration.CalibrationError as e:
        return _without_judge(q, verdicts, f"judge calibration unreadable: {e}")
    tcal = table_calibrations(cal, cfg.judge_thresholds)
    occ_targets, doc_targets = _targets(q, verdicts, validation, tcal)
    q.note(model=ident["model"], sha256=ident.get("sha256"), calibration=cal_file or "none",
           modes={t: v["mode"] for t, v in tcal.items()}, thresholds={t: v.get("threshold") for t, v in tcal.items()},
           bands={t: v.get("band") for t, v in tcal.items()}, asked_occurrences=len(occ_targets), asked_docs=len(doc_targets))
    if stale:  # after the summary: an --explain line is cut, and the summary matters most
        q.note(calibration_skipped=stale[:STALE_SHOWN])
    if not occ_targets and not doc_targets:
        return Judged(verdicts)
    try:
        q.ensure_loaded("llm", llm, model=ident["model"])
        answers = ask_all(llm, q.chunk, jobs := judge_jobs(q, occ_targets, doc_targets, tcal))
    except LLMError as e:
        return _without_judge(q, verdicts, f"LLM unavailable ({e})")
    judged = {(job.candidate.table, job.candidate.id): _judged(job, dict(j, model=ident["model"]),
                                                                 tcal[job.candidate.table], q.chunk)
              for job, j in zip(jobs, answers)}
    asked = verdicts.of("api_mapping") + verdicts.of("docs_chunks")
    q.note(changed=sum(judged[k].verdict != c.verdict for c in asked if (k := (c.table, c.id)) in judged))
    return Judged(_judged_verdicts(q, validation, verdicts, judged, [c for c, _ in occ_targets]))


def _without_judge(q: QueryState[EvidenceResources], verdicts: Verdicts, why: str) -> Judged:
    """The verdicts as the deterministic layer left them, when the judge cannot run (an error unless llm_optional)."""
    from ...models.llm import LLMError

    if not q.cfg.llm_optional:
        raise LLMError(why)
    q.trace.llm_fallback = f"{why}; deterministic validator only"
    return Judged(verdicts)


def _targets(q: QueryState[EvidenceResources], verdicts: Verdicts, validation: ValidationScope,
             tcal: dict[str, dict]) -> tuple[list[tuple[Candidate, Occurrence]], list[Candidate]]:
    """What the judge is asked about: mapping occurrences, then docs records."""
    return (mapping_targets(q, validation.version, verdicts.of("api_mapping"), tcal["api_mapping"]),
            docs_targets(q, verdicts.of("docs_chunks"), tcal["docs_chunks"]))


def _judged_verdicts(q: QueryState[EvidenceResources], validation: ValidationScope, verdicts: Verdicts,
                     judged: dict[tuple[str, str], Candidate], asked: list[Candidate]) -> Verdicts:
    """The verdicts with the judged candidates in place; the findings follow the mappings again when the judge changed
    the verdict on one (`asked`: the mappings asked about)."""
    out = Verdicts({t: [judged.get((c.table, c.id), c) for c in verdicts.of(t)] for t in q.tables})
    if "label_prototypes" in q.tables and any(judged[(c.table, c.id)].verdict != c.verdict for c in asked):
        from .validate import follow_mappings

        return Verdicts({**out.tables, "label_prototypes": follow_mappings(validation, out)})
    return out


JUDGE = Stage("judge", run_judge,
              "optional Qwen judge (validator_llm): ambiguous migration occurrences and docs accepts in the calibrated "
              "band; P(yes) against the model's calibrated threshold, JSON answers, cited literals checked")
