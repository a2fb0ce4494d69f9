"""What the recall stages reach besides the engine's resources: the BM25 indexes and the rerankers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..engine.resources import Resources
from .indexes import Bm25Indexes

if TYPE_CHECKING:
    from ...models.reranker import Reranker


class RecallResources(Resources, Protocol):
    bm25: Bm25Indexes  # per table and tokenizer

    def reranker(self, name: str) -> Reranker: ...
