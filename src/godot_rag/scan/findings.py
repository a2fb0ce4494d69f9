"""Findings: one per accepted `label_prototypes` occurrence, placed in the file.

Read only from the JSON shape of a retrieve result (`result.model_dump(mode="json")`): the accepted
prototype's `trace.validate.evidence` gives the occurrences (chunk line, column, the api_mapping
that occurs there); the accepted api_mapping records of the same chunk give the rename and its
occurrences; both give the docs chunk ids that support the finding.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SEVERITIES = ("info", "warning", "error")
NOT_COMPILED_NOTE = "This project is Godot 4, and Godot 4 has no such engine API: this code would not compile."
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def severity_rank(severity: str | None) -> int:
    return SEVERITY_RANK.get((severity or "").lower(), 0)


def _column(line_text: str, literal: str) -> int:
    """1-based column of the literal's first line in the code line (1 when it is not found there)."""
    head = (literal or "").split("\n", 1)[0].strip()
    if head:
        i = line_text.find(head)
        if i >= 0:
            return i + 1
    stripped = len(line_text) - len(line_text.lstrip())
    return stripped + 1


def _length(literal: str, line_text: str, col: int) -> int:
    head = (literal or "").split("\n", 1)[0]
    if head and line_text[col - 1:col - 1 + len(head)] == head:
        return len(head)
    m = re.match(r"[A-Za-z_][A-Za-z0-9_.]*", line_text[col - 1:])
    return len(m.group(0)) if m else 1


def _relocate(lines: list[str], line: int, col: int, needle: str | None) -> tuple[int, int]:
    """The place of `needle` at or after (line, col): a syntax rule such as `^\\s*export` starts its
    match on the blank line above the keyword; the finding belongs on the keyword itself."""
    if not needle:
        return line, col
    rx = re.compile(r"(?<![A-Za-z0-9_@])" + re.escape(needle) + r"(?![A-Za-z0-9_])")
    for n in range(line, min(len(lines), line + 12) + 1):
        text = lines[n - 1]
        if text.lstrip().startswith("#"):
            continue
        m = rx.search(text, col - 1 if n == line else 0)
        if m:
            return n, m.start() + 1
    return line, col


def _migration_occurrences(text: str, p: dict, mappings: dict[str, dict]) -> list[dict]:
    """Every place where a migration finding holds: an occurrence of an accepted api_mapping of the
    finding's group (Godot 3 use, in code; from the mapping's `validate.occurrences`) that one of the
    finding's `must_match` rules overlaps. The validator's own evidence list stops at 10 items and
    may pair a rule match with a later occurrence; this pass places each occurrence itself."""
    from ..gdscript.facts import parse_chunk

    ids = set(p.get("evidence_mapping_ids") or [])
    spans = [(mid, o) for mid, m in mappings.items() if mid in ids
             for o in ((m.get("trace") or {}).get("validate") or {}).get("occurrences") or []
             if o.get("status") == "godot3" and o.get("region") == "code" and isinstance(o.get("start"), int)]
    if not spans:
        return []
    facts = parse_chunk(text)
    matches = []
    for rx in (p.get("validator_rules") or {}).get("must_match") or []:
        try:
            matches += [(m.start(), m.end(), m.group(0)) for m in re.finditer(rx, facts.no_comments)
                        if facts.region(m.start()) != "comment"]
        except re.error:
            continue
    out = []
    for mid, o in spans:
        hit = next((lit for a, b, lit in matches if a < o["end"] and o["start"] < max(b, a + 1)), None)
        if hit is not None:
            out.append({"literal": hit[:80], "kind": "must_match", "chunk_line": o["line"], "col": o["col"],
                        "mapping_id": mid, "rule": o.get("rule")})
    return out


def chunk_findings(file: str, chunk: dict, records: list[dict]) -> list[dict]:
    """Findings of one chunk. `chunk`: start_line, text, index; `records`: the accepted results (JSON dicts)."""
    lines = chunk["text"].split("\n")
    mappings = {r["id"]: r for r in records if r["table"] == "api_mapping" and r.get("verdict") == "accept"}
    out: list[dict] = []
    seen: set[tuple] = set()
    for rec in records:
        if rec["table"] != "label_prototypes" or rec.get("verdict") != "accept":
            continue
        checked = ((rec.get("trace") or {}).get("check") or {}).get("findings")
        if checked:  # the API check's findings, each at its own place
            out += [f for f in check_findings(file, chunk, rec, checked) if (f["label"], f["line"], f["column"]) not in seen]
            seen.update((f["label"], f["line"], f["column"]) for f in out)
            continue
        p = rec.get("payload") or {}
        info = (rec.get("trace") or {}).get("validate") or {}
        evidence = list(info.get("evidence") or [])
        rules = p.get("validator_rules") or {}
        if p.get("task_type") == "migration" or rules.get("requires_accepted_mapping_type"):
            evidence += _migration_occurrences(chunk["text"], p, mappings)
        for ev in evidence:
            cl = ev.get("chunk_line")
            if not isinstance(cl, int) or not 1 <= cl <= len(lines):
                continue
            place = _place(lines, cl, ev, mappings)
            key = (p.get("label"), chunk["start_line"] + place.line - 1, place.col)
            if key in seen:
                continue
            seen.add(key)
            out.append(_finding(file, chunk, rec, ev, place))
    out.sort(key=lambda f: (f["line"], f["column"], f["label"] or ""))
    return out


@dataclass(frozen=True)
class _Place:
    """Where one piece of evidence is in its chunk, and the accepted mapping it names (if any)."""
    line: int  # in the chunk, from 1
    col: int
    line_text: str
    literal: str  # what is written there
    mapping_id: str | None
    mapping: dict | None  # the accepted api_mapping record
    mapping_payload: dict


