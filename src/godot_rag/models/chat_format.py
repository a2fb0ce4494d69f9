"""The chat format the Qwen backends share: the prompt template, the verdict schemas, and reading an answer's
text and P(yes) out of a chat completion."""
from __future__ import annotations

import json
import math
import re
from typing import Any


class LLMError(RuntimeError):
    """The LLM is unavailable, timed out, or its file is not the expected one."""


ANSWER_PREFIX = '{"answer": "'
EVIDENCE_SCHEMA = {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 3}
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]},
                                                  "evidence": EVIDENCE_SCHEMA},
                 "required": ["answer", "evidence"], "additionalProperties": False}
ANSWER_ONLY_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                      "required": ["answer"], "additionalProperties": False}


def _chatml(system: str, user: str) -> str:
    """The Qwen models' chat template, up to the assistant's turn."""
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def _parse_list(text: str) -> list[str]:
    """The strings of a JSON list, also when generation stopped inside it."""
    try:
        data = json.loads(text)
        if isinstance(data, list):
            return [x for x in data if isinstance(x, str)]
    except json.JSONDecodeError:
        pass
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def _normalise_chat(out: dict[str, Any]) -> dict[str, Any]:
    choice = out["choices"][0]
    text = (choice.get("message") or {}).get("content") or choice.get("text") or ""
    p_yes = None
    lp = choice.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else None
    if content:
        # The answer word: the first token (plain answers) or the one after `"answer": "` (JSON answers).
        first = next((t for t in content if (t.get("token") or "").strip().strip('"').lower() in ("yes", "no")), content[0])
        tops = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
        yes = sum(math.exp(t["logprob"]) for t in tops if (t.get("token") or "").strip().strip('"').lower() == "yes")
        no = sum(math.exp(t["logprob"]) for t in tops if (t.get("token") or "").strip().strip('"').lower() == "no")
        if yes + no > 0:
            p_yes = yes / (yes + no)
    return {"text": text, "p_yes": p_yes, "raw": out}


