"""`Retriever`: the resources of one database (records, BM25 indexes, the class reference, lazily
loaded models, the connection), and the runner that puts one chunk through a strategy's stages
(`strategies.py`). I/O goes through `store/` and `models/`."""
from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from pathlib import Path

import psycopg

from ..classref import ClassReference
from ..records import TABLES
from ..store import queries
from ..store.bm25_cache import load_counts, save_counts
from ..store.db import Database, StoreError, StoreUnavailable
from ..store.schema import get_meta
from . import bm25 as bm25_mod
from .api_source import build_api_index
from .config import MAX_CHUNK_CHARS, ConfigError, RetrieveConfig
from .context import Fallback, Pool, QueryContext, freeze_loaded
from .project_context import RequestContext
from .strategies import STRATEGIES, check_strategy
from .tokenize import TokenizerConfig, tokenize, tokenizer_of
from .trace import StageLog
from .types import Candidate, RetrieveResult
from .version import CLASS_TYPES, version_names

BM25_PARAM_SLOTS = 6  # k1/b variants kept at once (the counts are shared; only the weights differ)


class ChunkError(ValueError):
    """The chunk itself is unusable (empty, or over the size limit)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status

    def __reduce__(self):  # survives the trip back from a --batch worker process
        return (ChunkError, (str(self), self.status))


def check_chunk(chunk: str) -> str:
    if chunk is None or not chunk.strip():
        raise ChunkError("chunkText is empty: pass the raw GDScript chunk", 422)
    if len(chunk) > MAX_CHUNK_CHARS:
        raise ChunkError(f"chunkText is {len(chunk)} characters; the limit is {MAX_CHUNK_CHARS}. "
                         "Split the file into functions or blocks first.", 413)
    if "\x00" in chunk:
        at = chunk.index("\x00")
        line = chunk.count("\n", 0, at) + 1
        col = at - (chunk.rfind("\n", 0, at) + 1) + 1
        raise ChunkError(f"chunkText holds a NUL byte at line {line}, column {col}: a .gd file is text, "
                         "pass the chunk as it is in the file", 422)
    return chunk


class Retriever:
    """Holds the loaded records, BM25 indexes and lazily loaded models for one database, and runs
    a strategy's stages over one chunk."""

    def __init__(self, db: Database, *, cache_dir: Path | None = None, embedder=None, llm=None,
                 cross_encoder_path: str | None = None, judge_calibration: Path | None = None):
        self.db = db
        self.judge_calibration = judge_calibration  # None: env, then the user's, then the shipped calibrations
        self.cache_dir = Path(cache_dir) if cache_dir else db.data_dir.parent / "cache"
        self._embedder = embedder
        self.llm = llm
        self.cross_encoder_path = cross_encoder_path
        self._records: dict[str, dict[str, dict]] = {}
        self._texts: dict[str, list[tuple[str, str]]] = {}
        self._bm25_counts: dict[tuple, bm25_mod.BM25Index] = {}
        self._bm25: OrderedDict[tuple, bm25_mod.BM25Index] = OrderedDict()
        self._rerankers: dict[str, object] = {}
        self._class_reference: ClassReference | None = None
        self._api_index: dict | None = None
        self._version_names: tuple[set[str], set[str]] | None = None
        self._class_renames: dict[str, str] | None = None
        self._lock = threading.RLock()
        self._local = threading.local()

    # -- resources (I/O at the edges) -------------------------------------------------
    def conn(self):
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
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                from ..models.embedder import Embedder

                meta = get_meta(self.conn(), "embedding") or {}
                self._embedder = Embedder(meta.get("model", "all-MiniLM-L6-v2"), pooling=meta.get("pooling", "window-mean"),
                                          precision=meta.get("precision", "int8"))
            return self._embedder

    def records(self, table: str) -> dict[str, dict]:
        with self._lock:
            if table not in self._records:
                rows = queries.fetch_records(self.conn(), table)
                self._records[table] = {rid: payload for rid, payload, _, _ in rows}
                self._texts[table] = [(rid, text) for rid, _, text, _ in rows]
                freeze_loaded()
            return self._records[table]

    def class_reference(self) -> ClassReference:
        """The Godot 4 API that `load` stored beside the records (empty if the JSONL had none)."""
        with self._lock:
            if self._class_reference is None:
                self._class_reference = ClassReference(get_meta(self.conn(), "class_reference") or {})
                freeze_loaded()
            return self._class_reference

    def api_index(self) -> dict:
        with self._lock:
            if self._api_index is None:
                self._api_index = build_api_index(self.records("docs_chunks"), self.class_reference())
                freeze_loaded()
            return self._api_index

    def version_names(self) -> tuple[set[str], set[str]]:
        """(Godot 3 names the converter renames, Godot 4 names they became), from the api_mapping records."""
        with self._lock:
            if self._version_names is None:
                self._version_names = version_names(self.records("api_mapping").values(), self.class_reference())
            return self._version_names

    def class_renames(self) -> dict[str, str]:
        """The converter's class renames, Godot 3 name -> Godot 4 name (`Camera` -> `Camera3D`)."""
        with self._lock:
            if self._class_renames is None:
                self._class_renames = {r["source_api"]: r["target_api"] for r in self.records("api_mapping").values()
                                       if r["change_type"] in CLASS_TYPES}
            return self._class_renames

    def bm25_loaded(self, table: str, tok: TokenizerConfig) -> bool:
        return (table, tok.key()) in self._bm25_counts

    def bm25_index(self, table: str, tok: TokenizerConfig, cfg: RetrieveConfig) -> bm25_mod.BM25Index:
        """Counts built (or read from the cache) once per table and tokenizer; k1/b are applied on
        top, and only the last few k1/b variants are kept (a client choosing them cannot grow memory)."""
        params = bm25_mod.BM25Params(cfg.k1, cfg.b)
        key = (table, tok.key(), params)
        with self._lock:
            if key in self._bm25:
                self._bm25.move_to_end(key)
                return self._bm25[key]
            base = self._bm25_counts.get((table, tok.key()))
            if base is None:
                self.records(table)
                texts = self._texts[table]
                ids = [r for r, _ in texts]
                digest = queries.table_digest(self.conn(), table)
                cached = load_counts(self.cache_dir, table, digest, tok.key(), ids)
                if cached is not None:
                    vocab, tf, doc_len, df = cached
                    base = bm25_mod.BM25Index(ids, vocab, tf, doc_len, df, params)
                else:
                    base = bm25_mod.build_index(ids, [tokenize(t, tok) for _, t in texts], params)
                    save_counts(self.cache_dir, table, digest, tok.key(), ids, base.vocab, base.tf, base.doc_len, base.df)
                self._bm25_counts[(table, tok.key())] = base
                freeze_loaded()
            index = base.with_params(params)
            self._bm25[key] = index
            while len(self._bm25) > BM25_PARAM_SLOTS:
                self._bm25.popitem(last=False)
            return index

    def docs_idf(self, cfg: RetrieveConfig):
        """term -> idf in the docs (the default tokenizer): how rare a shared identifier is."""
        index = self.bm25_index("docs_chunks", TokenizerConfig(), cfg)
        return lambda term: float(bm25_mod.idf(index.n_docs, index.df_of(term.lower())))

    def reranker(self, name: str):
        with self._lock:
            if name not in self._rerankers:
                from ..models import reranker as rr

                if name == "nanoranker":
                    self._rerankers[name] = rr.NanoRanker()
                elif name == "cross-encoder":
                    if not self.cross_encoder_path:
                        raise ConfigError("reranker 'cross-encoder' needs --cross-encoder PATH (a local CrossEncoder directory)")
                    self._rerankers[name] = rr.LocalCrossEncoder(self.cross_encoder_path)
                elif name == "qwen":
                    if self.llm is None:
                        raise ConfigError("reranker 'qwen' needs an LLM: --llm-gguf, --llm-url or the bundled Qwen")
                    self._rerankers[name] = rr.QwenPointwise(self.llm)
            return self._rerankers[name]

    def warm(self, cfg: RetrieveConfig | None = None, embed: bool = True) -> None:
        cfg = cfg or RetrieveConfig()
        tok = tokenizer_of(cfg)
        for table in TABLES:
            self.bm25_index(table, tok, cfg)
        if embed:
            self.embedder.encode(["func _ready():\n\tpass"])

    # -- the runner ----------------------------------------------------------------------
    def retrieve(self, chunk: str, strategy: str = "F", cfg: RetrieveConfig | None = None, explain: bool = True,
                 context: RequestContext | dict | None = None) -> RetrieveResult:
        """`context`: the project around the chunk (`RequestContext`, or its JSON object), optional."""
        chunk = check_chunk(chunk)
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
                raise StoreUnavailable(f"the database is unreachable ({self.db.describe()}): {str(e).strip()}") from e

    def _retrieve(self, chunk: str, strategy: str, cfg: RetrieveConfig, explain: bool, context: RequestContext | None = None) -> RetrieveResult:
        if not any(self.records(t) for t in cfg.tables):
            raise StoreError("the database is empty: run `godot-rag ingest` and `load` (or `scripts/main.sh`); "
                             f"it is the {self.db.describe()}")
        t0 = time.perf_counter()
        ctx = QueryContext(chunk=chunk, strategy=strategy, cfg=cfg, retriever=self, explain=explain, context=context)
        ctx.trace.chunk_chars = len(chunk)
        ctx.trace.context = context.to_trace() if context is not None else None
        try:
            pool = run_stages(ctx, STRATEGIES[strategy].stages)
        except Fallback as fb:
            ctx.trace.llm_fallback = fb.reason
            ctx = QueryContext(chunk=chunk, strategy=strategy, cfg=cfg, retriever=self, explain=explain, trace=ctx.trace,
                               context=context)
            pool = run_stages(ctx, STRATEGIES[fb.strategy].stages)
        results = [c for t in cfg.tables for c in ctx.table_lists(pool, t)]
        ctx.trace.total_ms = round((time.perf_counter() - t0) * 1000, 3)
        k = {t: cfg.k for t in cfg.tables} | ({"api_reference": cfg.k_api} if strategy == "F" else {})
        return RetrieveResult(strategy=strategy, chunk_text=chunk, chunk_sha256=hashlib.sha256(chunk.encode()).hexdigest(),
                              k=k, config=cfg.to_dict(), results=results, rejected=ctx.rejected,
                              cut=ctx.cut if explain else [], trace=ctx.trace)


def run_stages(ctx: QueryContext, stages) -> Pool:
    """Each stage in order, timed, with its summary in the query trace."""
    pool: Pool = {}
    for stage in stages:
        ctx.trace.stage_list.append(stage.name)
        ctx._notes, ctx._set_aside_ms = {}, 0.0
        t = time.perf_counter()
        pool = stage.run(ctx, pool)
        ms = (time.perf_counter() - t) * 1000 - ctx._set_aside_ms
        ctx.trace.stages.append(StageLog(stage=stage.name, ms=round(ms, 3), info=ctx._notes))
    return pool


__all__ = ["Retriever", "ChunkError", "check_chunk", "Candidate", "RetrieveResult"]
