"""SARIF 2.1.0: one rule per label, one result per finding, paths relative to the scanned directory; each result's
stable fingerprint, and a finding suppressed inline kept with its `suppressions` (see `triage.py`)."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from .triage import FINGERPRINT_KEY, base_fingerprint

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _tool_version() -> str:
    try:
        from importlib.metadata import version

        return version("godot-rag")
    except Exception:
        return "0.1.0"


def build_sarif(findings: list[dict], root: Path | None, summary: dict, docs: dict[str, dict] | None = None) -> dict:
    rules = _rules(findings, docs or {})
    rule_ids = sorted(rules)
    index = {r: i for i, r in enumerate(rule_ids)}
    results = [_result(f, index) for f in findings]
    # No root (a scan for a client): SRCROOT stays a name without the server's path.
    srcroot = {"uri": Path(root).resolve().as_uri() + "/"} if root is not None else {
        "description": {"text": "the scanned project's folder"}}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "godot-rag", "version": _tool_version(),
                                "rules": [rules[r] for r in rule_ids]}},
            "originalUriBaseIds": {"SRCROOT": srcroot},
            "invocations": [{"executionSuccessful": True,
                             "properties": {"strategy": summary.get("strategy"), "chunks": summary.get("chunks"),
                                            "files": summary.get("files_scanned")}}],
            "results": results,
            "properties": {"projects": summary.get("projects", [])},
        }],
    }


def _rules(findings: list[dict], docs: dict[str, dict]) -> dict[str, dict]:
    """One rule per label, from its first finding."""
    rules: dict[str, dict] = {}
    for f in findings:
        if f["label"] in rules:
            continue
        rule = {
            "id": f["label"],
            "name": "".join(p.capitalize() for p in str(f["label"]).split("_")),
            "shortDescription": {"text": f["expected_finding"] or f["label"]},
            "fullDescription": {"text": f"{f['expected_finding']} {f['recommended_action']}".strip()},
            "help": {"text": f["recommended_action"] or "", "markdown": f"**Fix:** {f['recommended_action'] or ''}"},
            "defaultConfiguration": {"level": LEVEL.get(f["severity"], "note")},
            "properties": {"tags": ["godot", "migration" if f["migration"] else "review"],
                           "prototype_id": f["prototype_id"], "severity": f["severity"]},
        }
        url = next((docs[d]["url"] for d in f["docs_chunk_ids"] if d in docs and docs[d].get("url")), None)
        if url:
            rule["helpUri"] = url
        rules[f["label"]] = rule
    return rules


def _result(f: dict, index: dict[str, int]) -> dict:
    mapping = f["mappings"][0] if f["mappings"] else None
    text = f["expected_finding"] or f["label"]
    if mapping and mapping.get("source_api") and mapping.get("target_api"):
        text += f" `{mapping['source_api']}` -> `{mapping['target_api']}`."
    return {
        "ruleId": f["label"],
        "ruleIndex": index[f["label"]],
        "level": LEVEL.get(f["severity"], "note"),
        "message": {"text": f"{text} {f['recommended_action'] or ''}".strip()},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": quote(f["file"]), "uriBaseId": "SRCROOT"},
                "region": {"startLine": f["line"], "startColumn": f["column"], "endLine": f["line"],
                           "endColumn": max(f["end_column"], f["column"] + 1),
                           "snippet": {"text": f["evidence"]["code"]}},
            },
        }],
        "partialFingerprints": {FINGERPRINT_KEY: f.get("fingerprint") or base_fingerprint(f)},
        "properties": {"api_mapping_ids": f["api_mapping_ids"], "docs_chunk_ids": f["docs_chunk_ids"],
                       "evidence": f["evidence"]["literal"], "migration": f["migration"],
                       "severity": f["severity"]},
    } | _suppressions(f)


def _suppressions(f: dict) -> dict:
    """SARIF 2.1.0's mark of a finding the code suppresses (`# godot-rag: ignore[...]`)."""
    if not f.get("suppressed"):
        return {}
    return {"suppressions": [{"kind": "inSource", "status": "accepted",
                              "justification": f"# godot-rag: ignore ({f['suppressed']})"}]}
