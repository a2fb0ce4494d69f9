"""What a scan reports of its findings: each finding's stable fingerprint, the findings the code suppresses inline,
and those a baseline (an earlier scan's SARIF) already holds.

- Fingerprint (`godotRag/v2` in SARIF's `partialFingerprints`): a hash of the rule id, the file's path, the flagged
  line's text with its whitespace normalised, and the symbol (the Godot 3 name a mapping found, else the literal),
  not the line number, so an edit above the line keeps it; the n-th repeat of the same line and symbol in a file
  gets `:n`.
- Inline suppression: `# godot-rag: ignore[rule_id]` on the flagged line or the line above it, and
  `# godot-rag: ignore-file[rule_id]` anywhere in the file; a bare `ignore` / `ignore-file` is every rule, and
  several rules are separated by commas. SARIF keeps a suppressed finding with a `suppressions` entry (`inSource`).
- Baseline: `scan --baseline previous.sarif` reports only the findings whose fingerprint the file does not hold.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FINGERPRINT_KEY = "godotRag/v2"
FINGERPRINT_CHARS = 32  # hex characters of the sha256 kept: plenty to tell a project's findings apart
ALL_RULES = "*"
# `# godot-rag: ignore[deprecated_api, wrong_argument_count]`, `# godot-rag: ignore-file`
DIRECTIVE_RE = re.compile(r"godot-rag:\s*(?P<scope>ignore-file|ignore)(?:\[(?P<rules>[^\]]*)\])?")
LINES_ABOVE = 1  # a directive on its own line covers the line below it


class BaselineError(ValueError):
    """A baseline file that cannot be read as a SARIF log: one line that names the file."""


# -- inline suppressions ----------------------------------------------------------------------------
def _comment(line: str) -> str | None:
    """The comment of one GDScript line (the text after a `#` outside a string), or None."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote and line[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[i + 1:]
    return None


def parse_suppressions(text: str) -> dict[str, Any]:
    """A file's directives, JSON-ready: `{"lines": {"12": ["deprecated_api"]}, "file": ["*"]}` (`*`: every rule)."""
    lines: dict[str, list[str]] = {}
    whole: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        comment = _comment(line)
        for m in DIRECTIVE_RE.finditer(comment or ""):
            rules = [r.strip() for r in (m.group("rules") or "").split(",") if r.strip()] or [ALL_RULES]
            target = whole if m.group("scope") == "ignore-file" else lines.setdefault(str(number), [])
            target += [r for r in rules if r not in target]
    return {"lines": lines, "file": whole} if lines or whole else {}


def suppression(directives: Mapping[str, Any], rule: str, line: int) -> str | None:
    """Where `rule` at `line` is suppressed (`line 12`, `file`), or None."""
    def covers(rules: list[str]) -> bool:
        return ALL_RULES in rules or rule in rules

    if covers(directives.get("file") or []):
        return "file"
    by_line = directives.get("lines") or {}
    for at in range(line, line - LINES_ABOVE - 1, -1):
        if covers(by_line.get(str(at)) or []):
            return f"line {at}"
    return None


# -- fingerprints -----------------------------------------------------------------------------------
def _symbol(finding: Mapping[str, Any]) -> str:
    mappings = finding.get("mappings") or []
    source = mappings[0].get("source_api") if mappings else None
    return str(source or (finding.get("evidence") or {}).get("literal") or "")


def base_fingerprint(finding: Mapping[str, Any]) -> str:
    """The hash of the rule id, the file, the flagged line's normalised text and the symbol."""
    code = " ".join(str((finding.get("evidence") or {}).get("code") or "").split())
    key = "\0".join([str(finding.get("label")), str(finding.get("file")), code, _symbol(finding)])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def add_fingerprints(findings: list[dict[str, Any]]) -> None:
    """Each finding's `fingerprint`; the findings of one file, in line order, number their repeats."""
    seen: dict[str, int] = {}
    for f in sorted(findings, key=lambda f: (f["file"], f["line"], f["column"], str(f.get("label")))):
        base = base_fingerprint(f)
        n = seen.get(base, 0)
        seen[base] = n + 1
        f["fingerprint"] = base if n == 0 else f"{base}:{n}"


# -- baseline ---------------------------------------------------------------------------------------
def read_baseline(path: Path) -> frozenset[str]:
    """The fingerprints an earlier scan's SARIF holds (suppressed results included)."""
    try:
        log = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise BaselineError(f"{path}: cannot read the baseline ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: the baseline is not SARIF JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise BaselineError(f"{path}: the baseline is not SARIF JSON (line {e.lineno}: {e.msg})") from None
    runs = log.get("runs") if isinstance(log, dict) else None
    if not isinstance(runs, list) or not all(isinstance(r, dict) for r in runs):
        raise BaselineError(f"{path}: the baseline is not a SARIF log (no list of runs)")
    found = set()
    for run in runs:
        for result in run.get("results") or []:
            prints = result.get("partialFingerprints") if isinstance(result, dict) else None
            if isinstance(prints, dict) and isinstance(prints.get(FINGERPRINT_KEY), str):
                found.add(prints[FINGERPRINT_KEY])
    return frozenset(found)


@dataclass
class Triage:
    """A scan's findings sorted out: reported, suppressed inline (kept for SARIF), and already in the baseline."""
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    baselined: int = 0

    def keep(self, finding: dict[str, Any], directives: Mapping[str, Any], baseline: frozenset[str]) -> bool:
        """Whether `finding` (fingerprinted) is reported; a suppressed one gets its `suppressed` place."""
        if finding["fingerprint"] in baseline:
            self.baselined += 1
            return False
        where = suppression(directives, str(finding.get("label")), int(finding["line"]))
        if where is not None:
            finding["suppressed"] = where
            self.suppressed.append(finding)
            return False
        return True
