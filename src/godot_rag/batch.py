"""`godot-rag retrieve --batch`: many chunks, one process per core, one JSON result per line on stdout
(in input order)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tqdm import tqdm

from .jsonlines import iter_jsonl
from .store.db import database_workers


def read_batch(path: Path) -> list[tuple[str, object]]:
    """(chunk, context) per line. A line's `"context"` object (the project around the chunk) is validated
    here, so a bad one names its file, line and field before anything runs."""
    from .retrieve.config import ConfigError
    from .retrieve.project_context import RequestContext

    chunks = []
    for n, rec in iter_jsonl(path):
        text = rec.get("chunkText", rec.get("chunk_text")) if isinstance(rec, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path}:{n}: field 'chunkText' (or 'chunk_text') must be a string")
        try:
            line_context = RequestContext.parse(rec.get("context"))
        except ConfigError as e:
            raise ValueError(f"{path}:{n}: {e}") from None
        chunks.append((text, line_context))
    return chunks


def merged(base, line):
    """A line's context over the command's (`--project`/`--file`): the fields the line gives win, and a
    line without `project_symbols` keeps the project's (and its built lookups)."""
    if base is None or line is None:
        return line or base
    if "project_symbols" in line.model_fields_set:
        return line
    return base.model_copy(update={k: getattr(line, k) for k in line.model_fields_set})


_worker = {}


def _init_worker(dsn, data_dir, strategy, cfg_dict, llm_spec, cross_encoder=None, context=None):
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
    _worker["strategy"], _worker["cfg"], _worker["context"] = strategy, cfg, context
    _worker["retriever"].warm(cfg, embed=strategy != "B")


def _retrieve_line(retriever, strategy, cfg, n: int, item: tuple[str, object], base=None) -> str:
    """One result line; a bad chunk gives an error line for that input line, and the batch goes on.
    `base`: the command's context (`--project`/`--file`), sent to each worker once."""
    from .retrieve.pipeline import ChunkError

    chunk, context = item
    context = merged(base, context)
    try:
        return retriever.retrieve(chunk, strategy, cfg, explain=False, context=context).model_dump_json()
    except ChunkError as e:
        return json.dumps({"line": n, "error": str(e), "status": e.status})


def _retrieve_one(item: tuple[int, tuple[str, object]]) -> str:
    return _retrieve_line(_worker["retriever"], _worker["strategy"], _worker["cfg"], *item, base=_worker["context"])


def run_batch(retriever, path: Path, strategy: str, cfg, workers: int = 2, quiet: bool = False,
              llm_spec: dict | None = None, cross_encoder: str | None = None, context=None) -> dict:
    chunks = read_batch(path)
    t0 = time.perf_counter()
    if workers <= 1:
        retriever.warm(cfg, embed=strategy != "B")
        results = (_retrieve_line(retriever, strategy, cfg, n, c, context) for n, c in enumerate(chunks, 1))
        for res in tqdm(results, total=len(chunks), desc="retrieve", disable=quiet, file=sys.stderr):
            sys.stdout.write(res + "\n")
    else:
        db = retriever.db
        try:
            with database_workers(db, workers, _init_worker,
                                  (db.dsn, str(db.data_dir), strategy, cfg.to_dict(), llm_spec, cross_encoder, context)) as pool:
                results = pool.imap(_retrieve_one, list(enumerate(chunks, 1)), chunksize=4)
                for res in tqdm(results, total=len(chunks), desc="retrieve", disable=quiet, file=sys.stderr):
                    sys.stdout.write(res + "\n")
        finally:
            db.stop()  # the last handle: the embedded server goes when the batch ends, however it ends
    seconds = time.perf_counter() - t0
    summary = {"chunks": len(chunks), "seconds": round(seconds, 2), "chunks_per_second": round(len(chunks) / seconds, 2),
               "workers": workers}
    print(json.dumps({"batch_summary": summary}), file=sys.stderr)
    return summary
