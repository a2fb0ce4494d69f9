"""The BM25 indexes of one database: term counts per (table, tokenizer), built once or read from the
cache beside the data (store/bm25_cache.py); k1/b are applied on top, and only the last few k1/b variants
are kept, so a client choosing them cannot grow memory."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from ...gdscript.tokenize import TokenizerConfig, tokenize
from ...store.bm25_cache import load_counts, save_counts
from ..engine.config import RetrieveConfig
from ..engine.state import freeze_loaded
from . import bm25 as bm25_mod

BM25_PARAM_SLOTS = 6  # k1/b variants kept at once (the counts are shared; only the weights differ)


class IndexedRecords(Protocol):
    """What the indexes read of a database: its records, their digest and texts, the cache folder, the lock."""
    lock: threading.RLock
    cache_dir: Path

    def records(self, table: str) -> Mapping[str, dict]: ...

    def records_digest(self, table: str) -> str: ...

    def search_texts(self, table: str) -> list[tuple[str, str]]: ...


class Bm25Indexes:
    def __init__(self, source: IndexedRecords):
        self._r = source
        self._counts: dict[tuple[str, str], bm25_mod.BM25Index] = {}
        self._weighted: OrderedDict[tuple[str, str, bm25_mod.BM25Params], bm25_mod.BM25Index] = OrderedDict()

    def docs_idf(self, cfg: RetrieveConfig) -> Callable[[str], float]:
        """term -> idf in the docs (the default tokenizer): how rare a shared identifier is."""
        index = self.index("docs_chunks", TokenizerConfig(), cfg)
        return lambda term: float(bm25_mod.idf(index.n_docs, index.df_of(term.lower())))

    def loaded(self, table: str, tok: TokenizerConfig) -> bool:
        return (table, tok.key()) in self._counts

    def index(self, table: str, tok: TokenizerConfig, cfg: RetrieveConfig) -> bm25_mod.BM25Index:
        params = bm25_mod.BM25Params(cfg.k1, cfg.b)
        key = (table, tok.key(), params)
        with self._r.lock:
            if key in self._weighted:
                self._weighted.move_to_end(key)
                return self._weighted[key]
            base = self._counts.get((table, tok.key()))
            if base is None:
                base = self._build(table, tok, params)
                self._counts[(table, tok.key())] = base
                freeze_loaded()
            index = base.with_params(params)
            self._weighted[key] = index
            while len(self._weighted) > BM25_PARAM_SLOTS:
                self._weighted.popitem(last=False)
            return index

    def _build(self, table: str, tok: TokenizerConfig, params: bm25_mod.BM25Params) -> bm25_mod.BM25Index:
        ids = list(self._r.records(table))
        digest = self._r.records_digest(table)  # stricter than ids and texts alone: one scan for both caches
        cached = load_counts(self._r.cache_dir, table, digest, tok.key(), ids)
        if cached is not None:
            vocab, tf, doc_len, df = cached
            return bm25_mod.BM25Index(ids, vocab, tf, doc_len, df, params)
        base = bm25_mod.build_index(ids, [tokenize(t, tok) for _, t in self._r.search_texts(table)], params)
        save_counts(self._r.cache_dir, table, digest, tok.key(), ids, base.vocab, base.tf, base.doc_len, base.df)
        return base
