"""Direct-evidence validator, deterministic layer: what the chunk and a record literally share.

Evidence is matched at identifier boundaries (`AnimatedSprite` is not in
`AnimatedSprite2D`), on the chunk's code only (comments and strings are not uses; see
`godot_rag.gdscript.facts`). Which shared identifiers count is decided by the corpus, not by a
list: a shared identifier is evidence when its idf in the docs index is at least `MIN_IDF`
(so `func`, `var`, `velocity` do not count, `screen_size` does); a shared call chain
(`Input.is_action_pressed`, `position.clamp`) always counts, and so does a resolved API use
(`get_tree().quit()` -> `SceneTree.quit`) whose member entry the record is.

Contradicting evidence is found by name shape: an identifier in the record that equals one
of the chunk's identifiers once digit runs are masked (`Vector3` vs `Vector2`) but that the
chunk never uses, where the record never uses the chunk's own spelling either.

Acceptance rules:
- docs_chunks: at least `min_direct_evidence` items, one of them strong (a resolved API
  use, a call chain, an API symbol of the record, a code line of the chunk found in the
  record's code up to renaming of the chunk's own names, or a rare method call); no API
  contradiction in the record's code (a 3D page for 2D code); a class-reference record
  only for a class the chunk uses (its resolved uses); and confidence >= 0.5 where
  confidence = support / (support + 1.5 * contradiction + 4). When the chunk is a copy of
  a guide page's code, a guide record from another page that adds nothing to what that
  page shows is rejected (`copied_page_overrules`), and so is a class page's section that
  only mentions the chunk's API in other members' entries, where another record of that
  page describes it (`other_members_overruled`);
- api_mapping: an occurrence of `source_api` that is Godot 3 use (see `version_rules.py`:
  code, or a comment that writes a dropped name as code in Godot 3 code; not resolvable as
  valid Godot 4 API; ambiguous ones decided by the chunk's version markers and the
  `godot_version` hint), not claimed by a negative
  pattern, not a name the chunk declares; C#-only records need C# code;
- label_prototypes: a migration finding needs an accepted api_mapping of its group *at
  the same occurrence* as its `must_match` rule; other findings need every `must_match`
  rule to match the code and no `must_not_match` rule to. A finding derived from the class
  reference (`api:...`) is rejected here: only the `check` stage accepts it (`check.py`).
"""
from __future__ import annotations

import re
from typing import Literal, NamedTuple

import numpy as np

from ...gdscript.api_check import is_reference_prototype
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState, Verdicts, table_list
from ..engine.trace import JudgeInfo, ValidateInfo
from ..engine.types import Candidate
from ..migration.occurrences import Occurrences, mapping_occurrences
from ..migration.version import EVIDENCE_STATUSES, WEAK_OVERRULES, decide_ambiguous, evidence_rank
from ..migration.version_occurrence import ChunkScope
from ..migration.version_stage import VersionDecisions
from ..query.parse import ResolvedChunk
from ..recall.codematch import renameable_names
from ..recall.prefilter import absent_reason
from .api_source import ClassUses
from .docs_evidence import CONFIDENCE_DIGITS, docs_evidence
from .docs_overrules import copied_page_overrules, model_shared, other_members_overruled, same_evidence_overrules
from .guide_decision import missing_cosines
from .resources import EvidenceResources
from .validation_scope import MappingConfidence, ValidationScope

__all__ = [
    "VALIDATE",
    "ChunkScope",
    "Occurrences",
    "ValidationScope",
    "copied_page_overrules",
    "docs_evidence",
    "follow_mappings",
    "mapping_evidence",
    "mapping_occurrences",
    "other_members_overruled",
    "prototype_evidence",
    "validate",
]
LITERALS_SHOWN = 8  # evidence literals an accept's reason names
OCCURRENCES_SHOWN, OCCURRENCES_CITED = 20, 3  # occurrences the trace keeps, and a rejection's reason cites
EVIDENCE_SHOWN = 10  # a finding's evidence items the trace keeps
# Characters quoted (display only): a syntax change's match, a finding rule's match, a pattern in a reason.
MATCH_QUOTED, PATTERN_QUOTED = 80, 60



