"""A readable trace table for the terminal, from the shared result model."""
from __future__ import annotations

from typing import Any

from .retrieve.engine.types import Candidate, RetrieveResult


def _label(c: Candidate) -> str:
    p = c.payload
    if c.table == "docs_chunks":
        return f"{c.id}  [{' / '.join(p.get('section_path') or [])}]"
    if c.table == "api_mapping":
        return f"{p['source_api']} -> {p['target_api']} ({p['change_type']})"
    return f"{p['label']} ({p['severity']})"


def _stage_summary(c: Candidate, stages: list[str]) -> str:
    """One compact cell per stage the candidate went through, in the strategy's order."""
    cells = {
        "tsquery": lambda i: f"ts_rank_cd={i.ts_rank_cd}",
        "bm25": lambda i: f"bm25={i.score}#{i.rank}",
        "embedding": lambda i: f"cos={i.cosine}#{i.rank}",
        "union": lambda i: f"src={i.source}",
        "fuse": lambda i: f"fused={i.score}#{i.rank}",
        "codematch": lambda i: f"clone={i.ratio}#{i.rank}",
        "merge": lambda i: f"merged#{i.rank}",
        "rerank": lambda i: f"rerank={i.model_score} move={i.rank_change:+d}",
        "api": lambda i: f"api+{i.weight}",
        "validate": lambda i: f"{i.verdict} conf={i.confidence}",
        "check": lambda i: f"check: {', '.join(f'{f.kind}@{f.line}' for f in i.findings)}",
        "judge": lambda i: f"judge({i.question})={i.answer} p={i.p_yes} {i.mode}"
                           + (f" thr={i.threshold}" if i.threshold is not None else ""),
        "rank": lambda i: f"ranker P={i.p} {'>=' if i.accepted else '<'} {i.threshold}"
                          + (f" (kept out by {i.kept_out_by})" if i.kept_out_by else ""),
        "score": lambda i: f"final={i.score}",
        "cut": lambda i: f"rank {i.rank}" if i.kept else f"cut at k={i.k} (#{i.position})",
    }
    parts = [cells[s](c.info(s)) for s in stages if s in cells and c.info(s) is not None]
    return "  ".join(parts)


def render_stages(result: RetrieveResult) -> list[str]:
    """The strategy's stages in order, each with its time and summary."""
    lines = [f"stages: {' -> '.join(result.trace.stage_list)}"]
    for log in result.trace.stages:
        info = ", ".join(f"{k}={v}" for k, v in log.info.items() if k not in ("top", "tokens") or log.stage != "tokenize")
        lines.append(f"  {log.stage:<14} {log.ms:9.1f} ms  {info[:160]}")
    return lines


def _tsquery_lines(result: RetrieveResult) -> list[str]:
    """Strategy A's tsquery and row counts, with why a table got no hit."""
    lines = [f"tsquery: {(result.trace.tsquery or '')[:300]}"]
    for table, info in (result.trace.tables or {}).items():
        lines.append(f"  {table}: {info['row_count']} rows")
        diag = info.get("zero_hit_diagnosis")
        if diag:
            lines.append(f"    zero hits; best single row {diag['best_row']} has {len(diag['best_subset'])}"
                         f"/{len(diag['token_rows'])} tokens; missing: {', '.join(diag['missing_from_best'][:12])}")
    return lines


def _resolve_lines(result: RetrieveResult, res: dict[str, Any], explain: bool) -> list[str]:
    """The resolve stage's API uses, each with the class-reference record it led to."""
    lines = [f"resolve: own class {res.get('own_class') or '?'} ({res.get('own_class_from')}); "
             f"{len(res.get('uses', []))} use(s), {len(res.get('unresolved', []))} unresolved"]
    where: dict[str, str] = {}
    for c in result.results + result.rejected:
        for u in (c.info("api").uses if c.info("api") else []):
            where.setdefault(f"{u.api}@{u.line}", c.id)
    for u in res.get("uses", [])[: 40 if explain else 12]:
        rid = where.get(f"{u['api']}@{u['line']}", "no class-reference record")
        lines.append(f"  line {u['line']}: {u['text']} -> {u['api']} -> {rid}  [{u['via']}]")
    if explain:
        for u in res.get("unresolved", [])[:20]:
            lines.append(f"  line {u['line']}: {u['text']} unresolved: {u['reason']}")
    return lines


