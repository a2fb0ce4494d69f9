"""Reranker backends, loaded on first use: nanoranker (ONNX), a local CrossEncoder, or Qwen P(yes)."""
from __future__ import annotations

import threading
from typing import Any


class NanoRanker:
    name = "nanoranker"

    def __init__(self, cache_size: int = 50_000) -> None:
        self._mod: Any = None  # the nanoranker module
        self._lock = threading.Lock()
        self._cache: dict[str, object] = {}  # document text -> embedding; docs repeat across queries
        self._cache_size = cache_size

    @property
    def loaded(self) -> bool:
        return self._mod is not None

    def load(self) -> Any:
        return self._load()

    def _load(self) -> Any:
        with self._lock:
            if self._mod is None:
                try:
                    import nanoranker  # loads its ONNX sessions at import
                except ImportError as e:
                    raise ImportError("the nanoranker reranker needs the 'rerank' extra: pip install 'godot-rag[rerank]'") from e
                self._mod = nanoranker
        return self._mod

    def score(self, query: str, documents: list[str]) -> list[float]:
        mod = self._load()
        # nanoranker.rank sorts; score in our own order with its model directly.
        import numpy as np

        q = mod.embed(query)
        vecs = []
        for d in documents:
            v = self._cache.get(d)
            if v is None:
                v = mod.embed(d)
                if len(self._cache) < self._cache_size:
                    self._cache[d] = v
            vecs.append(v)
        docs = np.array(vecs)
        feats = np.concatenate([np.tile(q, (len(docs), 1)), docs], axis=1).astype(np.float32)
        return [float(x) for x in mod.reranker_model.run(["output"], {"input": feats})[0].reshape(-1)]


class LocalCrossEncoder:
    name = "cross-encoder"

    def __init__(self, path: str) -> None:
        self.path = path
        self._model: Any = None  # a sentence_transformers.CrossEncoder

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(self.path, device="cpu")
        return self._model

    def score(self, query: str, documents: list[str]) -> list[float]:
        self.load()
        return [float(s) for s in self._model.predict([(query, d) for d in documents])]


class QwenPointwise:
    """P(yes) to "is this candidate relevant to this code", from the LLM's first-token log-probs."""

    name = "qwen"

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    @property
    def loaded(self) -> bool:
        return getattr(self.llm, "loaded", True)

    def load(self) -> Any:
        return self.llm.load() if hasattr(self.llm, "load") else None

    def score(self, query: str, documents: list[str]) -> list[float]:
        out = []
        for doc in documents:
            prompt = (
                "SOURCE_CODE:\n" + query[:1500] + "\n\nCANDIDATE:\n" + doc[:1200] +
                "\n\nIs the CANDIDATE documentation directly relevant to the SOURCE_CODE? Answer yes or no."
            )
            out.append(self.llm.p_yes(prompt))
        return out


Reranker = NanoRanker | LocalCrossEncoder | QwenPointwise  # the rerankers the rerank stage opens by name
