"""The narrow interface through which stages reach the resources of one database: the connection, the records,
the class reference, and the lazily loaded indexes and models. `pipeline.Retriever` is its one implementation;
a stage names only what it uses, and the engine imports no stage's types."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import psycopg

from ...gdscript.classref import ClassReference
from ...store.records_cache import Records
from .config import RetrieveConfig
from .types import RetrieveResult


class Resources(Protocol):
    llm: Any  # models.llm: a loaded or remote LLM, or None
    judge_calibration: Path | None
    bm25: Any  # recall.indexes.Bm25Indexes: per table and tokenizer

    def conn(self) -> psycopg.Connection: ...

    def records(self, table: str) -> Records: ...

    def class_reference(self) -> ClassReference: ...

    def api_index(self) -> dict: ...

    def guide_model(self) -> Any: ...  # evidence: (guide_model.GuideModel, docs_stats.DocsApiStats) or None

    def renames(self) -> Any: ...  # migration.version.ConverterRenames

    def reranker(self, name: str) -> Any: ...

    @property
    def embedder(self) -> Any: ...  # models.embedder.Embedder, made on first use

    @property
    def embedder_loaded(self) -> bool: ...  # whether it was made yet

    def retrieve(self, chunk: str, strategy: str = "F", cfg: RetrieveConfig | None = None, explain: bool = True,
                 context: Any = None) -> RetrieveResult: ...
