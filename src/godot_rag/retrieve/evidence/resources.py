"""What the evidence stages reach: the recall and migration resources, the API index the guide model and the ranker."""
from __future__ import annotations

from typing import Protocol, TypedDict

from ..migration.resources import MigrationResources
from ..recall.resources import RecallResources
from .docs_stats import DocsApiStats
from .guide_model import GuideModel
from .ranker_model import RankerModel


class ApiIndex(TypedDict):
    """Where the class reference documents each API (`api_source.build_api_index`)."""
    members: dict[tuple[str, str], str]  # (class, member) -> the docs chunk id of its entry
    first: dict[str, str]  # class -> its page's first chunk
    page_class: dict[str, str]  # page path -> its class


class EvidenceResources(RecallResources, MigrationResources, Protocol):
    def api_index(self) -> ApiIndex: ...

    def guide_model(self) -> tuple[GuideModel, DocsApiStats] | None: ...

    def ranker_model(self) -> RankerModel | None: ...
