"""`Retriever`: the resources of one database (records, BM25 indexes, the class reference, lazily
loaded models, the connection), and the runner that puts one chunk through a strategy's stages
(`strategies.py`). I/O goes through `store/` and `models/`."""
from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import psycopg

from ..errors import mask_secrets
from ..gdscript.chunk_text import check_chunk_text
from ..gdscript.classref import ClassReference
from ..gdscript.project import RequestContext
from ..gdscript.tokenize import tokenizer_of
from ..records import TABLES
from ..store import derived_cache, queries, records_cache
from ..store.db import Database, StoreUnavailable
from ..store.schema import get_meta
from .engine.config import RetrieveConfig
from .engine.stage import run_stages
from .engine.state import Fallback, QueryState, freeze_loaded, table_list
from .engine.trace import MS_DIGITS
from .engine.types import RetrieveResult
from .evidence.api_source import build_api_index
from .evidence.final import CutResults
from .evidence.resources import ApiIndex, EvidenceResources
from .migration.version import ConverterRenames, converter_renames
from .recall.indexes import Bm25Indexes
from .recall.preload import preload, start_embedder
from .recall.rerank import open_reranker
from .strategies import STRATEGIES, check_strategy

if TYPE_CHECKING:
    from ..models.embedder import Embedder
    from ..models.reranker import Reranker
    from .evidence.docs_stats import DocsApiStats
    from .evidence.guide_model import GuideModel
    from .evidence.ranker_model import RankerModel

T = TypeVar("T")
FREEZE_AFTER_ROWS = 2000  # record payloads unpacked since the last gc.freeze that make a query end with one


class ModelFiles(NamedTuple):
    """The user's model files: a local CrossEncoder directory (reranker `cross-encoder`), the judge's calibration."""
    cross_encoder: str | None = None
    judge_calibration: Path | None = None


