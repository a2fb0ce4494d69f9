"""The part `lists`: what the retrievers (BM25, the embedding) hand over to the union and the fusion."""
from __future__ import annotations

import numpy as np

from ..engine.types import Candidate


class RankedLists:
    """table -> per query text -> retriever name -> its ranked list. The first retriever of a strategy makes it,
    each later one adds its own lists (`put_ranked`)."""

    def __init__(self) -> None:
        self._lists: dict[str, list[dict[str, list[Candidate]]]] = {}
        self._full: dict[tuple[str, int, str], np.ndarray] = {}
        self.retrievers: set[str] = set()
        self.entries: dict[tuple[str, int], dict] = {}  # (table, text) -> fuse.list_entries of its lists, once

    def put(self, table: str, text: int, retriever: str, cands: list[Candidate],
            full_scores: np.ndarray | None = None) -> None:
        """`full_scores`: every score of the list in rank order, when `cands` holds only some of its rows
        (the prefilter's); each candidate's `rank` is then its rank in the full list."""
        per_text = self._lists.setdefault(table, [])
        while len(per_text) <= text:
            per_text.append({})
        per_text[text][retriever] = cands
        self.entries.pop((table, text), None)
        if full_scores is not None:
            self._full[(table, text, retriever)] = full_scores
        self.retrievers.add(retriever)

    def put_ranked(self, table: str, text: int, retriever: str, ranked: list[tuple[str, float]],
                   cands: list[Candidate]) -> None:
        """A retriever's list: `cands` for the rows that go on, `ranked` every (id, score) it found in rank
        order. When the prefilter left rows out, the full scores are kept (fusion normalises over them)."""
        whole = len(cands) == len(ranked)
        self.put(table, text, retriever, cands, None if whole else np.asarray([s for _, s in ranked], dtype=float))

    def full_scores(self, table: str, text: int, retriever: str) -> np.ndarray | None:
        """The list's scores before the prefilter, in rank order (None: the list is whole)."""
        return self._full.get((table, text, retriever))

    def __getitem__(self, table: str) -> list[dict[str, list[Candidate]]]:
        return self._lists[table]

    def of(self, table: str) -> list[dict[str, list[Candidate]]]:
        """The table's lists per query text (one empty text when no retriever read the table)."""
        return self._lists.get(table) or [{}]
