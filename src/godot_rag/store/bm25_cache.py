"""Persist BM25 indexes next to the data, rebuilt only when the table content or tokenizer changes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from scipy import sparse

from ..retrieve.bm25 import BM25Index, BM25Params, build_index


def cache_path(cache_dir: Path, table: str, digest: str, tokenizer_key: str) -> Path:
    h = hashlib.sha256(f"{digest}|{tokenizer_key}".encode()).hexdigest()[:16]
    return Path(cache_dir) / f"bm25-{table}-{h}.npz"


def load_or_build(cache_dir: Path, table: str, digest: str, tokenizer_key: str, ids: list[str], texts_tokens,
                  params: BM25Params) -> tuple[BM25Index, bool]:
    """Returns (index, built_now). `texts_tokens` is a zero-argument callable, so tokenizing is skipped on a hit."""
    path = cache_path(cache_dir, table, digest, tokenizer_key)
    if path.exists():
        data = np.load(path, allow_pickle=False)
        cached_ids = json.loads(str(data["ids"]))
        if cached_ids == ids:
            vocab = json.loads(str(data["vocab"]))
            tf = sparse.csc_matrix((data["tf_data"], data["tf_indices"], data["tf_indptr"]), shape=tuple(data["tf_shape"]))
            return BM25Index(ids, vocab, tf, data["doc_len"], data["df"], params), False
    index = build_index(ids, texts_tokens(), params)
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(f"bm25-{table}-*.npz"):
        old.unlink()
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, ids=json.dumps(ids), vocab=json.dumps(index.vocab), tf_data=index.tf.data, tf_indices=index.tf.indices,
             tf_indptr=index.tf.indptr, tf_shape=np.asarray(index.tf.shape), doc_len=index.doc_len, df=index.df)
    tmp.replace(path)
    return index, True
