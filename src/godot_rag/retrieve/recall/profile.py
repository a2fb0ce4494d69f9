"""Strategy E: Qwen writes a search profile of the chunk, then BM25 searches its literals and
the embedding searches its intent. Every literal and migration signal is checked against the
chunk; those not found are logged as hallucinated and dropped (unless the config keeps them)."""
from __future__ import annotations

import contextlib
import json
import re
from typing import Any, NamedTuple, Protocol

from ...gdscript.lexicon import IDENT_RE
from ..engine.stage import Stage
from ..engine.state import Fallback, Pool, QueryState
from .resources import RecallResources

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


def _first_json_object(text: str) -> Any:
    """The first balanced `{...}` of the text that parses as JSON, or None."""
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
                    with contextlib.suppress(json.JSONDecodeError):
                        obj = json.loads(text[start:i + 1])
                    break
        if obj is None:
            start = text.find("{", start + 1)
    return obj


def _strings(value: Any) -> list[str]:
    """The strings of a JSON list ([] for anything else)."""
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def parse_profile(text: str) -> tuple[dict, list[str]]:
    """Robust parse: the first JSON object in the text, with missing keys filled in. Returns (profile, problems)."""
    problems = []
    obj = _first_json_object(text)
    if not isinstance(obj, dict):
        problems.append("no JSON object in the answer")
        obj = {}
    profile: dict[str, Any] = {  # str search_intent, the rest lists of str
        "search_intent": obj.get("search_intent") if isinstance(obj.get("search_intent"), str) else "",
        "important_literals": _strings(obj.get("important_literals", [])),
        "likely_doc_topics": _strings(obj.get("likely_doc_topics", [])),
        "migration_signals": _strings(obj.get("migration_signals", [])),
    }
    for key in PROFILE_SCHEMA["required"]:
        if key not in obj:
            problems.append(f"missing key {key}")
    # Other spellings a small model uses for the same idea are kept visible, not silently merged.
    for key in obj:
        if key not in profile:
            problems.append(f"unexpected key {key}")
            if isinstance(obj[key], list):
                profile["migration_signals" if "migration" in key else "important_literals"] += _strings(obj[key])
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
    def used_of(key: str) -> list[str]:
        return checks[key]["found"] + (checks[key]["hallucinated"] if keep_hallucinated else [])

    used = {"literals": used_of("important_literals"), "migration_signals": used_of("migration_signals")}
    return {"checks": checks, "used": used, "kept_hallucinated": keep_hallucinated}


def profile_queries(profile: dict, checked: dict) -> tuple[str, str]:
    """(BM25 text, embedding text) built from the checked profile."""
    lexical = " ".join(checked["used"]["literals"] + checked["used"]["migration_signals"])
    dense = (profile["search_intent"] + ". " + "; ".join(profile["likely_doc_topics"])).strip(". ")
    return lexical, dense


class ChatLLM(Protocol):
    """What the profile stage asks of an LLM (models.llm's): a chat turn, its reply as JSON under a schema."""
    def chat(self, system: str, user: str, *, max_tokens: int = ...,
             json_schema: dict[str, Any] | None = None) -> dict[str, Any]: ...


def request_profile(llm: ChatLLM, chunk: str) -> tuple[dict, dict]:
    res = llm.chat(SYSTEM, "SOURCE_CODE:\n" + chunk[:4000], max_tokens=300, json_schema=PROFILE_SCHEMA)
    profile, problems = parse_profile(res["text"])
    return profile, {"raw_answer": res["text"], "parse_problems": problems, "model": getattr(llm, "name", "llm")}


class Profiled(NamedTuple):
    texts: list[str]  # BM25 reads the profile's literals
    dense_texts: list[str]  # the embedding reads its intent
    source_prefix: str  # the union labels the sources `profile:...`


def run_profile(q: QueryState[RecallResources]) -> Profiled:
    """Qwen writes the search profile; its literals must occur in the chunk. BM25 then reads the
    literals and the embedding reads the intent, instead of the raw chunk."""
    from ...models.llm import LLMError

    llm = q.resources.llm
    if llm is None:
        if q.cfg.llm_optional:
            raise Fallback("D", "no LLM configured; E fell back to the raw chunk (strategy D)")
        raise LLMError("strategy E needs an LLM: start the server or CLI with --llm-bundled 0.5b, --llm-gguf FILE "
                       "or --llm-url URL (or set llm_optional to fall back to D)")
    try:
        q.ensure_loaded("llm", llm, model=getattr(llm, "name", "llm"))
        profile, meta = request_profile(llm, q.chunk)
    except LLMError as e:
        if not q.cfg.llm_optional:
            raise
        raise Fallback("D", f"LLM unavailable ({e}); E fell back to the raw chunk (strategy D)") from None
    q.note(**meta)
    checked = check_profile(profile, q.chunk, q.cfg.profile_keep_hallucinated)
    lexical, dense = profile_queries(profile, checked)
    q.trace.profile, q.trace.profile_checks = profile, checked
    q.trace.profile_queries = {"bm25": lexical, "embedding": dense}
    return Profiled([lexical or dense or q.chunk], [dense or lexical or q.chunk], "profile:")


def run_profile_diff(q: QueryState[RecallResources], results: Pool) -> None:
    """What the profile changed against D on the raw chunk (D's own stages, run again)."""
    raw = q.resources.retrieve(q.chunk, "D", q.cfg, explain=False)
    raw_ids = {(c.table, c.id) for c in raw.results}
    new_ids = {(t, c.id) for t, lists in results.items() for c in lists[0]}
    q.trace.profile_diff = {"appeared": sorted(f"{t}:{i}" for t, i in new_ids - raw_ids),
                            "vanished": sorted(f"{t}:{i}" for t, i in raw_ids - new_ids)}
    q.note(appeared=len(q.trace.profile_diff["appeared"]), vanished=len(q.trace.profile_diff["vanished"]))


PROFILE = Stage("profile", run_profile,
                "Qwen search profile: intent, literals (checked against the chunk), doc topics, migration signals")
PROFILE_DIFF = Stage("profile_diff", run_profile_diff, "records that appeared or vanished against D on the raw chunk")
