"""The six strategies, assembled from the stages. I/O goes through `store/` and `models/`;
each stage below adds its own score and explanation to the candidates."""
from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path


from ..ingest.schema import TABLES
from ..store import queries
from ..store.bm25_cache import load_or_build
from ..store.db import Database, StoreError
from . import bm25 as bm25_mod
from .config import MAX_CHUNK_CHARS, ConfigError, RetrieveConfig, check_strategy
from .codematch import apply_codematch
from .fuse import fuse_lists, merge_segments
from .rerank import apply_rerank, rerank_text
from .segment import split_segments
from .tokenize import TokenizerConfig, local_names, tokenize
from .types import Candidate, RetrieveResult, StageLog
from ..classref import ClassReference
from ..gdscript import parse_chunk
from .codematch import renameable_names
from .resolve import resolve_uses
from .validate import ValidationContext, idf_from_df, validate
from .version import CODE_RENAME_TYPES, version_context


BOLD_NAME_RE = re.compile(r"\*\*(@?[A-Za-z_\\][A-Za-z0-9_\\]*)\*\*")


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
    return chunk


class Timer:
    def __init__(self):
        self.logs: list[StageLog] = []

    @contextmanager
    def stage(self, name: str, info: dict | None = None):
        info = {} if info is None else info
        t = time.perf_counter()
        yield info
        self.logs.append(StageLog(stage=name, ms=round((time.perf_counter() - t) * 1000, 3), info=info))


def local_weights(chunk: str, cfg: RetrieveConfig) -> dict[str, float] | None:
    """BM25 query-term weights for the names the chunk declares itself (None when not down-weighted)."""
    if cfg.local_weight == 1.0:
        return None
    return {n: cfg.local_weight for n in local_names(chunk)}


