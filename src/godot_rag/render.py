"""A readable trace table for the terminal, from the shared result model."""
from __future__ import annotations

from .retrieve.types import Candidate, RetrieveResult


def _label(c: Candidate) -> str:
    p = c.payload
    if c.table == "docs_chunks":
        return f"{c.id}  [{' / '.join(p.get('section_path') or [])}]"
    if c.table == "api_mapping":
        return f"{p['source_api']} -> {p['target_api']} ({p['change_type']})"
    return f"{p['label']} ({p['severity']})"


def _stage_summary(c: Candidate) -> str:
    parts = []
    t = c.trace
    if "tsquery" in t:
        parts.append(f"ts_rank_cd={t['tsquery']['ts_rank_cd']}")
    if "bm25" in t:
        terms = t["bm25"].get("matched_terms")
        parts.append(f"bm25={t['bm25'].get('score')}#{t['bm25'].get('rank')}")
        if terms:
            parts.append("terms=" + ",".join(x["term"] for x in terms[:6]))
    if "embedding" in t:
        parts.append(f"cos={t['embedding']['cosine']}#{t['embedding']['rank']}")
    if "fuse" in t:
        parts.append(f"fused={t['fuse']['score']} src={t['fuse']['source']}")
    if "rerank" in t:
        r = t["rerank"]
        parts.append(f"rerank={r['model_score']} move={r['rank_change']:+d}")
    if "validate" in t:
        parts.append(f"conf={t['validate']['confidence']}")
    return "  ".join(parts)


def render_table(result: RetrieveResult, explain: bool = False) -> str:
    lines = [f"strategy {result.strategy}  ({result.trace.get('total_ms')} ms)"]
    if result.strategy == "A":
        lines.append(f"tsquery: {result.trace.get('tsquery', '')[:300]}")
        for table, info in result.trace.get("tables", {}).items():
            lines.append(f"  {table}: {info['row_count']} rows")
            diag = info.get("zero_hit_diagnosis")
            if diag:
                lines.append(f"    zero hits; best single row {diag['best_row']} has {len(diag['best_subset'])}"
                             f"/{len(diag['token_rows'])} tokens; missing: {', '.join(diag['missing_from_best'][:12])}")
    res = result.trace.get("resolve")
    if res is not None:
        lines.append(f"resolve: own class {res.get('own_class') or '?'} ({res.get('own_class_from')}); "
                     f"{len(res.get('uses', []))} use(s), {len(res.get('unresolved', []))} unresolved")
        where: dict[str, str] = {}
        for c in result.results + result.rejected:
            for u in (c.trace.get("api") or {}).get("uses", []):
                where.setdefault(f"{u['api']}@{u['line']}", c.id)
        for u in res.get("uses", [])[: 40 if explain else 12]:
            rid = where.get(f"{u['api']}@{u['line']}", "no class-reference record")
            lines.append(f"  line {u['line']}: {u['text']} -> {u['api']} -> {rid}  [{u['via']}]")
        if explain:
            for u in res.get("unresolved", [])[:20]:
                lines.append(f"  line {u['line']}: {u['text']} unresolved: {u['reason']}")
    ver = result.trace.get("version")
    if ver is not None:
        lines.append(f"version: hint {ver['hint']}, chunk leans {ver['lean']}"
                     + (f"; Godot 3: {'; '.join(ver['godot3_markers'][:3])}" if ver["godot3_markers"] else "")
                     + (f"; Godot 4: {'; '.join(ver['godot4_markers'][:3])}" if ver["godot4_markers"] else ""))
    for table in [t for t in result.k if t != "api_reference"]:
        rows = result.by_table(table)
        lines.append(f"\n== {table}: {len(rows)} result(s)")
        for c in rows:
            verdict = {"accept": "ACCEPT", "reject": "REJECT"}.get(c.verdict or "", "")
            group = f" [{c.group}]" if c.group else ""
            lines.append(f"{c.rank:>3}. {c.score:9.4f} {verdict:6} {c.source or '':9} {_label(c)}{group}")
            if explain:
                lines.append(f"       {_stage_summary(c)}")
            if c.reason:
                lines.append(f"       {c.reason[:200]}")
            if explain and c.table == "api_mapping":
                for o in (c.trace.get("validate") or {}).get("occurrences", [])[:4]:
                    lines.append(f"         {o['status']:<13} {o['why'][:160]}")
            if explain and "bm25" in c.trace and c.trace["bm25"].get("matched_terms"):
                for term in c.trace["bm25"]["matched_terms"][:10]:
                    lines.append(f"         {term['term']:<28} df={term['df']:<6} tf={term['tf']:<3} idf={term['idf']:<7} "
                                 f"contribution={term['contribution']}")
    if result.rejected:
        lines.append(f"\n== rejected: {len(result.rejected)}")
        for c in result.rejected:
            lines.append(f"     {c.table}: {_label(c)} -- {c.reason}")
    return "\n".join(lines)
