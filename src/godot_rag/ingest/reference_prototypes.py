"""`label_prototypes` derived from the class reference (`ingest --reference-findings`): one `deprecated_api`
finding for each class and member the reference marks Deprecated (warning), one `experimental_api` finding for
each it marks Experimental (info), each with the reference's note and its entry as evidence; and one prototype
each for `missing_engine_member` and `wrong_argument_count` (error), which `gdscript/api_check.py` decides per use.

Also `link_entry_records`: each class's and member's entry in the class reference gets the id of the
`docs_chunks` record that holds it (`record`), the evidence a finding cites.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..gdscript.api_check import REFERENCE_PROTOTYPE_PREFIX
from ..gdscript.classref import ClassReference
from ..gdscript.reference_facts import ENTRY_RECORD, Mark, marks_of, reference_entry
from .chunker import DOC_VERSION
from .mappings import EvidenceIndex

LABEL = {"deprecated": "deprecated_api", "experimental": "experimental_api"}
SEVERITY = {"deprecated": "warning", "experimental": "info", "missing_engine_member": "error",
            "wrong_argument_count": "error"}
NOT_NAME = r"(?<![A-Za-z0-9_])"
NAME_END = r"(?![A-Za-z0-9_])"
# How code writes each kind of member, so that a prototype's `must_match` finds a use of it.
PATTERNS = {
    "class": NOT_NAME + r"(?<![.$%]){}" + NAME_END,
    "method": NOT_NAME + r"{}\s*\(",
    "theme_property": r"(?:add_theme_\w+_override|get_theme_\w+|has_theme_\w+)\(\s*&?\"{}\"",
    "path_property": r"[\"']{}[\"']",
}
MEMBER_PATTERN = NOT_NAME + "{}" + NAME_END  # a property, signal, constant, enum, annotation, constructor
GENERIC_EVIDENCE_RECORDS = 2  # records a generic prototype cites
GENERIC_EVIDENCE = {  # where the docs explain what the two generic checks rest on: (pattern, pages preferred)
    "missing_engine_member": (r"UNSAFE_METHOD_ACCESS|unsafe", ("tutorials/scripting/gdscript/static_typing",)),
    "wrong_argument_count": (r"optional by assigning a default value", ("tutorials/scripting/gdscript/",)),
}


# -- the entries' records ---------------------------------------------------------------------------
def link_entry_records(class_reference: dict[str, Any], chunks: list[dict[str, Any]]) -> None:
    """Each class's entry gets the index of its page's first record, each member's the record whose `symbol` is it,
    else the first record of its class's page that holds its entry (`metadata.members`): the id is `page#index`."""
    by_page: dict[str, list[dict[str, Any]]] = {}
    for c in chunks:
        by_page.setdefault(c["metadata"]["page_path"], []).append(c)
    for cls, info in class_reference["classes"].items():
        records = by_page.get(info.get("page") or "", [])
        if not records:
            continue
        info[ENTRY_RECORD] = records[0]["metadata"]["chunk_index"]
        holders: dict[str, int] = {}
        for rec in records:
            if (rec.get("symbol") or "").startswith(f"{cls}."):
                holders[rec["symbol"][len(cls) + 1:]] = rec["metadata"]["chunk_index"]
        for rec in records:
            for name in rec["metadata"].get("members") or []:
                holders.setdefault(name, rec["metadata"]["chunk_index"])
        for name, member in info["members"].items():
            if name in holders:
                member[ENTRY_RECORD] = holders[name]


# -- the marked entries -----------------------------------------------------------------------------
def _marked(class_reference: dict[str, Any]) -> Iterator[tuple[str, str, str, Mark]]:
    """(class, member or '', kind, mark) for every mark of the reference, classes first, in name order."""
    for cls, info in sorted(class_reference["classes"].items()):
        for mark in marks_of(info):
            yield cls, "", "class", mark
        members = [(n, m, str(m["kind"])) for n, m in sorted(info["members"].items())]
        members += [(n, m, "path_property") for n, m in sorted((info.get("path_properties") or {}).items())]
        for name, member, kind in members:
            for mark in marks_of(member):
                yield cls, name, kind, mark


