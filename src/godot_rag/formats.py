"""The JSON renderings of one retrieve result, shared by `retrieve`, `retrieve --batch`, the HTTP API
and the MCP server:

- `records`: one object per accepted record, the user's record as it is stored, with the chunk it
  answers, its score and a one-line reason: `{"chunk", "table", "id", "payload", "score", "reason"}`;
- `result`: the result object, where rejected and cut records are referenced by id (no payload);
- `full`: the result object with everything;
- `prompt`: the accepted evidence as text for a model's prompt, within a token budget
  (evidence_prompt.py), as `{"chunk", "prompt", "tokens"}`.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .records import DERIVED_METADATA

if TYPE_CHECKING:  # the CLI reads FORMATS without loading the result model
    from .retrieve.engine.types import Candidate, RetrieveResult

FORMATS = ("records", "result", "full", "prompt")
# Rejected and cut records keep their id, scores, verdict, reason and trace; the payload is the stored record.
COMPACT = (",", ":")  # `records` lines are read by programs, at corpus scale
_NO_PAYLOAD = {"rejected": {"__all__": {"payload"}}, "cut": {"__all__": {"payload"}}}


class FormatError(ValueError):
    pass


def check_format(name: str) -> str:
    if name not in FORMATS:
        raise FormatError(f"unknown format {name!r}; valid: {', '.join(FORMATS)}")
    return name


def check_chunk_id(value: Any) -> Any:
    """A chunk's `id` as the user gave it (echoed on every output line): a string or an integer."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if not isinstance(value, str):
        raise ValueError("must be a string or an integer")
    if len(value) > 1000:
        raise ValueError("is over 1000 characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid text (it holds a lone surrogate)") from None
    return value


def one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


def reason_of(c: Candidate) -> str:
    """The validator's reason (F) or, without a validator, how the record was found."""
    if c.reason:
        return one_line(c.reason)
    return f"found by {c.source or 'the ranking'}, rank {c.rank}, score {round(c.score, 4)}"


def evidence_payload(payload: dict) -> dict:
    """The stored record without the metadata ingest derives for matching (`records.DERIVED_METADATA`)."""
    meta = payload.get("metadata")
    if not isinstance(meta, dict) or not any(f in meta for f in DERIVED_METADATA):
        return payload
    return payload | {"metadata": {k: v for k, v in meta.items() if k not in DERIVED_METADATA}}


def record_rows(result: RetrieveResult, chunk: Any) -> list[dict]:
    """The accepted records, in the result's order (by table, then rank)."""
    rows = []
    for c in result.results:
        row = {"chunk": chunk, "table": c.table, "id": c.id, "payload": evidence_payload(c.payload),
               "score": round(c.score, 6),
               "reason": reason_of(c)}
        if c.group:
            row["group"] = c.group
        if c.decision is not None:  # F: the rule that decided the verdict
            row["rule"] = c.decision.rule
        rows.append(row)
    return rows


def prompt_object(result: RetrieveResult, chunk: Any, budget: int | None = None) -> dict:
    from .evidence_prompt import DEFAULT_BUDGET_TOKENS, estimate_tokens, render_prompt

    text = render_prompt(result, DEFAULT_BUDGET_TOKENS if budget is None else budget)
    return {"chunk": chunk, "prompt": text, "tokens": estimate_tokens(text)}


def result_dict(result: RetrieveResult, fmt: str = "result") -> dict:
    return result.model_dump(mode="json", exclude=_NO_PAYLOAD if fmt == "result" else None)


def json_object(result: RetrieveResult, fmt: str, chunk_id: Any = None, prompt_budget: int | None = None) -> dict:
    """One JSON object (an HTTP answer): `{"records": [...]}`, the prompt text, or the result with the chunk's
    `id` when given."""
    if fmt == "records":
        return {"records": record_rows(result, chunk_id)}
    if fmt == "prompt":
        return prompt_object(result, chunk_id, prompt_budget)
    return ({"id": chunk_id} if chunk_id is not None else {}) | result_dict(result, fmt)


def result_json(result: RetrieveResult, fmt: str = "result", indent: int | None = None) -> str:
    return result.model_dump_json(indent=indent, exclude=_NO_PAYLOAD if fmt == "result" else None)


def json_lines(result: RetrieveResult, fmt: str, chunk: Any = None, extra: dict | None = None,
               prompt_budget: int | None = None) -> str:
    """The result in `fmt` as JSON lines, each ending in a newline ("" for `records` without a record).
    `extra` (the batch line's number and id) goes on the result object; `records` rows carry `chunk`."""
    if fmt == "records":
        return "".join(json.dumps(row, ensure_ascii=False, separators=COMPACT) + "\n"
                       for row in record_rows(result, chunk))
    if fmt == "prompt":
        return json.dumps((extra or {}) | prompt_object(result, chunk, prompt_budget), ensure_ascii=False) + "\n"
    body = result_json(result, fmt)
    if extra:  # spliced in front: pydantic writes the JSON faster than json.dumps of its dict
        body = json.dumps(extra, ensure_ascii=False)[:-1] + ", " + body[1:]
    return body + "\n"


def error_line(message: str, status: int, chunk: Any, extra: dict | None = None) -> str:
    return json.dumps({**(extra or {}), "chunk": chunk, "error": message, "status": status}, ensure_ascii=False) + "\n"