def _place(lines: list[str], cl: int, ev: Any, mappings: dict[str, dict]) -> _Place:
    """`ev`: one evidence entry (JSON), its values unchecked but for `chunk_line`."""
    mid = ev.get("mapping_id")
    m = mappings.get(mid) if mid else None
    mp = (m or {}).get("payload") or {}
    col = ev.get("col") if isinstance(ev.get("col"), int) else _column(lines[cl - 1], ev.get("literal", ""))
    source = mp.get("source_api") or ""
    needle = (re.match(r"[A-Za-z_][A-Za-z0-9_.]*", source) or [None])[0] if source else None
    cl, col = _relocate(lines, cl, col, needle)
    line_text = lines[cl - 1]
    # What is written there: the Godot 3 name the accepted mapping found (the rule's own match,
    # `evidence.rule_match`, may be wider or start earlier).
    literal = needle if needle and line_text[col - 1:].startswith(needle) else (ev.get("literal") or "").strip()
    return _Place(cl, col, line_text, literal, mid, m, mp)


def _finding(file: str, chunk: dict, rec: dict, ev: dict, place: _Place) -> dict:
    p = rec.get("payload") or {}
    mid, mp, col, line_text, literal = place.mapping_id, place.mapping_payload, place.col, place.line_text, place.literal
    expected = p.get("expected_finding")
    if ev.get("rule") == "engine_api_missing":  # the version rule that kept it in a Godot 4 project
        expected = f"{expected or ''} {NOT_COMPILED_NOTE}".strip()
    docs = list(dict.fromkeys(list(p.get("evidence_chunk_ids") or []) + list(mp.get("evidence_chunk_ids") or [])))
    return {
        "file": file,
        "line": chunk["start_line"] + place.line - 1,
        "column": col,
        "end_column": col + _length(literal, line_text, col),
        "label": p.get("label"),
        "severity": (p.get("severity") or "info").lower(),
        "task_type": p.get("task_type"),
        "migration": p.get("task_type") == "migration",
        "prototype_id": rec["id"],
        "expected_finding": expected,
        "recommended_action": p.get("recommended_action"),
        "api_mapping_ids": [mid] if mid else [],
        "mappings": [{"id": mid, "source_api": mp.get("source_api"), "target_api": mp.get("target_api"),
                      "change_type": mp.get("change_type")}] if place.mapping else [],
        "docs_chunk_ids": docs,
        "evidence": {"literal": literal, "kind": ev.get("kind"), "rule_match": ev.get("literal"),
                     "code": line_text.strip()[:300]},
        "chunk": {"index": chunk["index"], "start_line": chunk["start_line"], "end_line": chunk["end_line"]},
    }


def check_findings(file: str, chunk: dict, rec: dict, checked: list[dict]) -> list[dict]:
    """The findings of one record the API check accepted (`trace.check.findings`): each with its own line, message,
    action and reference entry (`retrieve/evidence/check.py`)."""
    lines = chunk["text"].split("\n")
    p = rec.get("payload") or {}
    out = []
    for ev in checked:
        cl, col = ev.get("line"), ev.get("col")
        if not isinstance(cl, int) or not isinstance(col, int) or not 1 <= cl <= len(lines):
            continue
        name = str(ev.get("api") or "").rsplit(".", 1)[-1]
        line_text = lines[cl - 1]
        entry = ev.get("entry") or {}
        docs = [entry["record_id"]] if entry.get("record_id") else []
        out.append({
            "file": file, "line": chunk["start_line"] + cl - 1, "column": col,
            "end_column": col + (len(name) if name and line_text[col - 1:].startswith(name) else 1),
            "label": p.get("label"), "severity": (p.get("severity") or "info").lower(), "task_type": p.get("task_type"),
            "migration": False, "prototype_id": rec["id"], "expected_finding": ev.get("message"),
            "recommended_action": ev.get("action"), "api_mapping_ids": [], "mappings": [],
            "docs_chunk_ids": list(dict.fromkeys(docs + list(p.get("evidence_chunk_ids") or []))),
            "reference": {"api": ev.get("api"), "url": entry.get("url"), "page": entry.get("page"),
                          "anchor": entry.get("anchor"), "rule": ev.get("rule"), "receiver": ev.get("receiver")},
            "evidence": {"literal": name, "kind": "api_check", "rule_match": ev.get("code"), "code": line_text.strip()[:300]},
            "chunk": {"index": chunk["index"], "start_line": chunk["start_line"], "end_line": chunk["end_line"]},
        })
    return out


def summarize(findings: list[dict]) -> dict:
    by_sev = {s: 0 for s in reversed(SEVERITIES)}
    by_label: dict[str, dict] = {}
    for f in findings:
        by_sev[f["severity"]] = by_sev.get(f["severity"], 0) + 1
        e = by_label.setdefault(f["label"], {"label": f["label"], "severity": f["severity"], "count": 0,
                                             "migration": f["migration"]})
        e["count"] += 1
    labels = sorted(by_label.values(), key=lambda e: (-severity_rank(e["severity"]), -e["count"], e["label"]))
    return {"total": len(findings), "by_severity": by_sev, "by_label": labels,
            "migration": sum(1 for f in findings if f["migration"])}


def fails(findings: list[dict], fail_on: str | None) -> bool:
    if not fail_on or fail_on == "none":
        return False
    threshold = severity_rank(fail_on)
    return any(severity_rank(f["severity"]) >= threshold for f in findings)