def _version_line(ver: dict[str, Any]) -> str:
    return (f"version: hint {ver['hint']}, chunk leans {ver['lean']}"
            + (f"; Godot 3: {'; '.join(ver['godot3_markers'][:3])}" if ver["godot3_markers"] else "")
            + (f"; Godot 4: {'; '.join(ver['godot4_markers'][:3])}" if ver["godot4_markers"] else ""))


def _explain_lines(c: Candidate, stage_list: list[str]) -> list[str]:
    """A candidate's stage cells, a mapping's occurrences and the matched terms, under --explain."""
    lines = [f"       {_stage_summary(c, stage_list)}"]
    if c.reason:
        lines.append(f"       {_decided_by(c)}{c.reason[:200]}")
    if c.table == "api_mapping" and c.info("validate") is not None:
        for o in (c.info("validate").occurrences or [])[:4]:
            lines.append(f"         {o.status:<13} {o.why[:160]}")
    if c.info("explain") is not None:
        for term in c.info("explain").matched_terms[:10]:
            lines.append(f"         {term['term']:<28} df={term['df']:<6} tf={term['tf']:<3} idf={term['idf']:<7} "
                         f"contribution={term['contribution']}")
    return lines


def _candidate_lines(c: Candidate, stage_list: list[str], explain: bool) -> list[str]:
    verdict = {"accept": "ACCEPT", "reject": "REJECT"}.get(c.verdict or "", "")
    group = f" [{c.group}]" if c.group else ""
    lines = [f"{c.rank:>3}. {c.score:9.4f} {verdict:6} {c.source or '':9} {_label(c)}{group}"]
    if explain:
        return lines + _explain_lines(c, stage_list)
    if c.reason:
        lines.append(f"       {_decided_by(c)}{c.reason[:200]}")
    return lines

def _decided_by(c: Candidate) -> str:
    """`[rule] `: the rule that decided the verdict (F), before its reason."""
    return f"[{c.decision.rule}] " if c.decision is not None else ""


def _left_out_lines(result: RetrieveResult) -> list[str]:
    """The rejected candidates, and the accepted ones cut at k."""
    lines = []
    if result.rejected:
        lines.append(f"\n== rejected: {len(result.rejected)}")
        for c in result.rejected:
            lines.append(f"     {c.table}: {_label(c)} -- {_decided_by(c)}{c.reason}")
    if result.cut:
        lines.append(f"\n== accepted, then cut at k: {len(result.cut)}")
        for c in result.cut:
            lines.append(f"     {c.table}: {_label(c)} -- place {c.info('cut').position} of its group, k={c.info('cut').k}")
    return lines


def render_table(result: RetrieveResult, explain: bool = False) -> str:
    lines = [f"strategy {result.strategy}  ({result.trace.total_ms} ms)"]
    if explain:
        lines += render_stages(result)
    if result.strategy == "A":
        lines += _tsquery_lines(result)
    if result.trace.resolve is not None:
        lines += _resolve_lines(result, result.trace.resolve, explain)
    if result.trace.version is not None:
        lines.append(_version_line(result.trace.version))
    for table in [t for t in result.k if t != "api_reference"]:
        rows = result.by_table(table)
        lines.append(f"\n== {table}: {len(rows)} result(s)")
        for c in rows:
            lines += _candidate_lines(c, result.trace.stage_list, explain)
    lines += _left_out_lines(result)
    return "\n".join(lines)