def _pattern(kind: str, name: str) -> str:
    return PATTERNS.get(kind, MEMBER_PATTERN).format(re.escape(name))


def _action(api: str, mark: Mark) -> str:
    """What to do: the replacement the note names, or the note's advice."""
    if mark.kind == "deprecated" and mark.see:
        names = " or ".join(f"`{s}`" for s in mark.see)
        return f"Replace `{api}` with {names}, as the class reference's note says: {mark.note}"
    if mark.kind == "deprecated":
        return f"Stop using `{api}`: the class reference marks it deprecated. {mark.note}".strip()
    return f"Expect `{api}` to change or go in a later Godot version; keep its use contained. {mark.note}".strip()


def _mark_prototype(ref: ClassReference, cls: str, name: str, kind: str, mark: Mark) -> dict[str, Any]:
    api = f"{cls}.{name}" if name else cls
    what = "class" if kind == "class" else kind.replace("_", " ")
    pattern = _pattern(kind, name or cls)
    record = reference_entry(ref, cls, name or None).record_id
    return {
        "prototype_id": f"{REFERENCE_PROTOTYPE_PREFIX}{LABEL[mark.kind]}:{api}",
        "label": LABEL[mark.kind],
        "task_type": "code_review",
        "input_pattern": pattern,
        "expected_finding": f"The {what} `{api}` is {mark.kind} in Godot {DOC_VERSION}: {mark.note}".strip(),
        "recommended_action": _action(api, mark),
        "evidence_mapping_ids": [],
        "evidence_chunk_ids": [record] if record else [],
        "severity": SEVERITY[mark.kind],
        "validator_rules": {
            "must_match": [pattern], "must_not_match": [],
            # what `gdscript/api_check.py` must find: the resolved use (or class name) and the reference's mark
            "requires_resolved_api": api, "requires_reference_mark": mark.kind, "member_kind": kind,
            "replacements": list(mark.see),
        },
    }


def _generic_prototypes(evidence: EvidenceIndex) -> list[dict[str, Any]]:
    """The two checks decided per use, one prototype each, citing what the docs say they rest on."""
    specs: list[tuple[str, str, str, str, dict[str, Any]]] = [
        ("missing_engine_member", r"\.[A-Za-z_][A-Za-z0-9_]*",
         f"A member that the receiver's engine class and its ancestors do not have in Godot {DOC_VERSION} is used.",
         "Use the closest real member the finding names (by edit distance or the Godot 3 -> 4 renames), or cast the "
         "receiver to the script class that declares it.",
         {"requires_engine_receiver": ["class", "constructor", "local_type", "value"], "requires_missing_member": True}),
        ("wrong_argument_count", r"[A-Za-z_][A-Za-z0-9_]*\s*\(",
         f"A method is called with a number of arguments that none of its signatures in Godot {DOC_VERSION} accepts.",
         "Pass the arguments the signature in the class reference lists (parameters with a default may be left out).",
         {"requires_engine_receiver": True, "requires_argument_count_outside_signature": True}),
    ]
    out = []
    for label, pattern, finding, action, rules in specs:
        located, prefer = GENERIC_EVIDENCE[label]
        out.append({
            "prototype_id": f"{REFERENCE_PROTOTYPE_PREFIX}{label}", "label": label, "task_type": "code_review",
            "input_pattern": pattern,
            "expected_finding": finding, "recommended_action": action, "evidence_mapping_ids": [],
            "evidence_chunk_ids": evidence.any_chunks(located, limit=GENERIC_EVIDENCE_RECORDS, prefer=prefer),
            "severity": SEVERITY[label], "validator_rules": {"must_match": [pattern], "must_not_match": [], **rules},
        })
    return out


def build_reference_prototypes(class_reference: dict[str, Any], chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The derived prototypes; the class reference's entries must have their records (`link_entry_records`)."""
    ref = ClassReference(class_reference)
    out = [_mark_prototype(ref, cls, name, kind, mark) for cls, name, kind, mark in _marked(class_reference)]
    return out + _generic_prototypes(EvidenceIndex(chunks))
