"""BM25 term counts persisted next to the data, rebuilt only when the table content or the tokenizer
changes. Plain arrays: the index itself is built in retrieve/."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from scipy import sparse

from .cache_files import write_replacing

# (vocab: term -> column, tf: documents x terms, doc_len, df): what BM25 needs of a table.
TermCounts = tuple[dict[str, int], sparse.csc_matrix, np.ndarray, np.ndarray]


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_path(cache_dir: Path, table: str, digest: str, tokenizer_key: str) -> Path:
    return Path(cache_dir) / f"bm25-{table}-{_key(tokenizer_key)}-{_key(digest)}.npz"


def load_counts(cache_dir: Path, table: str, digest: str, tokenizer_key: str, ids: list[str]) -> TermCounts | None:
    """(vocab, tf, doc_len, df) from the cache, or None when it holds other content."""
    path = cache_path(cache_dir, table, digest, tokenizer_key)
    if not path.exists():
        return None
    try:
        data = np.load(path, allow_pickle=False)
        if json.loads(str(data["ids"])) != ids:
            return None
        tf = sparse.csc_matrix((data["tf_data"], data["tf_indices"], data["tf_indptr"]), shape=tuple(data["tf_shape"]))
        return json.loads(str(data["vocab"])), tf, data["doc_len"], data["df"]
    except (OSError, ValueError, KeyError):
        return None  # a damaged file is rebuilt


def save_counts(cache_dir: Path, table: str, digest: str, tokenizer_key: str, ids: list[str],
                *counts: *TermCounts) -> Path:
    """`counts`: (vocab, tf, doc_len, df), as `load_counts` returns them. Written atomically. Only files of the
    same table and tokenizer for other content are removed: a cache another tokenizer setting uses is never touched."""
    vocab, tf, doc_len, df = counts

    def write(tmp: Path) -> None:
        np.savez(tmp, ids=json.dumps(ids), vocab=json.dumps(vocab), tf_data=tf.data, tf_indices=tf.indices,
                 tf_indptr=tf.indptr, tf_shape=np.asarray(tf.shape), doc_len=doc_len, df=df)

    return write_replacing(cache_path(cache_dir, table, digest, tokenizer_key), write,
                           f"bm25-{table}-{_key(tokenizer_key)}-*.npz")
