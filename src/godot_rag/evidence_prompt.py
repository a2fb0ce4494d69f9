"""The accepted evidence of one result, rendered for a model's prompt (`--format prompt`).

The full records are long, and what a model needs most is why each record was accepted: for a
finding its line and action (each finding of F's API check on its own line, with its reference entry), for a
mapping the rename and the line that uses the old name, for a class-reference entry the member's signature and
first sentence, for a guide the heading and the code lines it shares with the chunk. Sections come in that order
of value, and whole entries are dropped once the token budget is spent. When F finds nothing wrong, the prompt
ends by saying what its API check checked, so that a model need not guess whether the evidence hints at a problem.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .retrieve.engine.types import Candidate, RetrieveResult

# A token is about four characters of English or GDScript for Qwen's tokenizer; the budget is an estimate.
CHARS_PER_TOKEN = 4
DEFAULT_BUDGET_TOKENS = 600
MAX_GUIDE_LINES = 3  # record code lines shown per guide
MAX_SENTENCE_CHARS = 240
MAX_MATCHED = 3  # code literals a finding's line names

SECTION_TITLES = {
    "api_mapping": "Godot 3 -> 4 API changes this chunk uses",
    "label_prototypes": "Reviewer findings",
    "checked": "Checked against the class reference",
    "api_reference": "Godot 4 class reference",
    "guides": "Godot 4 guides",
}
SECTION_ORDER = ["label_prototypes", "api_mapping", "api_reference", "guides", "checked"]
SIGNATURE_RE = re.compile(r"^(?P<sig>.*\*\*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\*\*.*)$", re.M)
SENTENCE_RE = re.compile(r"(.+?[.!?])(\s|$)", re.S)


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def _field(obj: Any, name: str) -> Any:
    """A trace item's field, whether it is a typed model or parsed JSON."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _validate_info(c: Candidate) -> Any:
    return c.info("validate")


def _lines(items: list[Any], key: str) -> list[int]:
    return sorted({n for n in (_field(i, key) for i in items or []) if isinstance(n, int)})


def _at(lines: list[int]) -> str:
    """`, line 4` or `, lines 4, 9`; nothing when no line is known."""
    if not lines:
        return ""
    return (", line " if len(lines) == 1 else ", lines ") + ", ".join(map(str, lines[:4]))


def mapping_line(c: Candidate) -> str:
    p = c.payload
    info = _validate_info(c)
    occ = [o for o in (_field(info, "occurrences") or []) if str(_field(o, "status") or "").startswith("godot3")]
    kind = str(p.get("change_type", "")).replace("_", " ")
    line = f"- {p['source_api']} -> {p['target_api']} ({kind}{_at(_lines(occ, 'line'))})"
    notes = (p.get("notes") or "").strip()
    if p.get("mapping_id", "").startswith(("gdscript_syntax:", "migration_guide:")) and notes:
        line += ": " + _first_sentence(notes)
    return line


def check_lines(c: Candidate) -> list[str]:
    """A record the API check accepted: one line per finding, at its own line, with its reference entry."""
    severity = c.payload.get("severity", "info")
    return [f"- [{severity}, line {_field(f, 'line')}] {_field(f, 'message')} Action: {_field(f, 'action')} "
            f"Reference: {(_field(f, 'entry') or {}).get('url')}" for f in _field(c.info("check"), "findings") or []]


def finding_line(c: Candidate, renames: dict[str, str] | None = None) -> str:
    """A finding at its lines, with the code it matched and, where an accepted mapping renames that code, the
    replacement (`BUTTON_LEFT -> MOUSE_BUTTON_LEFT`): a model reads a concrete change better than a kind of one."""
    p = c.payload
    evidence = _field(_validate_info(c), "evidence") or []
    at = _at(_lines(evidence, "chunk_line"))
    matched = list(dict.fromkeys(str(_field(e, "literal")) for e in evidence if _field(e, "literal")))[:MAX_MATCHED]
    shown = ", ".join(f"`{m}` -> `{(renames or {})[m]}`" if m in (renames or {}) else f"`{m}`" for m in matched)
    said = str(p["expected_finding"])
    said = f"{said.rstrip('.')}: {shown}." if shown else said
    return f"- [{p.get('severity', 'info')}{at}] {said} Action: {p['recommended_action']}"


def checked_line(result: RetrieveResult, shown: list[Candidate]) -> str | None:
    """What F's API check checked, said when F found nothing wrong (no finding, no Godot 3 change); None when the
    check did not run or something was found. `shown`: the result's `accepted` records."""
    log = next((s.info for s in result.trace.stages if s.stage == "check"), None)
    if log is None or "checked" not in log or any(c.table in ("label_prototypes", "api_mapping") for c in shown):
        return None
    version, checked = log.get("version", ""), int(log.get("checked") or 0)
    # A verdict, last: a model reading evidence takes any record as a hint that something must change, so the
    # prompt ends, nearest the question, by saying outright that nothing was found, then what was checked. Uses
    # left undecided stay in the trace and the MCP check: in a prompt they read as doubt (downstream bench, 1.5B).
    line = (f"- No problem found: no Godot 3 API; {checked} engine API use(s) resolved in Godot {version}; none removed, "
            "renamed, deprecated or called with a wrong number of arguments" if checked else
            f"- No problem found: no Godot 3 API; no engine API use resolved in Godot {version} to check further")
    documented = " The records above only document what the chunk uses; none of them reports a problem."
    return line + "." + (documented if shown else "")