def mapping_evidence(v: ValidationScope, c: Candidate, pass1: dict) -> dict:
    p = c.payload
    src, change = p["source_api"], p["change_type"]
    decisions = pass1["occurrences"]
    reasons = []
    ambiguous_verdict = None
    for d in decisions:
        if d["status"] == "ambiguous":
            if ambiguous_verdict is None:
                ambiguous_verdict = decide_ambiguous(v.version)
            ok, why = ambiguous_verdict
            d["status"] = "godot3" if ok else "valid_godot4"
            d["why"] += f"; ambiguous: {why}"
            d["ambiguous"] = True
        elif (overrule := WEAK_OVERRULES.get(d["status"])) and (overruled := overrule.applies(v.version)):
            d["status"], d["why"], d["rule"] = "ignored", f"{d['why']}; {overruled}", overrule.name
    accepted_occ = sorted((d for d in decisions if d["status"] in EVIDENCE_STATUSES), key=evidence_rank)
    if not decisions:
        reasons.append(absent_reason(src))
    elif not accepted_occ:
        reasons.append("no occurrence is Godot 3 use: " + "; ".join(d["why"] for d in decisions[:OCCURRENCES_CITED]))
    if change.startswith("csharp") and not v.facts.csharp:
        reasons.append("C#-only change, and the chunk is GDScript")
    accepted = not reasons
    evidence = []
    if accepted:
        first = accepted_occ[0]
        evidence.append({"literal": first.get("literal") or src, "kind": "source_api", "chunk_line": first["line"],
                         "col": first["col"], "region": first["region"], "occurrences": len(accepted_occ)})
    base, bounds = float(p.get("confidence") or 0.0), v.mapping_confidence
    if accepted and all(d.get("ambiguous") or d["status"] != "godot3" for d in accepted_occ):
        base = min(base, bounds.ambiguous if any(d.get("ambiguous") for d in accepted_occ) else bounds.weak)
    elif accepted:
        base = max(base, bounds.sure)
    confidence = base if accepted else 0.0
    shown = [{**{k: d[k] for k in ("line", "col", "region", "status", "why", "start", "end")},
              "ambiguous": bool(d.get("ambiguous")), **({"rule": d["rule"]} if d.get("rule") else {})} for d in decisions]
    return {"evidence": evidence, "occurrences": shown[:OCCURRENCES_SHOWN],
            "contradictions": [], "confidence": round(confidence, CONFIDENCE_DIGITS), "accepted": accepted, "reasons": reasons}


DERIVED_REASON = "a finding derived from the class reference: only the API check decides it (stage check)"


def prototype_evidence(v: ValidationScope, c: Candidate, accepted_mappings: dict[str, dict]) -> dict:
    if is_reference_prototype(c.payload):  # its must_match patterns say where a use may be, not that it is one
        return {"evidence": [], "contradictions": [], "confidence": 0.0, "accepted": False, "reasons": [DERIVED_REASON]}
    facts = v.facts
    rules = c.payload.get("validator_rules") or {}
    evidence, reasons = [], []
    need = rules.get("requires_accepted_mapping_type")
    if need or c.payload.get("task_type") == "migration":
        # A migration finding follows its mapping: the rule must match where an accepted mapping occurs.
        ids = set(c.payload.get("evidence_mapping_ids") or [])
        # Only uses in code: a node named after an old class is no finding of its own.
        spans = [(mid, d) for mid, info in accepted_mappings.items() if mid in ids
                 for d in info["occurrences"] if d["status"] == "godot3" and d["region"] == "code"]
        for rx in rules.get("must_match", []) if spans else ():  # no accepted mapping: no match can be at one
            for m in re.finditer(rx, facts.no_comments):
                hit = next(((mid, d) for mid, d in spans if m.start() <= d["start"] < max(m.end(), m.start() + 1)
                            or d["start"] <= m.start() < d["end"]), None)
                if hit and facts.region(m.start()) != "comment":
                    evidence.append({"literal": m.group(0)[:MATCH_QUOTED], "kind": "must_match", "chunk_line": hit[1]["line"],
                                     "col": hit[1]["col"], "mapping_id": hit[0]})
        if not spans:
            reasons.append("no accepted api_mapping of this finding's group" + (f" ({need})" if need else ""))
        elif not evidence:
            reasons.append("the finding's rule does not match where the accepted mapping occurs")
    else:
        for rx in rules.get("must_match", []):
            match = re.search(rx, facts.no_comments)
            if match:
                evidence.append({"literal": match.group(0)[:MATCH_QUOTED], "kind": "must_match",
                                 "chunk_line": facts.line_of_offset(match.start())})
            else:
                reasons.append("a must_match rule does not match the chunk's code")
    for rx in rules.get("must_not_match", []):
        if re.search(rx, facts.no_comments):
            reasons.append(f"must_not_match rule matches: {rx[:PATTERN_QUOTED]}")
    accepted = not reasons and bool(evidence)
    return {"evidence": evidence[:EVIDENCE_SHOWN], "contradictions": [], "confidence": 1.0 if accepted else 0.0,
            "accepted": accepted, "reasons": reasons}


