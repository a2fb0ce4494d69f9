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
from typing import NamedTuple

import numpy as np

from ...gdscript.api_check import is_reference_prototype
from ..engine.decision import Decision
from ..engine.stage import Stage
from ..engine.state import Pool, QueryState, Verdicts, table_list
from ..engine.trace import JudgeInfo, Occurrence
from ..engine.types import Candidate
from ..migration.occurrences import Occurrences, mapping_occurrences
from ..migration.version import EVIDENCE_STATUSES, WEAK_OVERRULES, decide_ambiguous, evidence_rank
from ..migration.version_occurrence import ChunkScope
from ..migration.version_stage import VersionDecisions
from ..query.parse import ResolvedChunk
from ..recall.codematch import renameable_names
from ..recall.prefilter import absent_reason
from .api_source import ClassUses
from .decision import DocsFigures, decided, validate_info
from .docs_evidence import CONFIDENCE_DIGITS, docs_evidence
from .docs_overrules import Decided, copied_page_overrules, other_members_overruled, same_evidence_overrules
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
OCCURRENCES_SHOWN, OCCURRENCES_CITED = 20, 3  # occurrences the trace keeps, and a rejection's reason cites
EVIDENCE_SHOWN = 10  # a finding's evidence items the trace keeps
# Characters quoted (display only): a syntax change's match, a finding rule's match, a pattern in a reason.
MATCH_QUOTED, PATTERN_QUOTED = 80, 60



# The rules that decide a mapping (an accept: its strongest occurrence's version rule, `occurrences`) and a finding.
SOURCE_ABSENT, NO_GODOT3_USE, CSHARP_ONLY, GODOT3_USE = "source_absent", "no_godot3_use", "csharp_only", "godot3_use"
MUST_MATCH, MUST_NOT_MATCH, NO_ACCEPTED_MAPPING, NOT_AT_MAPPING, MUST_MATCH_FAILS = (
    "must_match", "must_not_match", "no_accepted_mapping", "not_at_mapping", "must_match_fails")
FOLLOWS_MAPPING = "follows_mapping"  # a finding decided again after the judge, on the mappings it left accepted
REFERENCE_FINDING = "reference_finding"  # a finding derived from the class reference: only the API check decides it
DERIVED_REASON = "a finding derived from the class reference: only the API check decides it (stage check)"
DERIVED_REJECTED = Decision(accepted=False, rule=REFERENCE_FINDING, confidence=0.0, reasons=(DERIVED_REASON,),
                            rules=(REFERENCE_FINDING,))


def _settled(v: ValidationScope, decisions: list[dict]) -> list[dict]:
    """The occurrences with the ambiguous ones decided by the chunk's markers and the hint, and the weak ones
    overruled where the chunk is Godot 4 (`WEAK_OVERRULES`): new dicts, the version stage's left as they are."""
    out = []
    ambiguous_verdict = None
    for d in decisions:
        if d["status"] == "ambiguous":
            if ambiguous_verdict is None:
                ambiguous_verdict = decide_ambiguous(v.version)
            ok, why = ambiguous_verdict
            d = {**d, "status": "godot3" if ok else "valid_godot4", "why": f"{d['why']}; ambiguous: {why}", "ambiguous": True}
        elif (overrule := WEAK_OVERRULES.get(d["status"])) and (overruled := overrule.applies(v.version)):
            d = {**d, "status": "ignored", "why": f"{d['why']}; {overruled}", "rule": overrule.name}
        out.append(d)
    return out


