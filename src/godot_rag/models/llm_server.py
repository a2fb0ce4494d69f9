"""Qwen behind any OpenAI-compatible chat server (llama.cpp server, vLLM, Ollama)."""
from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from .chat_format import ANSWER_ONLY_SCHEMA, ANSWER_SCHEMA, LLMError, _normalise_chat, _parse_list


class OpenAICompatLLM:
    """Any OpenAI-compatible chat endpoint: llama.cpp server, vLLM, Ollama."""

    def __init__(self, url: str, model: str | None = None, timeout: float = 60.0, retries: int = 2, api_key: str | None = None,
                 parallel: int = 4) -> None:
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        self.model = model or "qwen"
        self.timeout, self.retries = timeout, retries
        self.api_key = api_key or os.environ.get("GODOT_RAG_LLM_API_KEY")
        self.parallel = parallel
        # Per answer schema: the (response_format, cache_prompt) variant this server accepts.
        self._formats: dict[bool, list[tuple[str | None, bool]]] = {}

    @property
    def name(self) -> str:
        return f"openai:{self.url}#{self.model}"

    def identity(self) -> dict[str, Any]:
        """A server publishes no weights hash: its calibration is stored under the model name alone."""
        return {"model": f"openai:{self.model}", "sha256": None}

    def judge_answer(self, system: str, user: str, *, evidence: bool = False,
                     evidence_max_tokens: int = 40) -> dict[str, Any]:
        """The same JSON verdict over the OpenAI-compatible API: schema-constrained where the server
        supports `response_format` (json_schema, else llama.cpp's json_object + schema), P(yes) from
        the top log-probabilities of the answer's token; `cache_prompt` lets llama.cpp's server reuse
        the shared prefix."""
        res = self._verdict_chat(system, user, evidence, evidence_max_tokens)
        text = res["text"]
        try:
            data = json.loads(text)
            answer, cited = str(data.get("answer", "")).lower(), [x for x in data.get("evidence") or [] if isinstance(x, str)]
        except (json.JSONDecodeError, AttributeError):
            m = re.search(r"\b(yes|no)\b", text.lower())
            answer, cited = (m.group(1) if m else ""), _parse_list(text)
        p_yes, source = res["p_yes"], "logprobs"
        if p_yes is None:
            p_yes, source = (1.0 if answer == "yes" else 0.0), "answer"
        return {"answer": answer if answer in ("yes", "no") else None, "p_yes": round(p_yes, 6), "p_yes_source": source,
                "evidence": cited if evidence else [], "raw": text}

    def _verdict_chat(self, system: str, user: str, evidence: bool, evidence_max_tokens: int) -> dict[str, Any]:
        """The verdict's chat answer, in the richest request shape this server accepts."""
        schema = ANSWER_SCHEMA if evidence else ANSWER_ONLY_SCHEMA
        formats: dict[str | None, dict[str, Any] | None] = {
            "json_schema": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}},
            "json_object": {"type": "json_object", "schema": schema}, None: None}
        # What servers accept differs: try the richest request first, learn what this one takes.
        variants = self._formats.get(evidence) or [("json_schema", True), ("json_object", True), (None, True),
                                                   ("json_schema", False), (None, False)]
        last: LLMError | None = None
        for fmt, cache in variants:
            extra: dict[str, Any] = {"logprobs": True, "top_logprobs": 10}
            if cache:
                extra["cache_prompt"] = True
            if formats[fmt] is not None:
                extra["response_format"] = formats[fmt]
            try:
                res = self.chat(system, user, max_tokens=evidence_max_tokens + 12 if evidence else 12, extra=extra)
            except LLMError as e:
                # A server that answers but rejects the request's shape (llama_cpp.server says 500 to an
                # unknown response_format) gets the next variant; one that is down is an error at once.
                if "refused" not in str(e) and "answered" not in str(e):
                    raise
                last = e
                continue
            self._formats.setdefault(evidence, [(fmt, cache)])
            return res
        raise last or LLMError("no request shape left to try")

    def chat(self, system: str, user: str, *, max_tokens: int = 256, json_schema: dict[str, Any] | None = None,
             logprobs: bool = False, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        import httpx

        body: dict[str, Any] = {"model": self.model, "temperature": 0.0, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        if json_schema is not None:
            body["response_format"] = {"type": "json_object", "schema": json_schema}
        if logprobs:
            body.update(logprobs=True, top_logprobs=10)
        body.update(extra or {})
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        last: LLMError | None = None
        for attempt in range(self.retries + 1):
            try:
                r = httpx.post(f"{self.url}/chat/completions", json=body, headers=headers, timeout=self.timeout)
                if r.status_code >= 500:
                    raise LLMError(f"LLM server {self.url} answered {r.status_code}: {r.text[:200]}")
                if r.status_code >= 400:
                    raise LLMError(f"LLM server {self.url} refused the request ({r.status_code}): {r.text[:200]}")
                return _normalise_chat(r.json())
            except httpx.TimeoutException:
                last = LLMError(f"LLM server {self.url} timed out after {self.timeout}s")
            except httpx.HTTPError as e:
                last = LLMError(f"LLM server {self.url} is unreachable: {e}")
            except LLMError as e:
                last = e
                if "refused" in str(e):
                    break
            time.sleep(min(2 ** attempt * 0.25, 2))
        raise last or LLMError("no attempt made")

    def p_yes(self, prompt: str) -> float:
        res = self.chat("Answer with one word: yes or no.", prompt, max_tokens=1, logprobs=True)
        return res["p_yes"] if res["p_yes"] is not None else float(res["text"].strip().lower().startswith("yes"))
