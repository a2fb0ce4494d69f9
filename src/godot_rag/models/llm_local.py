"""The in-process Qwen: llama-cpp-python over a GGUF file, and the bundled model loaded on first use."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from .chat_format import ANSWER_PREFIX, EVIDENCE_SCHEMA, LLMError, _chatml, _normalise_chat, _parse_list
from .gguf import BUNDLED, assemble_bundled, sha256_file


class LlamaCppLLM:
    """In-process llama-cpp-python. One generation at a time (the model is not thread-safe)."""

    parallel = 1  # one context: candidates are judged one after another, sharing the prefix

    def __init__(self, gguf: Path, n_ctx: int = 4096, n_threads: int | None = None, label: str | None = None,
                 sha256: str | None = None) -> None:
        self.gguf = Path(gguf)
        self.label = label or self.gguf.name
        self.n_ctx, self.n_threads = n_ctx, n_threads or max(1, os.cpu_count() or 1)
        self._llm: Any = None  # llama_cpp.Llama, loaded on first use
        self._lock = threading.Lock()
        self._sha256 = sha256
        self._grammar: Any = None

    def identity(self) -> dict[str, Any]:
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

    def load(self) -> Any:
        return self._load()

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as e:
                raise LLMError("the in-process Qwen needs the 'llm' extra: pip install 'godot-rag[llm]'") from e
            self._llm = Llama(model_path=str(self.gguf), n_ctx=self.n_ctx, n_threads=self.n_threads, logits_all=False,
                              verbose=False)
        return self._llm

    def chat(self, system: str, user: str, *, max_tokens: int = 256, json_schema: dict[str, Any] | None = None,
             logprobs: bool = False) -> dict[str, Any]:
        with self._lock:
            llm = self._load()
            p_yes = self._first_token_p_yes(system, user) if logprobs else None
            kwargs: dict[str, Any] = {}
            if json_schema is not None:
                kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
            out = llm.create_chat_completion(
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=max_tokens, temperature=0.0, **kwargs)
        res = _normalise_chat(out)
        res["p_yes"] = p_yes
        return res

    def chat_prefilled(self, system: str, user: str, prefix: str, *, max_tokens: int = 256) -> dict[str, Any]:
        """A chat answer that starts with `prefix` (the answer's first characters, written for the model).
        It holds a JSON answer to its shape almost as well as a grammar, at no cost per token: a grammar
        checks all of Qwen's 151k tokens at every step, seconds a token on 2 shared cores."""
        with self._lock:
            llm = self._load()
            out = llm.create_completion(_chatml(system, user) + prefix, max_tokens=max_tokens, temperature=0.0,
                                        stop=["<|im_end|>", "<|endoftext|>"])
        return {"text": prefix + out["choices"][0]["text"], "p_yes": None, "raw": out}

    def judge_answer(self, system: str, user: str, *, evidence: bool = False,
                     evidence_max_tokens: int = 40) -> dict[str, Any]:
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

        def mass(words: list[str]) -> float:
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


class LazyBundled:
    """Assembles and loads the bundled GGUF on first use, not at start-up."""

    def __init__(self, name: str, n_threads: int | None = None) -> None:
        self.bundled = name
        self.n_threads = n_threads
        self._inner: LlamaCppLLM | None = None

    @property
    def name(self) -> str:
        return f"llama-cpp:bundled-qwen-{self.bundled}"

    def _get(self) -> LlamaCppLLM:
        if self._inner is None:
            self._inner = LlamaCppLLM(assemble_bundled(self.bundled), label=f"bundled-qwen-{self.bundled}",
                                      sha256=BUNDLED[self.bundled]["sha256"], n_threads=self.n_threads)
        return self._inner

    @property
    def loaded(self) -> bool:
        return self._inner is not None and self._inner.loaded

    def load(self) -> Any:
        return self._get().load()

    def chat(self, *a: Any, **kw: Any) -> dict[str, Any]:
        return self._get().chat(*a, **kw)

    def chat_prefilled(self, *a: Any, **kw: Any) -> dict[str, Any]:
        return self._get().chat_prefilled(*a, **kw)

    def p_yes(self, prompt: str) -> float:
        return self._get().p_yes(prompt)

    parallel = 1

    def identity(self) -> dict[str, Any]:
        return {"model": f"bundled-qwen-{self.bundled}", "sha256": BUNDLED[self.bundled]["sha256"]}

    def judge_answer(self, *a: Any, **kw: Any) -> dict[str, Any]:
        return self._get().judge_answer(*a, **kw)