def mapping_evidence(v: ValidationScope, c: Candidate, pass1: dict) -> Decision:
    p = c.payload
    src, change = p["source_api"], p["change_type"]
    decisions = _settled(v, pass1["occurrences"])
    reasons, fired = [], []
    accepted_occ = sorted((d for d in decisions if d["status"] in EVIDENCE_STATUSES), key=evidence_rank)
    if not decisions:
        reasons.append(absent_reason(src))
        fired.append(SOURCE_ABSENT)
    elif not accepted_occ:
        reasons.append("no occurrence is Godot 3 use: " + "; ".join(d["why"] for d in decisions[:OCCURRENCES_CITED]))
        fired.append(NO_GODOT3_USE)
    if change.startswith("csharp") and not v.facts.csharp:
        reasons.append("C#-only change, and the chunk is GDScript")
        fired.append(CSHARP_ONLY)
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
    rule = fired[0] if fired else accepted_occ[0].get("rule") or GODOT3_USE
    return Decision.model_validate({
        "accepted": accepted, "rule": rule, "confidence": round(confidence, CONFIDENCE_DIGITS), "evidence": evidence,
        "reasons": reasons, "rules": fired, "occurrences": shown[:OCCURRENCES_SHOWN]})


def _mapping_spans(accepted_mappings: dict[str, Decision], ids: set[str]) -> list[tuple[str, Occurrence]]:
    """(mapping id, occurrence) of each use in code of the finding's accepted mappings: a node named after an old
    class is no finding of its own."""
    return [(mid, o) for mid, d in accepted_mappings.items() if mid in ids
            for o in d.occurrences or () if o.status == "godot3" and o.region == "code"]


def prototype_evidence(v: ValidationScope, c: Candidate, accepted_mappings: dict[str, Decision]) -> Decision:
    if is_reference_prototype(c.payload):  # its must_match patterns say where a use may be, not that it is one
        return DERIVED_REJECTED
    facts = v.facts
    rules = c.payload.get("validator_rules") or {}
    evidence, reasons, fired = [], [], []
    need = rules.get("requires_accepted_mapping_type")
    if need or c.payload.get("task_type") == "migration":
        # A migration finding follows its mapping: the rule must match where an accepted mapping occurs.
        spans = _mapping_spans(accepted_mappings, set(c.payload.get("evidence_mapping_ids") or []))
        for rx in rules.get("must_match", []) if spans else ():  # no accepted mapping: no match can be at one
            for m in re.finditer(rx, facts.no_comments):
                hit = next(((mid, o) for mid, o in spans if m.start() <= o.start < max(m.end(), m.start() + 1)
                            or o.start <= m.start() < o.end), None)
                if hit and facts.region(m.start()) != "comment":
                    evidence.append({"literal": m.group(0)[:MATCH_QUOTED], "kind": "must_match", "chunk_line": hit[1].line,
                                     "col": hit[1].col, "mapping_id": hit[0]})
        if not spans:
            reasons.append("no accepted api_mapping of this finding's group" + (f" ({need})" if need else ""))
            fired.append(NO_ACCEPTED_MAPPING)
        elif not evidence:
            reasons.append("the finding's rule does not match where the accepted mapping occurs")
            fired.append(NOT_AT_MAPPING)
    else:
        for rx in rules.get("must_match", []):
            match = re.search(rx, facts.no_comments)
            if match:
                evidence.append({"literal": match.group(0)[:MATCH_QUOTED], "kind": "must_match",
                                 "chunk_line": facts.line_of_offset(match.start())})
            else:
                reasons.append("a must_match rule does not match the chunk's code")
                fired.append(MUST_MATCH_FAILS)
    for rx in rules.get("must_not_match", []):
        if re.search(rx, facts.no_comments):
            reasons.append(f"must_not_match rule matches: {rx[:PATTERN_QUOTED]}")
            fired.append(MUST_NOT_MATCH)
    accepted = not reasons and bool(evidence)
    rule = fired[0] if fired else MUST_MATCH if accepted else MUST_MATCH_FAILS  # no rule to match: nothing to accept on
    return Decision.model_validate({"accepted": accepted, "rule": rule, "confidence": 1.0 if accepted else 0.0,
                                    "evidence": evidence[:EVIDENCE_SHOWN], "reasons": reasons, "rules": fired})