def validate(v: ValidationScope, candidates: list[Candidate], occurrences: Occurrences,
             stage: str = "validate") -> list[Candidate]:
    """Adds a `validate` explanation and a verdict to every candidate (pure: no I/O, nothing shared changed).
    `occurrences`: the version stage's decisions for the api_mapping candidates (`decide_occurrences`)."""
    out = []
    pass1 = {cid: {"occurrences": [o.model_dump() for o in occ]} for cid, occ in occurrences.items()}
    alone = v.alone
    mappings = {id(c): mapping_evidence(alone, c, pass1[c.id]) for c in candidates if c.table == "api_mapping"}
    v.migrated = alone.migrated = migrated_uses(candidates, mappings)
    docs = [(c, docs_evidence(v, c)) for c in candidates if c.table == "docs_chunks"]
    copied_page_overrules(v, docs)
    other_members_overruled(v, docs)
    # In Godot 3 code a guide's Godot 4 code may be the chunk's own in its new form, sharing little more than
    # another page does (the renamed API is not shared): there the pages are not compared.
    if v.same_evidence and not v.godot3:
        same_evidence_overrules(docs)
    infos = {id(c): info for c, info in docs}
    for c in candidates:
        if c.table == "api_mapping":
            info = mappings[id(c)]
        elif c.table == "docs_chunks":
            info = infos[id(c)]
        else:
            continue
        out.append(_verdict(c, info, stage))
    accepted = {c.id: c.info(stage).model_dump() for c in out if c.table == "api_mapping" and c.verdict == "accept"}
    for c in candidates:
        if c.table == "label_prototypes":
            out.append(_verdict(c, prototype_evidence(alone, c, accepted), stage))
    return out


def migrated_uses(candidates: list[Candidate], mappings: dict[int, dict]) -> list[tuple[str, str, int, int]]:
    """(source, target, line, col) of each occurrence in code that an accepted api_mapping decided is Godot 3 use."""
    return [(c.payload["source_api"], c.payload["target_api"], d["line"], d["col"])
            for c in candidates if c.table == "api_mapping" and mappings[id(c)]["accepted"]
            for d in mappings[id(c)]["occurrences"] if d["status"] == "godot3" and d["region"] == "code"]


def _verdict(c: Candidate, info: dict, stage: str) -> Candidate:
    c = c.derive()
    c.verdict = "accept" if info["accepted"] else "reject"
    typed = ValidateInfo(**info, verdict=c.verdict)
    c.reason = _reason(typed)
    c.add_stage(stage, typed)
    return c


def _reason(info: ValidateInfo) -> str:
    if info.accepted and (info.evidence or not info.model):
        return "direct evidence = " + ", ".join(i.literal for i in info.evidence[:LITERALS_SHOWN])
    if info.accepted:  # a guide accepted on what it shares with no literal of the chunk's to quote (a construct, `@tool`)
        m = info.model or {}
        shared = ", ".join(name for _, name in model_shared(m)[:LITERALS_SHOWN]) or "the texts' likeness"
        if m.get("copied_code"):  # accepted as a copy, whatever P says
            return f"the chunk copies the record's code; shared = {shared}"
        return f"guide model: P(direct) {m.get('p', 0.0):.2f} >= {m.get('threshold', 0.0):.2f}, shared = {shared}"
    return "; ".join(info.reasons)


