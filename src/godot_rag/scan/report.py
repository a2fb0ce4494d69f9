"""report.html (self-contained: inline CSS, no script, no CDN) and report.md with the same content.

Every string from the project or the records is escaped: a script's text is shown, never run.
"""
from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlparse

from .findings import SEVERITIES

CONTEXT_LINES = 2
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px}\
th,td{border:1px solid #d5d9e0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums}
.sev{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;font-weight:600;color:#fff}
.sev-error{background:#c62828}.sev-warning{background:#b26a00}.sev-info{background:#1565c0}
.finding{background:#fff;border:1px solid #d5d9e0;border-left:4px solid #888;border-radius:4px;padding:8px 12px;margin:10px 0}
.finding.error{border-left-color:#c62828}.finding.warning{border-left-color:#b26a00}.finding.info{border-left-color:#1565c0}
.loc{font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:600}
pre.code{background:#f3f4f7;border:1px solid #e0e3e8;padding:6px 0;overflow-x:auto;margin:6px 0;\
font:12.5px/1.5 ui-monospace,Menlo,Consolas,monospace}
pre.code span.ln{display:inline-block;width:4.5em;color:#8a93a3;text-align:right;padding-right:10px;user-select:none}
pre.code .hit{background:#fff4cc}
mark{background:#ffd54f;padding:0 1px;border-radius:2px}
.muted{color:#5f6b7a}.note{background:#fff8e1;border:1px solid #f0d58a;padding:6px 10px;border-radius:4px;margin:6px 0}
ul.docs{margin:4px 0 0 0;padding-left:20px}code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
"""



def _file_notes(e: dict) -> list[str]:
    """Why a file's row needs a note in either report: skipped, or cut by lines."""
    notes = []
    if e["error"]:
        notes.append(f"skipped: {e['error']}")
    if e["chunker"] == "line-fallback":
        notes.append("does not parse: cut by lines")
    return notes

def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _safe_url(url: str | None) -> str | None:
    if not url:
        return None
    try:
        scheme = urlparse(url).scheme
    except ValueError:
        return None
    return url if scheme in ("http", "https") else None


def _chunk_index(files: list[dict]) -> dict[tuple[str, int], dict]:
    return {(e["file"], c["index"]): c for e in files for c in e["chunks"]}


def _context(f: dict, chunk: dict | None) -> list[tuple[int, str, bool]]:
    if chunk is None:
        return [(f["line"], f["evidence"]["code"], True)]
    lines = chunk["text"].split("\n")
    i = f["line"] - chunk["start_line"]
    lo, hi = max(0, i - CONTEXT_LINES), min(len(lines), i + CONTEXT_LINES + 1)
    return [(chunk["start_line"] + k, lines[k], k == i) for k in range(lo, hi)]


def _version_line(s: dict) -> str:
    """One line for the summary: per version, how many projects and how it was decided."""
    projects = [p for p in s["projects"] if p["files"]] or s["projects"]
    if len(projects) == 1:
        p = projects[0]
        where = p["dir"] if p["dir"] != "." else "(root)"
        return f"Godot {p['godot_version_used']}: {where} ({p['version_source']})"
    groups: dict[tuple[str, str], int] = {}
    for p in projects:
        src = "--godot-version" if s.get("godot_version_override") else p["version_source"]
        groups[(p["godot_version_used"], src)] = groups.get((p["godot_version_used"], src), 0) + 1
    return "; ".join(f"Godot {v}: {n} project{'s' if n != 1 else ''} ({src})" for (v, src), n in sorted(groups.items()))


def _project_rows(s: dict) -> list[tuple]:
    return [(p["dir"], p["name"], p["godot_version_used"], p["version_source"], p["files"], p["chunks"]) for p in s["projects"]]


def _elapsed(s: dict) -> str:
    return (f"{s['seconds']:.1f} s (retrieve {s['retrieve_seconds']:.1f} s, {s['computed']} chunks computed, "
            f"{s['cached']} from the cache)")


def render_html(s: dict, files: list[dict], findings: list[dict], links: dict[str, dict]) -> str:
    chunks = _chunk_index(files)
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<meta http-equiv=\"Content-Security-Policy\" "
           "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
           f"<title>godot-rag scan: {_e(s['root'])}</title>", f"<style>{CSS}</style></head><body><main>",
           f"<h1>godot-rag scan</h1><p class=\"muted\"><code>{_e(s['root'])}</code> &middot; {_e(s['started'])}</p>"]
    out += _html_summary(s) + _html_counts(s) + _html_files(files)
    # -- findings
    out.append(f'<h2 id="findings">Findings ({len(findings)})</h2>')
    if not findings:
        out.append('<p class="muted">No findings.</p>')
    current = None
    for f in findings:
        if f["file"] != current:
            current = f["file"]
            out.append(f'<h3 id="file-{_e(_anchor(current))}"><code>{_e(current)}</code></h3>')
        out.append(_finding_html(f, chunks.get((f["file"], f["chunk"]["index"])), links))
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"


def _html_summary(s: dict) -> list[str]:
    """The summary table and its notes (unreadable files, line-cut files, chunks not retrieved)."""
    out = ['<h2 id="summary">Summary</h2><table class="summary">']
    rows = [
        ("Godot version", _version_line(s)),
        ("Strategy", s["strategy"] + " (no LLM)"),
        ("Files", f"{s['files_scanned']} scanned of {s['files_selected']} selected ({s['files_found']} found)"
                  + (f"; limited to files changed since {s['changed_since']}" if s.get("changed_since") else "")),
        ("Chunks", str(s["chunks"])),
        ("Findings", f"{s['findings']['total']} ({s['findings']['migration']} migration)"),
        ("Time", _elapsed(s)),
        ("Database", s["database"]),
    ]
    for k, v in rows:
        out.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    out.append("</table>")
    if s.get("no_project_godot"):
        out.append('<p class="note">No <code>project.godot</code> found for some scripts: their Godot version is '
                   "<b>auto</b> (decided per chunk by its own markers).</p>")
    for u in s["unreadable"]:
        out.append(f'<p class="note">Skipped <code>{_e(u["file"])}</code>: {_e(u["error"])}</p>')
    for fb in s["line_fallback"]:
        out.append(f'<p class="note"><code>{_e(fb)}</code> does not parse: its chunks were cut by lines.</p>')
    for ce in s["chunk_errors"]:
        out.append(f'<p class="note">Chunk <code>{_e(ce["file"])}:{ce["start_line"]}-{ce["end_line"]}</code> '
                   f"was not retrieved: {_e(ce['error'])}</p>")
    return out


def _html_counts(s: dict) -> list[str]:
    """The projects (when there are several), and the findings by severity and by label."""
    out = []
    if len(s["projects"]) > 1:
        out.append('<h3>Projects</h3><table class="projects"><tr><th>folder</th><th>name</th><th>Godot</th>'
                   "<th>version from</th><th>files</th><th>chunks</th></tr>")
        for row in _project_rows(s):
            out.append("<tr>" + "".join(('<td class="n">' if isinstance(v, int) else "<td>") + _e(v) + "</td>" for v in row)
                       + "</tr>")
        out.append("</table>")
    out.append('<h3>Findings by severity</h3><table class="by-severity"><tr>'
               + "".join(f"<th>{_e(sv)}</th>" for sv in s["findings"]["by_severity"]) + "</tr><tr>"
               + "".join(f'<td class="n">{n}</td>' for n in s["findings"]["by_severity"].values()) + "</tr></table>")
    out.append('<h3>Findings by label</h3><table class="by-label">'
               "<tr><th>label</th><th>severity</th><th>kind</th><th>count</th></tr>")
    for lab in s["findings"]["by_label"]:
        out.append(f"<tr><td><code>{_e(lab['label'])}</code></td><td><span class=\"sev sev-{_e(lab['severity'])}\">"
                   f"{_e(lab['severity'])}</span></td><td>{'migration' if lab['migration'] else 'review'}</td>"
                   f'<td class="n">{lab["count"]}</td></tr>')
    out.append("</table>")
    return out


def _html_files(files: list[dict]) -> list[str]:
    out = []
    out.append('<h2 id="files">Files</h2><table class="files"><tr><th>file</th><th>Godot</th><th>chunks</th>'
               + "".join(f"<th>{sv}</th>" for sv in reversed(SEVERITIES)) + "<th>notes</th></tr>")
    for e in files:
        notes = _file_notes(e)
        counts = e.get("findings") or {}
        name = f'<a href="#file-{_e(_anchor(e["file"]))}">{_e(e["file"])}</a>' if any(counts.values()) else _e(e["file"])
        out.append(f"<tr><td><code>{name}</code></td><td>{_e(e['godot_version'])}</td><td class=\"n\">{len(e['chunks'])}</td>"
                   + "".join(f'<td class="n">{counts.get(sv, 0) or ""}</td>' for sv in reversed(SEVERITIES))
                   + f"<td>{_e('; '.join(notes))}</td></tr>")
    out.append("</table>")
    return out


def _change_word(m: dict) -> str:
    return "Rename" if str(m.get("change_type") or "").endswith("rename") else "Change"


def _anchor(path: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in path)


def _finding_html(f: dict, chunk: dict | None, links: dict[str, dict]) -> str:
    sev = f["severity"]
    parts = [f'<article class="finding {_e(sev)}" data-label="{_e(f["label"])}">',
             f'<div><span class="sev sev-{_e(sev)}">{_e(sev)}</span> '
             f'<span class="loc">{_e(f["file"])}:{f["line"]}:{f["column"]}</span>'
             f' &middot; <code>{_e(f["label"])}</code></div>',
             f"<p>{_e(f['expected_finding'])} <b>Fix:</b> {_e(f['recommended_action'])}</p>"]
    if ref := f.get("reference"):  # an API check's finding: the class-reference entry, the rule and the receiver
        url = _safe_url(ref.get("url"))
        name = f"<code>{_e(ref.get('api'))}</code>"
        link = f'<a href="{_e(url)}" rel="noreferrer noopener">{name}</a>' if url else name
        parts.append(f'<p>Reference: {link} <span class="muted">(rule {_e(ref.get("rule"))}; '
                     f'receiver {_e(ref.get("receiver"))})</span></p>')
    for m in f["mappings"]:
        parts.append(f'<p>{_change_word(m)}: <code>{_e(m["source_api"])}</code> &rarr; <code>{_e(m["target_api"])}</code> '
                     f'<span class="muted">({_e(m["change_type"])}; <code>{_e(m["id"])}</code>)</span></p>')
    parts.append('<pre class="code">')
    for n, text, hit in _context(f, chunk):
        if hit:
            a, b = f["column"] - 1, f["end_column"] - 1
            body = _e(text[:a]) + "<mark>" + _e(text[a:b]) + "</mark>" + _e(text[b:])
            parts.append(f'<span class="hit"><span class="ln">{n}</span>{body}</span>')
        else:
            parts.append(f'<span class="ln">{n}</span>{_e(text)}')
    parts.append("</pre>")
    parts.append(f'<p class="muted">Evidence: <code>{_e(f["evidence"]["literal"])}</code> ({_e(f["evidence"]["kind"])})</p>')
    if f["docs_chunk_ids"]:
        parts.append('<ul class="docs">')
        for d in f["docs_chunk_ids"]:
            info = links.get(d) or {}
            url = _safe_url(info.get("url"))
            label = _e(d) + (f' <span class="muted">{_e(info.get("heading"))}</span>' if info.get("heading") else "")
            parts.append(f'<li><a href="{_e(url)}" rel="noreferrer noopener">{label}</a></li>' if url else f"<li>{label}</li>")
        parts.append("</ul>")
    parts.append("</article>")
    return "\n".join(parts)


# -- Markdown ---------------------------------------------------------------------------------------
def _cell(value: Any) -> str:
    return str("" if value is None else value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    """An inline code span that survives backticks in the value."""
    text = _cell(value)
    ticks = "`" * (max((len(r) for r in _backtick_runs(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str) -> str:
    longest = max((len(run) for run in text.split("\n") for run in _backtick_runs(run)), default=0)
    return "`" * max(3, longest + 1)


def _backtick_runs(line: str) -> list[str]:
    runs, cur = [], ""
    for ch in line:
        if ch == "`":
            cur += ch
        else:
            if cur:
                runs.append(cur)
            cur = ""
    if cur:
        runs.append(cur)
    return runs


def render_md(s: dict, files: list[dict], findings: list[dict], links: dict[str, dict]) -> str:
    chunks = _chunk_index(files)
    out = _md_summary(s) + _md_counts(s) + _md_files(files)
    out += ["", f"## Findings ({len(findings)})", ""]
    if not findings:
        out += ["No findings.", ""]
    current = None
    for f in findings:
        if f["file"] != current:
            current = f["file"]
            out += [f"### {_code(current)}", ""]
        out += _md_finding(f, chunks.get((f["file"], f["chunk"]["index"])), links)
    return "\n".join(out) + "\n"


def _md_summary(s: dict) -> list[str]:
    out = [f"# godot-rag scan: {_code(s['root'])}", "", f"Started {s['started']}.", "", "## Summary", "",
           "| | |", "|---|---|",
           f"| Godot version | {_cell(_version_line(s))} |",
           f"| Strategy | {s['strategy']} (no LLM) |",
           f"| Files | {s['files_scanned']} scanned of {s['files_selected']} selected ({s['files_found']} found)"
           + (f"; limited to files changed since {_cell(s['changed_since'])}" if s.get("changed_since") else "") + " |",
           f"| Chunks | {s['chunks']} |",
           f"| Findings | {s['findings']['total']} ({s['findings']['migration']} migration) |",
           f"| Time | {_cell(_elapsed(s))} |",
           f"| Database | {_cell(s['database'])} |", ""]
    if s.get("no_project_godot"):
        out += ["> No `project.godot` found for some scripts: their Godot version is **auto** "
                "(decided per chunk by its own markers).", ""]
    for u in s["unreadable"]:
        out += [f"> Skipped {_code(u['file'])}: {_cell(u['error'])}", ""]
    for fb in s["line_fallback"]:
        out += [f"> {_code(fb)} does not parse: its chunks were cut by lines.", ""]
    for ce in s["chunk_errors"]:
        out += [f"> Chunk `{_cell(ce['file'])}:{ce['start_line']}-{ce['end_line']}` was not retrieved: {_cell(ce['error'])}", ""]
    return out


def _md_counts(s: dict) -> list[str]:
    out: list[str] = []
    if len(s["projects"]) > 1:
        out += ["### Projects", "", "| folder | name | Godot | version from | files | chunks |", "|---|---|---|---|---|---|"]
        out += [f"| {_code(d)} | {_cell(n)} | {v} | {_cell(src)} | {f} | {c} |" for d, n, v, src, f, c in _project_rows(s)]
        out.append("")
    out += ["### Findings by severity", "", "| " + " | ".join(s["findings"]["by_severity"]) + " |",
            "|" + "---|" * len(s["findings"]["by_severity"]),
            "| " + " | ".join(str(n) for n in s["findings"]["by_severity"].values()) + " |", "",
            "### Findings by label", "", "| label | severity | kind | count |", "|---|---|---|---|"]
    for lab in s["findings"]["by_label"]:
        out.append(f"| {_code(lab['label'])} | {lab['severity']} | "
                   f"{'migration' if lab['migration'] else 'review'} | {lab['count']} |")
    return out


def _md_files(files: list[dict]) -> list[str]:
    out = ["", "## Files", "", "| file | Godot | chunks | " + " | ".join(reversed(SEVERITIES)) + " | notes |",
           "|---|---|---|" + "---|" * len(SEVERITIES) + "---|"]
    for e in files:
        notes = _file_notes(e)
        counts = e.get("findings") or {}
        out.append(f"| {_code(e['file'])} | {e['godot_version']} | {len(e['chunks'])} | "
                   + " | ".join(str(counts.get(sv, 0) or "") for sv in reversed(SEVERITIES)) + f" | {_cell('; '.join(notes))} |")
    return out


def _md_finding(f: dict, chunk: dict | None, links: dict[str, dict]) -> list[str]:
    """One finding: where, what, the fix, the mapping, the code with the finding marked, the docs."""
    out: list[str] = []
    out += [f"**{f['severity']}** `{_cell(f['file'])}:{f['line']}:{f['column']}` {_code(f['label'])}", "",
            f"{f['expected_finding']} **Fix:** {f['recommended_action']}", ""]
    if ref := f.get("reference"):  # an API check's finding: the class-reference entry, the rule and the receiver
        url = _safe_url(ref.get("url"))
        name = _code(ref.get("api"))
        out += [f"Reference: {f'[{name}]({url})' if url else name} (rule {_code(ref.get('rule'))}; "
                f"receiver {_code(ref.get('receiver'))})", ""]
    for m in f["mappings"]:
        out += [f"{_change_word(m)}: {_code(m['source_api'])} -> {_code(m['target_api'])} "
                f"({m['change_type']}; {_code(m['id'])})", ""]
    ctx = _context(f, chunk)
    width = len(str(ctx[-1][0])) if ctx else 1
    body = []
    for n, text, hit in ctx:
        body.append(f"{'>' if hit else ' '}{str(n).rjust(width)} | {text}")
        if hit:
            a, b = f["column"] - 1, f["end_column"] - 1
            lead = "".join(ch if ch == "\t" else " " for ch in text[:a])
            body.append(" " * (width + 4) + lead + "^" * max(1, b - a))
    block = "\n".join(body)
    fence = _fence(block)
    out += [fence + "gdscript", block, fence, "",
            f"Evidence: {_code(f['evidence']['literal'])} ({f['evidence']['kind']})", ""]
    for d in f["docs_chunk_ids"]:
        info = links.get(d) or {}
        url = _safe_url(info.get("url"))
        text = f"{_code(d)}" + (f" {_cell(info.get('heading'))}" if info.get("heading") else "")
        out.append(f"- [{text}]({url})" if url else f"- {text}")
    out.append("")
    return out