def validate(v: ValidationScope, candidates: list[Candidate], occurrences: Occurrences,
             stage: str = "validate") -> list[Candidate]:
    """Adds a `validate` explanation and a decision to every candidate (pure: no I/O, nothing shared changed).
    `occurrences`: the version stage's decisions for the api_mapping candidates (`decide_occurrences`)."""
    pass1 = {cid: {"occurrences": [o.model_dump() for o in occ]} for cid, occ in occurrences.items()}
    alone = v.alone
    mappings = {id(c): mapping_evidence(alone, c, pass1[c.id]) for c in candidates if c.table == "api_mapping"}
    v.migrated = alone.migrated = migrated_uses(candidates, mappings)
    verdicts = [(c, docs_evidence(v, c)) for c in candidates if c.table == "docs_chunks"]
    figures = {id(c): verdict.figures for c, verdict in verdicts}
    docs = overrule_docs(v, [(c, verdict.decision) for c, verdict in verdicts])
    decided_docs = {id(c): d for c, d in docs}
    out = [_verdict(c, mappings[id(c)] if c.table == "api_mapping" else decided_docs[id(c)], stage, figures.get(id(c)))
           for c in candidates if c.table in ("api_mapping", "docs_chunks")]
    accepted = {c.id: mappings[id(c)] for c in candidates if c.table == "api_mapping" and mappings[id(c)].accepted}
    out += [_verdict(c, prototype_evidence(alone, c, accepted), stage)
            for c in candidates if c.table == "label_prototypes"]
    return out


def overrule_docs(v: ValidationScope, docs: Decided) -> Decided:
    """The overrules across the docs records, in order: a copied page, other members' entries, the same evidence."""
    docs = other_members_overruled(v, copied_page_overrules(v, docs))
    # In Godot 3 code a guide's Godot 4 code may be the chunk's own in its new form, sharing little more than
    # another page does (the renamed API is not shared): there the pages are not compared.
    if v.same_evidence and not v.godot3:
        docs = same_evidence_overrules(docs)
    return docs


def migrated_uses(candidates: list[Candidate], mappings: dict[int, Decision]) -> list[tuple[str, str, int, int]]:
    """(source, target, line, col) of each occurrence in code that an accepted api_mapping decided is Godot 3 use."""
    return [(c.payload["source_api"], c.payload["target_api"], o.line, o.col)
            for c in candidates if c.table == "api_mapping" and mappings[id(c)].accepted
            for o in mappings[id(c)].occurrences or () if o.status == "godot3" and o.region == "code"]


def _verdict(c: Candidate, d: Decision, stage: str, figures: DocsFigures | None = None) -> Candidate:
    c = decided(c, d)
    c.add_stage(stage, validate_info(d, figures))
    return c


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
    accepted = {c.id: _judged_mapping(c) for c in verdicts.of("api_mapping") if c.verdict == "accept"}
    # A finding of the API check is the check's, not the mappings': it stays as the check decided it.
    return [c if is_reference_prototype(c.payload) else _followed(c, prototype_evidence(v, c, accepted))
            for c in verdicts.of("label_prototypes")]


def _judged_mapping(c: Candidate) -> Decision:
    """An accepted mapping's decision, the occurrence the judge was asked about counted as Godot 3 use."""
    d = c.decision
    assert d is not None, "a mapping with a verdict has its decision"
    j = c.info("judge")
    if j is None or j.occurrence is None:
        return d
    at = (j.occurrence.line, j.occurrence.col)
    return d.marked(occurrences=tuple(o.model_copy(update={"status": "godot3"}) if (o.line, o.col) == at else o
                                      for o in d.occurrences or ()))


def _followed(c: Candidate, new: Decision) -> Candidate:
    """The finding under its new decision (rule `follows_mapping`), where the verdict changes."""
    if new.accepted == (c.verdict == "accept"):
        return c
    before = c.verdict
    assert c.decision is not None and before is not None, "a finding with a verdict has its decision"
    c = decided(c, c.decision.replaced_by(new, FOLLOWS_MAPPING))
    c.add_stage("judge", JudgeInfo(model="-", question="follows_mapping", rule="follows the mappings the judge decided",
                                   verdict_before=before, accepted=new.accepted, confidence=new.confidence))
    return c


VALIDATE = Stage("validate", run_validate,
                 "direct evidence: shared literals in code, API contradictions, version decisions per occurrence; "
                 "accept or reject with reasons")