class Validated(NamedTuple):
    verdicts: Verdicts  # every candidate with its verdict
    validation: ValidationScope  # what the validator knew; the judge re-checks findings with it


def run_validate(q: QueryState[EvidenceResources], pool: Pool, resolved: ResolvedChunk, version: VersionDecisions,
                 class_uses: ClassUses, vectors: np.ndarray | None = None) -> Validated:
    """Every candidate that reached this point gets a verdict, its direct evidence and a confidence."""
    r = q.resources
    ref = r.class_reference()
    facts = resolved.facts
    candidates = [c for t in q.tables for c in table_list(pool, t)]
    vctx = ValidationScope(facts=facts, resolution=resolved.resolution, ref=ref, version=version.markers,
                           idf=r.bm25.docs_idf(q.cfg),
                           class_of_page=r.api_index()["page_class"], renameable=renameable_names(facts, ref),
                           min_direct_evidence=q.cfg.min_direct_evidence, copy_source_share=q.cfg.copy_source_share,
                           same_evidence=q.cfg.same_evidence, min_guide_specificity=q.cfg.min_guide_specificity,
                           min_api_specificity=q.cfg.min_api_specificity,
                           renamed_classes=r.renames().classes, code_renames=r.renames().code, context=q.context,
                           mapping_confidence=MappingConfidence.of(q.cfg),
                           guide_model=r.guide_model() if q.cfg.guide_model else None,
                           cosines=missing_cosines(r.conn, vectors, candidates), class_uses=class_uses)
    judged = validate(vctx, candidates, version.occurrences)
    for t in q.tables:  # the accepted ids, in the order they came in (the web page's "lost at")
        q.record_ids(t, "validate", [c for c in judged if c.table == t and c.verdict == "accept"])
    q.note(layer="deterministic", judged=len(judged), accepted=sum(c.verdict == "accept" for c in judged))
    return Validated(Verdicts({t: [c for c in judged if c.table == t] for t in q.tables}), vctx)


def follow_mappings(v: ValidationScope, verdicts: Verdicts) -> list[Candidate]:
    """Migration findings re-checked against the mappings accepted after the judge: a finding follows
    the mapping it depends on, at the same occurrence (the judge's occurrence counts as Godot 3 use)."""
    accepted = {}
    for c in verdicts.of("api_mapping"):
        if c.verdict != "accept":
            continue
        info = c.info("validate").model_dump()
        j = c.info("judge")
        if j is not None and j.occurrence is not None:
            at = (j.occurrence.line, j.occurrence.col)
            info["occurrences"] = [dict(d, status="godot3") if (d["line"], d["col"]) == at else d for d in info["occurrences"]]
        accepted[c.id] = info
    out = []
    for c in verdicts.of("label_prototypes"):
        if is_reference_prototype(c.payload):  # the API check's, not the mappings'
            out.append(c)
            continue
        info = prototype_evidence(v, c, accepted)
        verdict: Literal["accept", "reject"] = "accept" if info["accepted"] else "reject"
        if verdict == c.verdict:
            out.append(c)
            continue
        c = c.derive()
        before, c.verdict = c.verdict, verdict
        c.reason = ("direct evidence = " + ", ".join(i["literal"] for i in info["evidence"][:LITERALS_SHOWN])
                    if info["accepted"] else "; ".join(info["reasons"]))
        c.add_stage("judge", JudgeInfo(model="-", question="follows_mapping", rule="follows the mappings the judge decided",
                                       verdict_before=before, accepted=info["accepted"], confidence=info["confidence"]))
        out.append(c)
    return out


VALIDATE = Stage("validate", run_validate,
                 "direct evidence: shared literals in code, API contradictions, version decisions per occurrence; "
                 "accept or reject with reasons")
