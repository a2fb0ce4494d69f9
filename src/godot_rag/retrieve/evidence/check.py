"""F's `check` stage: the API check (`gdscript/api_check.py`) on the resolved chunk, after the validator.

Each finding accepts the `label_prototypes` record derived from the class reference for it (`ingest`'s
`reference_prototypes.py`): `api:deprecated_api:Class.member` and `api:experimental_api:...` per marked entry,
`api:missing_engine_member` and `api:wrong_argument_count` for the two checks decided per use. A record with
several findings (two missing members) is one candidate whose trace lists each. Only this stage decides a derived
record: one that BM25 or the embedding brought in was rejected by the validator (`prototype_evidence`), and this
stage accepts it only where the check found it.

The resolution read is the chunk's with the project's declarations (`resolved.resolution`, not `chunk_alone()`):
the resolver marks what only the project reached (`project`), and the check never makes a finding of a member
missing there (a project-declared name, an autoload); a receiver the project types as an engine class (a file's
`@onready var anim: AnimationPlayer` read by a later chunk) is stated, so its marks and argument counts count.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from ...gdscript.api_check import REFERENCE_VERSION, ApiCheck, ApiFinding, Undecided, check_api, prototype_id
from ..engine.decision import Decision
from ..engine.stage import Stage
from ..engine.state import QueryState, Verdicts
from ..engine.trace import CheckEvidence, CheckFinding, CheckInfo
from ..engine.types import Candidate
from ..query.parse import ResolvedChunk
from .decision import decided
from .resources import EvidenceResources

TABLE = "label_prototypes"
GROUP = "api_check"  # the cut keeps every finding of this group, before the table's other records
CHECK_SCORE = 1.0  # a finding's score: decided by the reference, not ranked by retrieval
CHECK_CONFIDENCE = 1.0
UNDECIDED_SHOWN = 5  # undecided uses the stage's note names
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


class Checked(NamedTuple):
    verdicts: Verdicts


def action_of(f: ApiFinding, payload: Mapping[str, object]) -> str:
    """What to do about one finding, short (its message holds the reference's note): the replacement a mark's note
    names, the closest real members, the signature; the record's own action otherwise."""
    names = " or ".join(f"`{s}`" for s in f.suggestions)
    if f.kind == "deprecated_api":
        return f"Replace `{f.api}` with {names}." if names else f"Stop using `{f.api}`, as the reference's note says."
    if f.kind == "experimental_api":
        return f"Keep the use of `{f.api}` contained: it may change or go in a later Godot version."
    if f.kind == "missing_engine_member":
        cls = f.api.split(".")[0]
        return (f"Use {names} instead, or cast the receiver to the script class that declares it." if names else
                f"Look up what `{cls}` offers instead in its class reference; no member of it is close to this name.")
    if f.kind == "wrong_argument_count" and f.signature:
        return f"Pass the arguments the signature lists: {f.signature}."
    return str(payload.get("recommended_action") or "")


def finding_info(f: ApiFinding, payload: Mapping[str, object]) -> CheckFinding:
    entry = f.reference
    return CheckFinding(kind=f.kind, rule=f.rule, line=f.line, col=f.col, api=f.api, code=f.code,
                        receiver=f.receiver, message=f.message, action=action_of(f, payload),
                        entry={"page": entry.page, "anchor": entry.anchor, "url": entry.url, "record_id": entry.record_id},
                        note=f.note, suggestions=list(f.suggestions), signature=f.signature, arguments=f.arguments)


def undecided_summary(undecided: list[Undecided]) -> list[str]:
    """The first undecided uses, each with its place and why: "when a receiver is unresolved, say so"."""
    return [f"{u.name} at {u.line}:{u.col}: {u.reason}" for u in undecided[:UNDECIDED_SHOWN]]


def check_resolved(r: EvidenceResources, resolved: ResolvedChunk) -> ApiCheck:
    """The API check of a resolved chunk; the converter's renames (Godot 3 name -> its one Godot 4 name, for the
    closest-member suggestions) are read only when a member is missing."""
    renames = {}
    if any(u.missing_on for u in resolved.resolution.unresolved):
        renames = {old: next(iter(new)) for old, new in r.renames().code.items() if len(new) == 1}
    return check_api(resolved.facts, resolved.resolution, r.class_reference(), renames)


def check_decision(findings: list[ApiFinding]) -> Decision:
    """A derived record's decision: accepted by the rule of its first finding (`deprecated_member`,
    `missing_member_on_typed_local`, `argument_count`, ...), each finding its evidence."""
    return Decision(accepted=True, rule=findings[0].rule, confidence=CHECK_CONFIDENCE,
                    evidence=tuple(CheckEvidence(literal=f.code or f.api, kind="api_check", chunk_line=f.line, col=f.col,
                                                 message=f.message) for f in findings))


def _accepted(c: Candidate, findings: list[ApiFinding], result: ApiCheck, payload: Mapping[str, object]) -> Candidate:
    c = decided(c, check_decision(findings) if c.decision is None else c.decision.replaced_by(
        check_decision(findings), findings[0].rule))
    c.group, c.score = GROUP, CHECK_SCORE
    c.add_stage("check", CheckInfo(findings=[finding_info(f, payload) for f in findings], checked=result.checked,
                                   undecided=len(result.undecided), version=REFERENCE_VERSION))
    return c


def _order(c: Candidate) -> tuple[int, int, str]:
    first = c.info("check").findings[0]
    return SEVERITY_ORDER.get(str(c.payload.get("severity")), len(SEVERITY_ORDER)), first.line, c.id


def run_check(q: QueryState[EvidenceResources], verdicts: Verdicts, resolved: ResolvedChunk) -> Checked:
    """Each finding of the API check accepts its derived label_prototypes record, with the finding in the trace."""
    if TABLE not in q.tables:
        q.note(skipped=f"{TABLE} is not among the tables")
        return Checked(verdicts)
    r = q.resources
    result = check_resolved(r, resolved)
    by_id: dict[str, list[ApiFinding]] = {}
    for f in result.findings:
        by_id.setdefault(prototype_id(f), []).append(f)
    records = r.records(TABLE)
    mine = {c.id: c for c in verdicts.of(TABLE)}
    found, absent = [], []
    for pid, findings in by_id.items():
        if pid not in records:  # a database built with `ingest --no-reference-findings`
            absent.append(pid)
            continue
        before = mine.pop(pid, None) or Candidate(table=TABLE, id=pid, payload=records[pid], source="check")
        found.append(_accepted(before, findings, result, records[pid]))
    found.sort(key=_order)
    for i, c in enumerate(found):
        c.rank = i + 1
    q.record_ids(TABLE, "check", found)
    q.note(version=REFERENCE_VERSION, checked=result.checked, findings=len(result.findings), records=len(found),
           undecided=len(result.undecided), undecided_uses=undecided_summary(result.undecided),
           **({"no_record": absent} if absent else {}))
    tables = dict(verdicts.tables)
    tables[TABLE] = found + list(mine.values())
    return Checked(Verdicts(tables))


CHECK = Stage("check", run_check,
              "the API check on the resolved uses: deprecated, experimental, missing members, wrong argument counts; "
              "each finding accepts its reference-derived finding record")
