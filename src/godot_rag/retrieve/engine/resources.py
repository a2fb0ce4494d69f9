"""The narrow interfaces through which stages reach the resources of one database. Each layer names what its
stages use, and no more: `Resources` here (the connection, the records, the class reference, the query encoder,
the LLM), `recall.resources.RecallResources` (the BM25 indexes, the rerankers), `migration.resources` (the
converter's renames) and `evidence.resources` (the API index, the guide model). `pipeline.Retriever` is their one
implementation; the engine imports no stage's types."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import psycopg

from ...gdscript.classref import ClassReference
from ...gdscript.project import RequestContext
from ...store.records_cache import Records
from .config import RetrieveConfig
from .types import RetrieveResult

if TYPE_CHECKING:
    from ...models.embedder import Embedder
    from ...models.llm import LLM


class Resources(Protocol):
    llm: LLM | None  # a loaded or remote LLM (E's profile, the judge), or None
    judge_calibration: Path | None

    def conn(self) -> psycopg.Connection: ...

    def records(self, table: str) -> Records: ...

    def class_reference(self) -> ClassReference: ...

    @property
    def embedder(self) -> Embedder: ...  # made on first use

    @property
    def embedder_loaded(self) -> bool: ...  # whether it was made yet

    def retrieve(self, chunk: str, strategy: str = "F", cfg: RetrieveConfig | None = None, explain: bool = True,
                 context: RequestContext | dict | None = None) -> RetrieveResult: ...
