"""Lucene-style BM25 over one table, as small numpy functions (after bm25s).

    idf(t)   = ln(1 + (N - df + 0.5) / (df + 0.5))
    tfn(t,d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    score    = sum over the query's distinct terms of idf * tfn

Query terms are counted once each (a raw chunk repeats `velocity` twenty times;
that says nothing about which doc is right). The explanation per matched term
carries what Elasticsearch's `_explain` shows: df, tf, idf, tfn, dl, avgdl.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, overload

import numpy as np
from scipy import sparse

from ..engine.trace import RATIO_DIGITS


@overload
def idf(n_docs: int, df: float) -> float: ...


@overload
def idf(n_docs: int, df: np.ndarray) -> np.ndarray: ...


def idf(n_docs: int, df: float | np.ndarray) -> float | np.ndarray:
    """Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5)): the one formula for scoring, explaining and the validator."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


@dataclass
class BM25Index:
    ids: list[str]
    vocab: dict[str, int]
    tf: sparse.csc_matrix  # docs x terms, raw counts
    doc_len: np.ndarray
    df: np.ndarray
    params: BM25Params

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    def __post_init__(self) -> None:
        self._weights = None
        self._position: dict[str, int] | None = None
        self._prefixed: dict[str, np.ndarray] = {}
        self.avgdl = float(self.doc_len.mean()) if len(self.doc_len) else 0.0

    def idf(self, df: np.ndarray) -> np.ndarray:
        return idf(self.n_docs, df)

    def rows_with_prefix(self, prefix: str) -> np.ndarray:
        """A mask of the rows whose id starts with `prefix`, built once per index and prefix."""
        if prefix not in self._prefixed:
            self._prefixed[prefix] = np.fromiter((rid.startswith(prefix) for rid in self.ids), bool, len(self.ids))
        return self._prefixed[prefix]

    def ids_without_prefix(self, prefix: str) -> list[str]:
        """The ids of the rows whose id does not start with `prefix`."""
        return [self.ids[i] for i in np.flatnonzero(~self.rows_with_prefix(prefix))]

    def with_params(self, params: BM25Params) -> BM25Index:
        """The same counts under other k1/b: only the weights are computed again, the counts are shared."""
        return self if params == self.params else replace(self, params=params)

    @property
    def position(self) -> dict[str, int]:
        """Record id -> row, built once per index (explaining a candidate needs its row)."""
        if self._position is None:
            self._position = {rid: i for i, rid in enumerate(self.ids)}
        return self._position

    def df_of(self, term: str) -> int:
        j = self.vocab.get(term)
        return 0 if j is None else int(self.df[j])

    @property
    def weights(self) -> sparse.csc_matrix:
        """Per (doc, term) BM25 weight, computed once; scoring is then a column sum."""
        if self._weights is None:
            k1, b = self.params.k1, self.params.b
            coo = self.tf.tocoo()
            tf = coo.data.astype(np.float64)
            dl = self.doc_len[coo.row]
            norm = k1 * (1 - b + b * dl / max(self.avgdl, 1e-9))
            w = self.idf(self.df[coo.col]) * tf * (k1 + 1) / (tf + norm)
            self._weights = sparse.csc_matrix((w, (coo.row, coo.col)), shape=self.tf.shape)
        return self._weights


def build_index(ids: list[str], docs_tokens: list[list[str]], params: BM25Params = BM25Params()) -> BM25Index:
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    lengths = np.zeros(len(ids), dtype=np.float64)
    for i, toks in enumerate(docs_tokens):
        lengths[i] = len(toks)
        for term, count in Counter(toks).items():
            j = vocab.setdefault(term, len(vocab))
            rows.append(i)
            cols.append(j)
            vals.append(count)
    tf = sparse.csc_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(len(ids), len(vocab)))
    df = np.diff(tf.indptr).astype(np.float64)
    return BM25Index(ids, vocab, tf, lengths, df, params)


def query_terms(index: BM25Index, tokens: list[str]) -> list[str]:
    return [t for t in dict.fromkeys(tokens) if t in index.vocab]


def score(index: BM25Index, tokens: list[str], term_weights: dict[str, float] | None = None) -> np.ndarray:
    """Sum of the per-term weights; `term_weights` (default 1) scales a query term's contribution."""
    return score_many(index, [tokens], term_weights)[:, 0]


def score_many(index: BM25Index, token_lists: list[list[str]],
               term_weights: dict[str, float] | None = None) -> np.ndarray:
    """`score` for several query texts (a chunk and its segments) in one sparse product:
    docs x texts, the same numbers as calling `score` on each."""
    per_text = [query_terms(index, toks) for toks in token_lists]
    terms = list(dict.fromkeys(t for ts in per_text for t in ts))
    if not terms:
        return np.zeros((index.n_docs, len(token_lists)))
    where = {t: j for j, t in enumerate(terms)}
    q = np.zeros((len(terms), len(token_lists)))
    for ti, ts in enumerate(per_text):
        for t in ts:
            q[where[t], ti] = (term_weights or {}).get(t, 1.0)
    sub = index.weights[:, [index.vocab[t] for t in terms]]
    return np.asarray(sub @ q)


def top_k(scores: np.ndarray, k: int) -> list[int]:
    nz = np.flatnonzero(scores > 0)
    if len(nz) > k:
        nz = nz[np.argpartition(-scores[nz], k - 1)[:k]]
    return sorted(nz.tolist(), key=lambda i: (-scores[i], i))


def explain(index: BM25Index, tokens: list[str], doc: int, _sub: tuple[list[str], sparse.csr_matrix] | None = None,
            term_weights: dict[str, float] | None = None) -> dict[str, Any]:
    """Per matched term: df, tf, idf, tfn and contribution; `_sub` is an optional
    (terms, docs x terms CSR) slice for explaining many docs of one query."""
    k1, b = index.params.k1, index.params.b
    dl, avgdl = float(index.doc_len[doc]), index.avgdl
    terms_q, sub = _sub if _sub is not None else query_slice(index, tokens)
    lo, hi = sub.indptr[doc], sub.indptr[doc + 1]
    terms = []
    for j_local, tf in zip(sub.indices[lo:hi].tolist(), sub.data[lo:hi].tolist()):
        t = terms_q[j_local]
        df = float(index.df[index.vocab[t]])
        term_idf = float(idf(index.n_docs, df))
        tfn = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        w = (term_weights or {}).get(t, 1.0)
        entry = {"term": t, "df": int(df), "tf": int(tf), "idf": round(term_idf, RATIO_DIGITS), "tfn": round(tfn, RATIO_DIGITS),
                 "contribution": round(w * term_idf * tfn, RATIO_DIGITS)}
        if w != 1.0:
            entry["query_weight"] = w
        terms.append(entry)
    terms.sort(key=lambda x: -x["contribution"])
    return {"k1": k1, "b": b, "dl": int(dl), "avgdl": round(avgdl, 2), "n_docs": index.n_docs, "matched_terms": terms,
            "score": round(sum(t["contribution"] for t in terms), RATIO_DIGITS)}


def query_slice(index: BM25Index, tokens: list[str]) -> tuple[list[str], sparse.csr_matrix]:
    terms = query_terms(index, tokens)
    cols = [index.vocab[t] for t in terms]
    return terms, index.tf[:, cols].tocsr()
