"""Strategy E: Qwen writes a search profile of the chunk, then BM25 searches its literals and
the embedding searches its intent. Every literal and migration signal is checked against the
chunk; those not found are logged as hallucinated and dropped (unless the config keeps them)."""
from __future__ import annotations

import json
import re

from .fuse import fuse_lists
from .types import Candidate

PROFILE_SCHEMA = {
    "type": "object",
    "properties": {
        "search_intent": {"type": "string"},
        "important_literals": {"type": "array", "items": {"type": "string"}},
        "likely_doc_topics": {"type": "array", "items": {"type": "string"}},
        "migration_signals": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["search_intent", "important_literals", "likely_doc_topics", "migration_signals"],
}
SYSTEM = ("You write search profiles for Godot documentation retrieval. Reply with one JSON object with the keys "
          "search_intent, important_literals, likely_doc_topics, migration_signals. important_literals must be "
          "copied exactly from the code. migration_signals lists Godot 3 API names that the code itself uses; "
          "leave it empty for Godot 4 code.")
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_profile(text: str) -> tuple[dict, list[str]]:
    """Robust parse: the first JSON object in the text, with missing keys filled in. Returns (profile, problems)."""
    problems = []
    start = text.find("{")
    obj = None
    while start >= 0 and obj is None:
        depth = 0
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    try:
                        obj = json.loads(text[start:i + 1])
                    except json.JSONDecodeError:
                        pass
                    break
        if obj is None:
            start = text.find("{", start + 1)
    if not isinstance(obj, dict):
        problems.append("no JSON object in the answer")
        obj = {}
    profile = {
        "search_intent": obj.get("search_intent") if isinstance(obj.get("search_intent"), str) else "",
        "important_literals": [x for x in obj.get("important_literals", []) if isinstance(x, str)] if isinstance(obj.get("important_literals"), list) else [],
        "likely_doc_topics": [x for x in obj.get("likely_doc_topics", []) if isinstance(x, str)] if isinstance(obj.get("likely_doc_topics"), list) else [],
        "migration_signals": [x for x in obj.get("migration_signals", []) if isinstance(x, str)] if isinstance(obj.get("migration_signals"), list) else [],
    }
    for key in PROFILE_SCHEMA["required"]:
        if key not in obj:
            problems.append(f"missing key {key}")
    # Other spellings a small model uses for the same idea are kept visible, not silently merged.
    for key in obj:
        if key not in profile:
            problems.append(f"unexpected key {key}")
            if isinstance(obj[key], list):
                profile["migration_signals" if "migration" in key else "important_literals"] += [x for x in obj[key] if isinstance(x, str)]
            elif isinstance(obj[key], str) and "migration" in key:
                profile["migration_signals"].append(obj[key])
    return profile, problems


def occurs(literal: str, chunk: str) -> bool:
    """A literal is in the chunk when every identifier in it occurs there at identifier boundaries."""
    idents = IDENT_RE.findall(literal)
    if not idents:
        return literal.strip() != "" and literal in chunk
    return all(re.search(r"(?<![A-Za-z0-9_])" + re.escape(i) + r"(?![A-Za-z0-9_])", chunk) for i in idents)


def check_profile(profile: dict, chunk: str, keep_hallucinated: bool = False) -> dict:
    checks = {}
    for key in ("important_literals", "migration_signals"):
        found = [x for x in profile[key] if occurs(x, chunk)]
        missing = [x for x in profile[key] if not occurs(x, chunk)]
        checks[key] = {"found": found, "hallucinated": missing}
    used = {
        "literals": checks["important_literals"]["found"] + (checks["important_literals"]["hallucinated"] if keep_hallucinated else []),
        "migration_signals": checks["migration_signals"]["found"] + (checks["migration_signals"]["hallucinated"] if keep_hallucinated else []),
    }
    return {"checks": checks, "used": used, "kept_hallucinated": keep_hallucinated}


def profile_queries(profile: dict, checked: dict) -> tuple[str, str]:
    """(BM25 text, embedding text) built from the checked profile."""
    lexical = " ".join(checked["used"]["literals"] + checked["used"]["migration_signals"])
    dense = (profile["search_intent"] + ". " + "; ".join(profile["likely_doc_topics"])).strip(". ")
    return lexical, dense


def request_profile(llm, chunk: str) -> tuple[dict, dict]:
    res = llm.chat(SYSTEM, "SOURCE_CODE:\n" + chunk[:4000], max_tokens=300, json_schema=PROFILE_SCHEMA)
    profile, problems = parse_profile(res["text"])
    return profile, {"raw_answer": res["text"], "parse_problems": problems, "model": getattr(llm, "name", "llm")}


def run_profile_strategy(retriever, chunk, cfg, timer, trace, explain):
    from ..models.llm import LLMError

    if retriever.llm is None:
        from .config import ConfigError

        raise ConfigError("strategy E needs an LLM: --llm-gguf, --llm-bundled, --llm-url")
    try:
        with timer.stage("profile") as info:
            profile, meta = request_profile(retriever.llm, chunk)
            info.update(meta)
    except LLMError as e:
        if not cfg.llm_optional:
            raise
        trace["llm_fallback"] = f"LLM unavailable ({e}); E fell back to the raw chunk (strategy D)"
        return retriever._hybrid(chunk, "D", cfg, timer, trace, explain)
    checked = check_profile(profile, chunk, cfg.profile_keep_hallucinated)
    trace["profile"] = profile
    trace["profile_checks"] = checked
    lexical, dense = profile_queries(profile, checked)
    trace["profile_queries"] = {"bm25": lexical, "embedding": dense}
    lexical_lists, _ = retriever.candidate_lists([lexical or dense or chunk], "B", cfg, timer, explain, cfg.tables)
    dense_lists, _ = retriever.candidate_lists([dense or lexical or chunk], "C", cfg, timer, explain, cfg.tables)
    results: list[Candidate] = []
    weights = {"bm25": cfg.weight_bm25, "embedding": cfg.weight_embedding}
    with timer.stage("fuse:profile"):
        per_table = {t: fuse_lists({"bm25": lexical_lists[t][0]["bm25"], "embedding": dense_lists[t][0]["embedding"]},
                                   weights, cfg.fusion, cfg.rrf_k) for t in cfg.tables}
    for t in cfg.tables:
        for c in per_table[t][: cfg.k]:
            c.source = f"profile:{c.source}"
            results.append(c)
    # What the profile changed against the raw chunk.
    raw_trace: dict = {}
    raw, _ = retriever._hybrid(chunk, "D", cfg, type(timer)(), raw_trace, False)
    raw_ids = {(c.table, c.id) for c in raw}
    new_ids = {(c.table, c.id) for c in results}
    trace["profile_diff"] = {"appeared": sorted(f"{t}:{i}" for t, i in new_ids - raw_ids),
                             "vanished": sorted(f"{t}:{i}" for t, i in raw_ids - new_ids)}
    return results, []