class Retriever:
    """Holds the loaded records, BM25 indexes and lazily loaded models for one database."""

    def __init__(self, db: Database, *, cache_dir: Path | None = None, embedder=None, llm=None,
                 cross_encoder_path: str | None = None):
        self.db = db
        self.cache_dir = Path(cache_dir) if cache_dir else db.data_dir.parent / "cache"
        self._embedder = embedder
        self.llm = llm
        self.cross_encoder_path = cross_encoder_path
        self._records: dict[str, dict[str, dict]] = {}
        self._texts: dict[str, list[tuple[str, str]]] = {}
        self._bm25: dict[tuple, bm25_mod.BM25Index] = {}
        self._rerankers: dict[str, object] = {}
        self._class_reference: ClassReference | None = None
        self._api_index: dict | None = None
        self._version_names: tuple[set[str], set[str]] | None = None
        self._lock = threading.RLock()
        self._local = threading.local()

    # -- resources (I/O at the edges) -------------------------------------------------
    def conn(self):
        c = getattr(self._local, "conn", None)
        if c is None or c.closed:
            c = self.db.connect(autocommit=True)
            self._local.conn = c
        return c

    @property
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                from ..models.embedder import Embedder

                meta = queries_meta(self.conn(), "embedding") or {}
                self._embedder = Embedder(meta.get("model", "all-MiniLM-L6-v2"), pooling=meta.get("pooling", "window-mean"),
                                          precision=meta.get("precision", "int8"))
            return self._embedder

    def records(self, table: str) -> dict[str, dict]:
        with self._lock:
            if table not in self._records:
                rows = queries.fetch_records(self.conn(), table)
                self._records[table] = {rid: payload for rid, payload, _, _ in rows}
                self._texts[table] = [(rid, text) for rid, _, text, _ in rows]
            return self._records[table]

    def class_reference(self) -> ClassReference:
        """The Godot 4 API that `load` stored beside the records (empty if the JSONL had none)."""
        with self._lock:
            if self._class_reference is None:
                self._class_reference = ClassReference(queries_meta(self.conn(), "class_reference") or {})
            return self._class_reference

    def api_index(self) -> dict:
        """Where the class reference documents each member: (class, member) -> docs chunk id,
        class -> its page's first chunk, page path -> class."""
        with self._lock:
            if self._api_index is None:
                ref = self.class_reference()
                page_class = {info["page"]: cls for cls, info in ref.classes.items()}
                members: dict[tuple[str, str], str] = {}
                first: dict[str, str] = {}
                for rid, rec in self.records("docs_chunks").items():
                    cls = page_class.get((rec.get("metadata") or {}).get("page_path"))
                    if cls is None:
                        continue
                    first.setdefault(cls, rid)
                    sym = rec.get("symbol") or ""
                    if sym.startswith(cls + "."):
                        members[(cls, sym.split(".", 1)[1])] = rid  # the member's own entry wins
                    for m in (rec.get("metadata") or {}).get("members") or []:
                        members.setdefault((cls, m), rid)
                    # Constants inside an enum entry, and table rows, are found by their bold name.
                    for m in BOLD_NAME_RE.findall(rec.get("content") or ""):
                        members.setdefault((cls, m.replace("\\", "")), rid)
                self._api_index = {"members": members, "first": first, "page_class": page_class}
            return self._api_index

    def version_names(self) -> tuple[set[str], set[str]]:
        """(Godot 3 names the converter renames, Godot 4 names they became), from the api_mapping records."""
        with self._lock:
            if self._version_names is None:
                ref = self.class_reference()
                recs = [r for r in self.records("api_mapping").values() if r["change_type"] in CODE_RENAME_TYPES]
                old = {r["source_api"] for r in recs}
                new = {r["target_api"] for r in recs if r["target_api"] not in old and ref.exists(r["target_api"])
                       and r["change_type"] in ("class_rename", "builtin_type_rename", "method_rename")}
                self._version_names = (old, new)
            return self._version_names

    def bm25_index(self, table: str, tok: TokenizerConfig, cfg: RetrieveConfig) -> bm25_mod.BM25Index:
        key = (table, tok.key(), cfg.k1, cfg.b)
        with self._lock:
            if key not in self._bm25:
                self.records(table)
                texts = self._texts[table]
                digest = queries.table_digest(self.conn(), table)
                index, _ = load_or_build(self.cache_dir, table, digest, tok.key(), [r for r, _ in texts],
                                         lambda: [tokenize(t, tok) for _, t in texts], bm25_mod.BM25Params(cfg.k1, cfg.b))
                self._bm25[key] = index
            return self._bm25[key]

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
        tok = TokenizerConfig(parts=cfg.tokenizer_parts, dotted=cfg.tokenizer_dotted)
        for table in TABLES:
            self.bm25_index(table, tok, cfg)
        if embed:
            self.embedder.encode(["func _ready():\n\tpass"])

    # -- stages ------------------------------------------------------------------------
    def _bm25_list(self, table, tokens, index, n, explain: bool, weights: dict | None = None) -> list[Candidate]:
        scores = bm25_mod.score(index, tokens, weights)
        recs = self.records(table)
        out = []
        for rank, i in enumerate(bm25_mod.top_k(scores, n), 1):
            rid = index.ids[i]
            info = {"score": round(float(scores[i]), 4), "rank": rank}
            c = Candidate(table=table, id=rid, payload=recs[rid], score=float(scores[i]), rank=rank, source="bm25")
            c.add_stage("bm25", info)
            out.append(c)
        return out

    def _explain_bm25(self, cands: list[Candidate], query: dict, cfg: RetrieveConfig) -> None:
        """Per-term explanation (df, tf, idf, contribution) for the candidates that are shown.
        Computed after the cut: explaining every one of the N candidates would cost more than scoring."""
        tok = TokenizerConfig(parts=cfg.tokenizer_parts, dotted=cfg.tokenizer_dotted)
        tokens, weights = query["tokens"], query["weights"]
        slices = {}
        for c in cands:
            info = c.trace.get("bm25")
            if info is None or "matched_terms" in info:
                continue
            index = self.bm25_index(c.table, tok, cfg)
            if c.table not in slices:
                slices[c.table] = (bm25_mod.query_slice(index, tokens), {rid: i for i, rid in enumerate(index.ids)})
            sub, pos = slices[c.table]
            c.trace["bm25"] = {**bm25_mod.explain(index, tokens, pos[c.id], sub, weights), **info}

    def _dense_list(self, table, vector, n, cfg) -> list[Candidate]:
        recs = self.records(table)
        out = []
        for rank, (rid, cos) in enumerate(queries.vector_search(self.conn(), table, vector, n, cfg.ef_search), 1):
            c = Candidate(table=table, id=rid, payload=recs[rid], score=cos, rank=rank, source="embedding")
            c.add_stage("embedding", {"cosine": round(cos, 6), "rank": rank})
            out.append(c)
        return out

    # -- strategies --------------------------------------------------------------------
    def retrieve(self, chunk: str, strategy: str = "F", cfg: RetrieveConfig | None = None, explain: bool = True) -> RetrieveResult:
        chunk = check_chunk(chunk)
        strategy = check_strategy(strategy)
        cfg = cfg or RetrieveConfig()
        if not any(self.records(t) for t in cfg.tables):
            raise StoreError("the database is empty: run `godot-rag ingest` and `load` (or `scripts/main.sh`); "
                             f"it is the {self.db.describe()}")
        timer = Timer()
        t0 = time.perf_counter()
        trace: dict = {"chunk_chars": len(chunk)}
        if strategy == "A":
            results, rejected = self._strategy_a(chunk, cfg, timer, trace)
        elif strategy == "E":
            from .profile import run_profile_strategy

            results, rejected = run_profile_strategy(self, chunk, cfg, timer, trace, explain)
        else:
            results, rejected = self._hybrid(chunk, strategy, cfg, timer, trace, explain)
        if explain and "bm25_query" in trace:
            with timer.stage("explain"):
                self._explain_bm25(results + rejected, trace.pop("bm25_query"), cfg)
        trace.pop("bm25_query", None)
        trace["stages"] = [log.model_dump() for log in timer.logs]
        trace["total_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        return RetrieveResult(strategy=strategy, chunk_text=chunk, chunk_sha256=hashlib.sha256(chunk.encode()).hexdigest(),
                              k={t: cfg.k for t in cfg.tables} | ({"api_reference": cfg.k_api} if strategy == "F" else {}),
                              config=cfg.to_dict(), results=results,
                              rejected=rejected, trace=trace)

    def _strategy_a(self, chunk, cfg, timer, trace):
        results = []
        conn = self.conn()
        trace["tables"] = {}
        for table in cfg.tables:
            recs = self.records(table)
            with timer.stage(f"tsquery:{table}") as info:
                found = queries.tsquery_search(conn, table, chunk, cfg.k)
                info.update(tsquery=found["tsquery"], tokens=found["tokens"], row_count=found["row_count"])
            trace["tsquery"] = found["tsquery"]
            trace["tsquery_tokens"] = found["tokens"]
            table_trace = {"row_count": found["row_count"]}
            if found["row_count"] == 0:
                with timer.stage(f"diagnose:{table}") as info:
                    diag = queries.tsquery_diagnosis(conn, table, found["tokens"])
                    info.update(diag)
                table_trace["zero_hit_diagnosis"] = diag
            trace["tables"][table] = table_trace
            for rank, (rid, score) in enumerate(found["rows"], 1):
                c = Candidate(table=table, id=rid, payload=recs[rid], score=score, rank=rank, source="tsquery")
                c.add_stage("tsquery", {"ts_rank_cd": round(score, 6), "rank": rank, "tsquery": found["tsquery"]})
                results.append(c)
        return results, []

    def candidate_lists(self, texts: list[str], strategy: str, cfg: RetrieveConfig, timer: Timer, explain: bool,
                        tables: list[str], n_for: dict[str, int] | None = None, dense_all: bool = False):
        """BM25 and/or embedding lists for each text: {table: [ {retriever: [Candidate]} per text ]}."""
        tok = TokenizerConfig(parts=cfg.tokenizer_parts, dotted=cfg.tokenizer_dotted)
        use_bm25 = strategy in ("B", "D", "E", "F")
        use_dense = strategy in ("C", "D", "E", "F")
        token_lists = []
        with timer.stage("tokenize") as info:
            token_lists = [tokenize(t, tok) for t in texts]
            weights = local_weights(texts[0], cfg)
            locals_ = sorted(weights or {})
            counts = Counter(token_lists[0])
            info.update(tokenizer=tok.key(), tokens=len(token_lists[0]), unique=len(counts),
                        top=counts.most_common(40), local_names=locals_, local_weight=cfg.local_weight)
        vectors = None
        if use_dense:
            # Segments get BM25 lists only: a second embedding pass per segment costs more than it adds.
            dense_texts = texts if dense_all else texts[:1]
            with timer.stage("embed_query") as info:
                vectors = self.embedder.encode(dense_texts)
                info.update(model=self.embedder.key, texts=len(dense_texts),
                            windows=[self.embedder.window_count(t) for t in dense_texts])
        lists: dict[str, list[dict]] = {}
        for table in tables:
            n = (n_for or {}).get(table, cfg.candidates)
            per_text = []
            if use_bm25:
                index = self.bm25_index(table, tok, cfg)
            # Segments only pay off for the docs; the other tables are matched on the whole chunk.
            table_texts = texts if table == "docs_chunks" else texts[:1]
            for ti, text in enumerate(table_texts):
                entry = {}
                if use_bm25:
                    with timer.stage(f"bm25:{table}", {"text": ti}) as info:
                        entry["bm25"] = self._bm25_list(table, token_lists[ti], index, n, explain, weights)
                        info.update(hits=len(entry["bm25"]), n_docs=index.n_docs)
                if use_dense and ti < len(vectors):
                    with timer.stage(f"embedding:{table}", {"text": ti}) as info:
                        entry["embedding"] = self._dense_list(table, vectors[ti], n, cfg)
                        info.update(hits=len(entry["embedding"]))
                per_text.append(entry)
            lists[table] = per_text
        return lists, token_lists

    def _fuse_table(self, per_text: list[dict], strategy: str, cfg: RetrieveConfig, timer: Timer, table: str,
                    texts: list[str]) -> list[Candidate]:
        weights = {"bm25": cfg.weight_bm25, "embedding": cfg.weight_embedding}
        fused_per_text = []
        with timer.stage(f"fuse:{table}") as info:
            for entry in per_text:
                if strategy in ("B", "C"):
                    fused_per_text.append(next(iter(entry.values())))
                else:
                    fused_per_text.append(fuse_lists(entry, weights, cfg.fusion, cfg.rrf_k))
            info.update(method=cfg.fusion if strategy not in ("B", "C") else None,
                        union=len(fused_per_text[0]),
                        sources=dict(Counter(c.source for c in fused_per_text[0])))
        if strategy not in ("B", "C") and cfg.codematch_alpha and table == "docs_chunks":
            with timer.stage(f"codematch:{table}") as info:
                fused_per_text = [apply_codematch(t, lst, cfg.codematch_alpha) for t, lst in zip(texts, fused_per_text)]
                info.update(alpha=cfg.codematch_alpha, with_match=sum(1 for c in fused_per_text[0] if c.trace["codematch"]["ratio"] > 0))
        if len(fused_per_text) > 1:
            with timer.stage(f"segments:{table}") as info:
                merged = merge_segments(fused_per_text[0], fused_per_text[1:])
                info.update(segments=len(fused_per_text) - 1, merged=len(merged))
            return merged
        return fused_per_text[0]

    def _hybrid(self, chunk, strategy, cfg, timer, trace, explain):
        texts = [chunk]
        # C stays a single-list baseline; B, D and F add per-segment BM25 lists for multi-topic chunks.
        if cfg.segments and strategy in ("B", "D", "F"):
            segs = split_segments(chunk)
            if len(segs) > 1:
                texts += segs
                trace["segments"] = segs
        n_for = None
        if strategy == "F":
            n_for = {t: max(cfg.candidates, 200) if t == "api_mapping" else cfg.candidates for t in cfg.tables}
            with timer.stage("parse") as info:
                facts = parse_chunk(chunk)
                trace["gdscript"] = facts.summary()
                info.update(trace["gdscript"])
            with timer.stage("resolve") as info:
                resolution = resolve_uses(facts, self.class_reference(), cfg.extends, cfg.resolve_max_hops)
                info.update(uses=len(resolution.uses), unresolved=len(resolution.unresolved),
                            own_class=resolution.own_class, own_class_from=resolution.own_class_from)
            trace["resolve"] = resolution.to_trace()
        lists, token_lists = self.candidate_lists(texts, strategy, cfg, timer, explain, cfg.tables, n_for)
        trace["tokens"] = token_lists[0]
        trace["bm25_query"] = {"tokens": token_lists[0],
                               "weights": local_weights(chunk, cfg)}
        per_table = {t: self._fuse_table(lists[t], strategy, cfg, timer, t, texts) for t in cfg.tables}
        # Ranked ids per stage (ids only), so a failure can be traced to the stage that lost it.
        ids = trace.setdefault("candidate_ids", {})
        for t in cfg.tables:
            whole = lists[t][0]
            ids[t] = {name: [c.id for c in cands] for name, cands in whole.items()}
            ids[t]["union"] = [c.id for c in per_table[t]]
        if strategy != "F":
            return [c for t in cfg.tables for c in per_table[t][: cfg.k]], []
        api = self._api_list(resolution, cfg, timer) if "docs_chunks" in cfg.tables else []
        ids["docs_chunks"]["api"] = [c.id for c in api] if "docs_chunks" in ids else []
        return self._finish_f(chunk, per_table, api, facts, resolution, cfg, timer, trace)

    def _api_list(self, resolution, cfg, timer) -> list[Candidate]:
        """The third candidate list: the member entry that documents each resolved use."""
        index = self.api_index()
        recs = self.records("docs_chunks")
        out: dict[str, Candidate] = {}
        with timer.stage("api:docs_chunks") as info:
            for use in resolution.uses:
                rid = index["members"].get((use.cls, use.member)) or index["first"].get(use.cls)
                if rid is None:
                    continue
                entry = {"api": use.api, "line": use.line, "col": use.col, "code": use.text, "via": use.via,
                         "entry": "member" if (use.cls, use.member) in index["members"] else "class page"}
                if rid in out:
                    out[rid].trace["api"]["uses"].append(entry)
                    continue
                c = Candidate(table="docs_chunks", id=rid, payload=recs[rid], score=cfg.weight_api, rank=len(out) + 1,
                              source="api", group="api_reference")
                c.add_stage("api", {"rank": len(out) + 1, "weight": cfg.weight_api, "score": cfg.weight_api, "uses": [entry]})
                out[rid] = c
            info.update(uses=len(resolution.uses), records=len(out))
        return list(out.values())

    def _finish_f(self, chunk, per_table, api, facts, resolution, cfg, timer, trace):
        # Rerank the docs candidates (before any cut), then validate everything.
        docs = per_table.get("docs_chunks", [])
        if docs and cfg.reranker != "none":
            pool, rest = docs[: cfg.rerank_top], docs[cfg.rerank_top:]
            with timer.stage("rerank:docs_chunks") as info:
                model = self.reranker(cfg.reranker)
                scores = model.score(chunk, [rerank_text(c) for c in pool])
                reranked = apply_rerank(pool, scores, cfg.reranker, cfg.rerank_weight)
                moves = [c.trace["rerank"]["rank_change"] for c in reranked]
                info.update(backend=cfg.reranker, reranked=len(pool), moved=sum(1 for m in moves if m))
            per_table["docs_chunks"] = reranked + rest
            trace["candidate_ids"]["docs_chunks"]["rerank"] = [c.id for c in per_table["docs_chunks"]]
        idf = self._idf(cfg)
        pool = []
        api_by_id = {c.id: c for c in api}
        for table, cands in per_table.items():
            if table != "docs_chunks":
                pool += cands
                continue
            for c in cands[: cfg.rerank_top]:
                if c.id in api_by_id:  # found by BM25/embedding and resolved: one candidate, both sources
                    c = c.derive()
                    before = c.score
                    c.source = f"{c.source}+api"
                    c.group = "api_reference"
                    c.score = before + cfg.weight_api  # the api source's own weight, added to the fused score
                    c.add_stage("api", {**api_by_id.pop(c.id).trace["api"], "weight": cfg.weight_api,
                                        "score_before": round(before, 6), "score": round(c.score, 6)})
                pool.append(c)
        pool += list(api_by_id.values())
        ref = self.class_reference()
        old_names, new_names = self.version_names()
        with timer.stage("version") as info:
            version = version_context(facts, resolution, new_names, old_names, cfg.godot_version)
            info.update(version.to_trace())
        vctx = ValidationContext(facts=facts, resolution=resolution, ref=ref, version=version, idf=idf,
                                 class_of_page=self.api_index()["page_class"],
                                 renameable=renameable_names(facts, ref), min_direct_evidence=cfg.min_direct_evidence)
        with timer.stage("validate") as info:
            judged = validate(vctx, pool)
            info.update(layer="deterministic", judged=len(judged),
                        accepted=sum(c.verdict == "accept" for c in judged))
        trace["version"] = version.to_trace()  # the validator adds the Godot 3 uses it found
        if cfg.validator_llm:
            from .judge import judge_candidates

            judged = judge_candidates(self, chunk, judged, cfg, timer, trace)
        results, rejected = [], []
        for table in cfg.tables:
            mine = [c for c in judged if c.table == table]
            for c in mine:
                conf = c.trace.get("judge", c.trace["validate"]).get("confidence", c.trace["validate"]["confidence"])
                c.score = float(c.score) * (0.5 + 0.5 * float(conf))
            acc = sorted([c for c in mine if c.verdict == "accept"], key=lambda c: (-c.score, c.id))
            rej = sorted([c for c in mine if c.verdict != "accept"], key=lambda c: (-c.score, c.id))
            if table == "docs_chunks":
                # Two groups, each with its own k: the best guides, then the member entries of the
                # API the chunk calls (in the order the chunk uses them) that the guides did not already hold.
                guides = [c for c in acc if c.group != "api_reference"]
                api_acc = [c for c in acc if c.group == "api_reference"]
                # Highest score first (found by BM25/embedding too), then in the order the chunk uses them.
                api_acc.sort(key=lambda c: (-round(c.score, 6), min(u["line"] for u in c.trace["api"]["uses"]), c.id))
                acc = guides[: cfg.k] + api_acc[: cfg.k_api]
                for c in acc:
                    c.group = c.group or "guides"
            else:
                acc = acc[: cfg.k]
            for i, c in enumerate(acc):
                c.rank = i + 1
            results += acc
            rejected += rej[: cfg.k]
        return results, rejected

    def _idf(self, cfg: RetrieveConfig):
        index = self.bm25_index("docs_chunks", TokenizerConfig(), cfg)
        vocab, df = index.vocab, index.df

        def get(term, default=0):
            j = vocab.get(term)
            return default if j is None else int(df[j])

        return idf_from_df(get, index.n_docs)


def queries_meta(conn, key):
    from ..store.schema import get_meta

    return get_meta(conn, key)