class Retriever:
    """Holds the loaded records, BM25 indexes and lazily loaded models for one database, and runs
    a strategy's stages over one chunk."""

    def __init__(self, db: Database, *, cache_dir: Path | None = None, embedder: Embedder | None = None,
                 llm: Any = None, files: ModelFiles | None = None, embed_threads: int | None = None) -> None:
        """`embed_threads`: the query encoder's threads (None: its engine's default; 1 in a batch's workers)."""
        files = files or ModelFiles()
        self.db = db
        self.embed_threads = embed_threads
        self.judge_calibration = files.judge_calibration  # None: env, then the user's, then the shipped calibrations
        self.cache_dir = Path(cache_dir) if cache_dir else db.cache_dir
        self._embedder = embedder
        self.llm = llm
        self.cross_encoder_path = files.cross_encoder
        self._records: dict[str, records_cache.Records] = {}
        self._digests: dict[str, str] = {}  # table -> records digest, read once
        self.bm25 = Bm25Indexes(self)  # per table and tokenizer (indexes.py)
        self._built: dict[str, Any] = {}  # resource name -> what `_once` built
        self._has_records = False
        self.lock = threading.RLock()  # the loaded resources
        self._local = threading.local()

    # -- resources (I/O at the edges) -------------------------------------------------
    def conn(self) -> psycopg.Connection:
        c = getattr(self._local, "conn", None)
        if c is not None and not c.closed and c.broken:
            c.close()  # the server restarted under us: open a new connection
        if c is None or c.closed:
            c = self.db.connect(autocommit=True)
            self._local.conn = c
        return c

    @property
    def embedder_loaded(self) -> bool:
        return self._embedder is not None

    @property
    def embedder(self) -> Embedder:
        with self.lock:
            if self._embedder is None:
                from ..models.embedder import Embedder

                self._embedder = Embedder.from_meta(get_meta(self.conn(), "embedding") or {}, self.cache_dir,
                                                    threads=self.embed_threads)
            return self._embedder

    def records(self, table: str) -> records_cache.Records:
        """id -> payload of every row (unpacked from the records file on first use of each)."""
        with self.lock:
            if table not in self._records:
                self._records[table] = self._read_records(table)
                freeze_loaded()
            return self._records[table]

    def _read_records(self, table: str) -> records_cache.Records:
        """The table's records from the file beside the data when it holds this content, else from the
        database (and the file written for the next process)."""
        found = records_cache.load_rows(self.cache_dir, table, self.records_digest(table))
        if found is None:
            rows = queries.fetch_records(self.conn(), table)
            digest = self._digests[table] = records_cache.rows_digest(rows)  # what was read, should the table have changed since
            path = records_cache.save_rows(self.cache_dir, table, rows, digest)
            found = records_cache.load_rows(self.cache_dir, table, digest) if path else None
            return found if found is not None else records_cache.FetchedRecords(rows)
        return found

    def freeze_unpacked(self) -> None:
        """After a query: once `FREEZE_AFTER_ROWS` payloads were unpacked since the last freeze, they are frozen
        too (`freeze_loaded`). Unpacked lazily, they would otherwise be walked by every full collection, a
        pause that grows with the rows read (the records read at once used to be frozen at load)."""
        files = [r for r in self._records.values() if isinstance(r, records_cache.RecordFile)]
        if sum(f.unpacked_since_freeze for f in files) >= FREEZE_AFTER_ROWS:
            with self.lock:
                for f in files:
                    f.unpacked_since_freeze = 0
                freeze_loaded()

    def search_texts(self, table: str) -> list[tuple[str, str]]:
        """(id, search_text) of every record: what BM25 indexes."""
        return self.records(table).search_texts()

    def _once(self, name: str, build: Callable[[], T], keep: bool = True) -> T:
        """The resource `name`, built on first use under the lock; `keep`: a large one, kept out of the
        garbage collector's sight once built (`freeze_loaded`)."""
        with self.lock:
            if name not in self._built:
                self._built[name] = build()
                if keep:
                    freeze_loaded()
            return self._built[name]

    def records_digest(self, table: str) -> str:
        """The table's records digest, read once (its records file, BM25 counts and the builds from it are keyed by it)."""
        with self.lock:
            if table not in self._digests:
                self._digests[table] = queries.records_digest(self.conn(), table)
            return self._digests[table]

    def _derived(self, name: str, tables: list[str], build: Callable[[], T]) -> T:
        """`build()` of the named tables' records and the class reference, from the file beside the data
        that holds it for this content and this code (store/derived_cache.py), else built and written."""
        ref = self._once("class_reference_digest", lambda: derived_cache.meta_digest(self.conn(), "class_reference"), keep=False)
        return derived_cache.cached(self.cache_dir, name, [*(self.records_digest(t) for t in tables), ref], build)

    def class_reference(self) -> ClassReference:
        """The Godot 4 API that `load` stored beside the records (empty if the JSONL had none)."""
        return self._once("class_reference", lambda: ClassReference(
            self._derived("class_reference", [], lambda: get_meta(self.conn(), "class_reference") or {})))

    def api_index(self) -> ApiIndex:
        return self._once("api_index", lambda: self._derived(
            "api_index", ["docs_chunks"], lambda: build_api_index(self.records("docs_chunks"), self.class_reference())))

    def guide_model(self) -> tuple[GuideModel, DocsApiStats] | None:
        """(the fitted guide model, the corpus's API use counts), or None without a model file."""
        def build() -> tuple[GuideModel, DocsApiStats] | None:
            from ..store.guide_model import read
            from .evidence.docs_stats import DocsApiStats
            from .evidence.guide_model import GuideModel

            data = read()
            if not data:
                return None
            model = GuideModel.from_dict(data)

            def counts() -> tuple[int, dict[str, int], dict[str, int], dict[str, int], dict[str, list[str]],
                                  dict[str, list[str]], dict[str, list[str]]]:
                stats = DocsApiStats.build(self.records("docs_chunks"), self.class_reference())
                return (stats.n_records, stats.member_records, stats.class_records, stats.construct_records, stats.page_nodes,
                        stats.section_classes, stats.native_pages)
            n, members, classes, constructs, page_nodes, sections, native = self._derived("docs_api_stats", ["docs_chunks"],
                                                                                           counts)
            return model, DocsApiStats(self.class_reference(), n, members, classes, dict(model.chunk_share), constructs,
                                       page_nodes, sections, native)
        return self._once("guide_model", build)

    def ranker_model(self) -> RankerModel | None:
        """The fitted ranker (store/ranker_model.json), or None without a model file."""
        def build() -> RankerModel | None:
            from ..store.ranker_model import read
            from .evidence.ranker_model import RankerModel

            data = read()
            return RankerModel.from_dict(data) if data else None
        return self._once("ranker_model", build)

    def renames(self) -> ConverterRenames:
        """The converter's renames (Godot 3 -> Godot 4 names, classes, the names that mark Godot 4 code), from
        the api_mapping records: one reading, which the version rules, the validator and the guide fit view."""
        return self._once("renames", lambda: ConverterRenames.from_plain(self._derived(
            "converter_renames", ["api_mapping"],
            lambda: converter_renames(self.records("api_mapping").values(), self.class_reference()).to_plain())), keep=False)

    def reranker(self, name: str) -> Reranker:
        return self._once(f"reranker {name}", lambda: open_reranker(name, self.llm, self.cross_encoder_path), keep=False)

    def warm(self, cfg: RetrieveConfig | None = None, embed: bool = True, log: Callable[[str], None] | None = None) -> None:
        """Load what every query needs (the BM25 indexes, the embedder), each step told to `log`."""
        cfg, say = cfg or RetrieveConfig(), log or (lambda message: None)
        tok = tokenizer_of(cfg)
        say(f"warm-up: database {self.db.describe()}")
        if embed:
            start_embedder(self)  # on a thread, while the indexes load here
        for table in TABLES:
            t = time.perf_counter()
            index = self.bm25.index(table, tok, cfg)
            say(f"warm-up: BM25 index {table}: {index.n_docs} records ({time.perf_counter() - t:.1f} s)")
        if embed:
            t = time.perf_counter()
            self.embedder.encode(["func _ready():\n\tpass"])
            say(f"warm-up: embedder {self.embedder.key} ({time.perf_counter() - t:.1f} s)")

    def require_records(self) -> None:
        """Once per retriever (the records, once read, are kept): an empty database is an error saying what to run."""
        if not self._has_records:
            queries.require_records(self.conn(), self.db.describe())
            self._has_records = True

    # -- the runner ----------------------------------------------------------------------
    def retrieve(self, chunk: str, strategy: str = "F", cfg: RetrieveConfig | None = None, explain: bool = True,
                 context: RequestContext | dict | None = None) -> RetrieveResult:
        """`context`: the project around the chunk (`RequestContext`, or its JSON object), optional."""
        chunk = check_chunk_text(chunk)
        strategy = check_strategy(strategy)
        cfg = cfg or RetrieveConfig()
        context = RequestContext.parse(context)
        try:
            return self._retrieve(chunk, strategy, cfg, explain, context)
        except psycopg.OperationalError:
            # The connection died under us (the server restarted or was killed): once more on a new one.
            self._local.conn = None
            try:
                return self._retrieve(chunk, strategy, cfg, explain, context)
            except psycopg.OperationalError as e:
                raise StoreUnavailable(f"the database is unreachable ({self.db.describe()}): "
                                       f"{mask_secrets(str(e).strip())}") from e

    def _retrieve(self, chunk: str, strategy: str, cfg: RetrieveConfig, explain: bool,
                  context: RequestContext | None = None) -> RetrieveResult:
        self.require_records()
        t0 = time.perf_counter()
        # Typed as what the stages may reach: mypy checks here that the Retriever offers every layer's resources.
        ctx: QueryState[EvidenceResources] = QueryState(chunk=chunk, strategy=strategy, cfg=cfg, resources=self,
                                                        explain=explain, context=context)
        ctx.trace.chunk_chars = len(chunk)
        ctx.trace.context = context.to_trace() if context is not None else None
        try:
            preload(ctx, STRATEGIES[strategy].stage_names)
            parts = run_stages(ctx, STRATEGIES[strategy].stages)
        except Fallback as fb:
            ctx.trace.llm_fallback = fb.reason
            ctx = QueryState(chunk=chunk, strategy=strategy, cfg=cfg, resources=self, explain=explain, trace=ctx.trace,
                             context=context)
            parts = run_stages(ctx, STRATEGIES[fb.strategy].stages)
        out = CutResults(parts["results"], parts["cut"], parts["rejected"])
        results = [c for t in cfg.tables for c in table_list(out.results, t)]
        for c in [*results, *out.rejected, *out.cut]:
            c.settle()
        ctx.trace.total_ms = round((time.perf_counter() - t0) * 1000, MS_DIGITS)
        k = STRATEGIES[strategy].k_of(cfg)
        result = RetrieveResult(strategy=strategy, chunk_text=chunk, chunk_sha256=hashlib.sha256(chunk.encode()).hexdigest(),
                                k=k, config=cfg.to_dict(), results=results, rejected=out.rejected,
                                cut=out.cut if explain else [], trace=ctx.trace)
        self.freeze_unpacked()
        return result