def _first_sentence(text: str) -> str:
    text = " ".join(text.replace("**", "").split())
    m = SENTENCE_RE.match(text)
    out = m.group(1) if m else text
    return out if len(out) <= MAX_SENTENCE_CHARS else out[:MAX_SENTENCE_CHARS - 3] + "..."


def _resolved(c: Candidate) -> list[str]:
    info = _validate_info(c)
    return [str(_field(i, "literal")) for i in (_field(info, "evidence") or []) if _field(i, "kind") == "resolved_api"]


def reference_line(c: Candidate) -> str:
    """`Class.member: signature. First sentence.` for the member the chunk resolves to, else the class."""
    p = c.payload
    content = p.get("content") or ""
    for api in _resolved(c) or [p.get("symbol") or ""]:
        member = api.split(".")[-1]
        for m in SIGNATURE_RE.finditer(content):
            if m.group("name") == member:
                rest = content[m.end():].strip()
                sig = m.group("sig").replace("**", "").strip()
                return f"- {api}: `{sig}` {_first_sentence(rest.split(chr(10) + chr(10))[0]) if rest else ''}".rstrip()
    return f"- {p.get('symbol') or c.id} ({p.get('heading', '')}): {_first_sentence(content)}"


def guide_line(c: Candidate) -> str:
    p = c.payload
    meta = p.get("metadata") or {}
    info = _validate_info(c)
    shared = [str(_field(i, "literal")) for i in (_field(info, "evidence") or []) if _field(i, "kind") != "code_line"]
    head = f"- {meta.get('page_title') or meta.get('page_path') or c.id} > {p.get('heading', '')} ({c.id})"
    if shared:
        head += ": shares " + ", ".join(shared[:6])
    names = [s.strip('."()') for s in shared if s.strip('."()')]
    code = "\n".join(b.get("code", "") for b in p.get("code_blocks") or [] if b.get("language") != "csharp")
    shown = list(dict.fromkeys(ln.strip() for ln in code.splitlines() if ln.strip() and any(n in ln for n in names)))
    shown = shown[:MAX_GUIDE_LINES]
    return head + "".join(f"\n    {ln}" for ln in shown)


def _section(c: Candidate) -> str:
    if c.table == "docs_chunks":
        return "api_reference" if (c.group == "api_reference" or c.payload.get("doc_type") == "class_reference") else "guides"
    return c.table


RENDER = {"api_mapping": mapping_line, "api_reference": reference_line, "guides": guide_line}  # findings: finding_line


def accepted(result: RetrieveResult) -> list[Candidate]:
    """What a model should read: accepted records (F), or every returned record of a strategy without a validator."""
    return [c for c in result.results if c.verdict != "reject"]


def _within_budget(pieces: list[str], budget_tokens: int, used: int, skip_long: bool) -> tuple[list[str], int]:
    """The pieces that fit the budget left, in order: up to the first that would pass it, or (`skip_long`)
    every one that still fits. Returns them and the tokens used so far."""
    out = []
    for piece in pieces:
        cost = estimate_tokens(piece) + 1
        if used + cost > budget_tokens:
            if skip_long:
                continue
            break
        out.append(piece)
        used += cost
    return out, used


def render_prompt(result: RetrieveResult, budget_tokens: int = DEFAULT_BUDGET_TOKENS) -> str:
    """The evidence as plain text for a prompt, at most `budget_tokens` (estimated); empty when there is none."""
    by_section: dict[str, list[str]] = {s: [] for s in SECTION_ORDER}
    shown = accepted(result)
    renames = {c.payload["source_api"]: c.payload["target_api"] for c in shown if c.table == "api_mapping"}
    for c in shown:
        section = _section(c)
        if c.info("check") is not None:
            by_section[section] += check_lines(c)
        else:
            by_section[section].append(finding_line(c, renames) if section == "label_prototypes" else RENDER[section](c))
    if (checked := checked_line(result, shown)) is not None:
        by_section["checked"].append(checked)
    out: list[str] = []
    used = 0
    for section in SECTION_ORDER:
        title = f"{SECTION_TITLES[section]}:"
        pieces = [entry if n else title + "\n" + entry for n, entry in enumerate(by_section[section])]
        kept, used = _within_budget(pieces, budget_tokens, used, skip_long=False)
        out.extend(kept)
    return "\n".join(out)


def render_payloads(result: RetrieveResult, budget_tokens: int) -> str:
    """The accepted records' full payloads as JSON lines, in rank order, whole records only: one that would
    pass the budget is left out and the next ones still tried (a long guide ranked first must not leave
    the model no evidence at all)."""
    lines = [json.dumps(c.payload, ensure_ascii=False) for c in accepted(result)]
    return "\n".join(_within_budget(lines, budget_tokens, 0, skip_long=True)[0])
