"""`godot-rag retrieve --batch`: many chunks, one process per core, JSON lines on stdout in input order
(`--format`: one line per accepted record, or one result per chunk; formats.py)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .formats import check_chunk_id, error_line, json_lines
from .jsonlines import iter_jsonl
from .store.db import database_workers


def read_batch(path: Path) -> list[tuple[int, str | int | None, str]]:
    """(line number, the line's `id` or None, chunk text) per line."""
    chunks = []
    for n, rec in iter_jsonl(path):
        text = rec.get("chunkText", rec.get("chunk_text")) if isinstance(rec, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path}:{n}: field 'chunkText' (or 'chunk_text') must be a string")
        try:
            cid = check_chunk_id(rec.get("id"))
        except ValueError as e:
            raise ValueError(f"{path}:{n}: field 'id' {e}") from None
        chunks.append((n, cid, text))
    return chunks


_worker = {}


def _init_worker(dsn, data_dir, strategy, cfg_dict, llm_spec, cross_encoder=None, fmt="records"):
    """Each process has its own Retriever: the GIL-bound stages then run on both cores."""
    from .models.llm import make_llm
    from .retrieve.config import RetrieveConfig
    from .retrieve.pipeline import Retriever
    from .store.db import Database

    cfg = RetrieveConfig.from_mapping(cfg_dict)
    try:  # one process per core: torch inside each must not spread over both cores too
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    llm = make_llm(**llm_spec) if llm_spec else None
    db = Database(dsn=dsn, data_dir=data_dir)
    db.release_at_worker_exit()
    _worker["retriever"] = Retriever(db, llm=llm, cross_encoder_path=cross_encoder)
    _worker["strategy"], _worker["cfg"], _worker["format"] = strategy, cfg, fmt
    _worker["retriever"].warm(cfg, embed=strategy != "B")


def _retrieve_line(retriever, strategy, cfg, fmt: str, item: tuple[int, str | int | None, str]) -> str:
    """The output lines of one input line (each ending in a newline); a bad chunk gives an error line for
    that input line, and the batch goes on. Every line names its chunk: the input's `id`, else its line."""
    from .retrieve.pipeline import ChunkError

    n, cid, chunk = item
    extra = {"line": n} | ({"id": cid} if cid is not None else {})
    try:
        result = retriever.retrieve(chunk, strategy, cfg, explain=False)
    except ChunkError as e:
        return error_line(str(e), e.status, n if cid is None else cid, extra)
    return json_lines(result, fmt, chunk=n if cid is None else cid, extra=extra)


def _retrieve_one(item: tuple[int, str | int | None, str]) -> str:
    return _retrieve_line(_worker["retriever"], _worker["strategy"], _worker["cfg"], _worker["format"], item)


def run_batch(retriever, path: Path, strategy: str, cfg, workers: int = 2, quiet: bool = False,
              llm_spec: dict | None = None, cross_encoder: str | None = None, fmt: str = "records") -> dict:
    chunks = read_batch(path)
    t0 = time.perf_counter()
    if workers <= 1:
        retriever.warm(cfg, embed=strategy != "B")
        results = (_retrieve_line(retriever, strategy, cfg, fmt, item) for item in chunks)
        for res in tqdm(results, total=len(chunks), desc="retrieve", disable=quiet, file=sys.stderr):
            sys.stdout.write(res)
    else:
        db = retriever.db
        try:
            with database_workers(db, workers, _init_worker,
                                  (db.dsn, str(db.data_dir), strategy, cfg.to_dict(), llm_spec, cross_encoder, fmt)) as pool:
                results = pool.imap(_retrieve_one, chunks, chunksize=4)
                for res in tqdm(results, total=len(chunks), desc="retrieve", disable=quiet, file=sys.stderr):
                    sys.stdout.write(res)
        finally:
            db.stop()  # the last handle: the embedded server goes when the batch ends, however it ends
    seconds = time.perf_counter() - t0
    summary = {"chunks": len(chunks), "seconds": round(seconds, 2), "chunks_per_second": round(len(chunks) / seconds, 2),
               "workers": workers, "format": fmt}
    print(json.dumps({"batch_summary": summary}), file=sys.stderr)
    return summary
