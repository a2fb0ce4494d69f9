"""The few lines `godot-rag scan` prints on stdout when it is done."""
from __future__ import annotations


def summary_text(s: dict) -> str:
    f = s["findings"]
    versions: dict[str, int] = {}
    for p in s["projects"]:
        if p["files"]:
            versions[p["godot_version_used"]] = versions.get(p["godot_version_used"], 0) + 1
    lines = [
        f"scanned {s['root']}",
        f"  projects: {len(s['projects'])} (" + ", ".join(f"Godot {v}: {n}" for v, n in sorted(versions.items())) + ")"
        + ("; no project.godot: auto" if s.get("no_project_godot") else ""),
        f"  files: {s['files_scanned']} scanned"
        + (f", {len(s['unreadable'])} skipped (unreadable)" if s["unreadable"] else "")
        + (f", {len(s['line_fallback'])} cut by lines (do not parse)" if s["line_fallback"] else "")
        + (f"; changed since {s['changed_since']}" if s.get("changed_since") else ""),
        f"  chunks: {s['chunks']} ({s['computed']} computed, {s['cached']} from the cache"
        + (f", {s['chunks_per_second']} chunks/s on {s['workers']} worker(s)" if s.get("chunks_per_second") else "") + ")",
        f"  findings: {f['total']} (" + ", ".join(f"{k} {v}" for k, v in f["by_severity"].items())
        + f"; migration {f['migration']})"
        + (f"; {f['suppressed']} suppressed inline" if f.get("suppressed") else "")
        + (f"; {f['baselined']} in the baseline, not shown" if f.get("baselined") else ""),
    ]
    for u in s["unreadable"]:
        lines.append(f"  skipped {u['file']}: {u['error']}")
    for ce in s["chunk_errors"][:5]:
        lines.append(f"  not retrieved {ce['file']}:{ce['start_line']}-{ce['end_line']}: {ce['error']}")
    lines.append(f"  time: {s['seconds']} s")
    lines.append(f"  out: {s['out']}")
    if s.get("failed"):
        lines.append(f"  FAIL: findings at severity {s['fail_on']} or above")
    return "\n".join(lines)
