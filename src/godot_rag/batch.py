"""`godot-rag retrieve --batch`: many chunks, one process per core, one JSON result per line on stdout
(in input order). A bad line (not UTF-8, not JSON, not an object with a usable chunkText) gets an error
line, `{"line": N, "error": ..., "status": ...}`, in its place, and the batch goes on; `strict` refuses
the whole batch instead, naming every bad line."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Iterator

from tqdm import tqdm

from .chunk_text import ChunkTextError, check_chunk_text
from .jsonlines import read_jsonl_lines
from .store.db import database_workers


class BadBatch(ValueError):
    """--strict: the batch has bad lines, and none of it is run."""


def _line_problem(rec) -> tuple[str, int] | None:
    """What is wrong with one parsed line, and its status; None for a good line."""
    if not isinstance(rec, dict):
        return f"a line must be a JSON object with a chunkText field, not {type(rec).__name__}", 422
    if "chunkText" not in rec and "chunk_text" not in rec:
        return "field 'chunkText' (or 'chunk_text') is missing", 422
    try:
        check_chunk_text(rec.get("chunkText", rec.get("chunk_text")))
    except ChunkTextError as e:
        return str(e), e.status
    return None


def read_batch(path: Path) -> list[tuple[int, str | None, dict | None]]:
    """(line number, chunk, None) per good line, (line number, None, its error line) per bad one."""
    items = []
    for n, rec, malformed in read_jsonl_lines(path):
        problem = (malformed, 400) if malformed else _line_problem(rec)
        if problem is None:
            items.append((n, rec.get("chunkText", rec.get("chunk_text")), None))
        else:
            items.append((n, None, {"line": n, "error": problem[0], "status": problem[1]}))
    return items


_worker = {}


def _init_worker(dsn, data_dir, strategy, cfg_dict, llm_spec, cross_encoder=None):
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
    _worker["strategy"], _worker["cfg"] = strategy, cfg
    _worker["retriever"].warm(cfg, embed=strategy != "B")


def _retrieve_line(retriever, strategy, cfg, n: int, chunk: str) -> str:
    """One result line; a bad chunk gives an error line for that input line, and the batch goes on."""
    from .models.llm import LLMError
    from .store.db import StoreError

    try:
        return retriever.retrieve(chunk, strategy, cfg, explain=False).model_dump_json()
    except ChunkTextError as e:
        return json.dumps({"line": n, "error": str(e), "status": e.status})
    except (StoreError, LLMError):
        raise  # the database or the LLM is down: every line would fail
    except Exception as e:  # noqa: BLE001 - one line's failure is its error line; the batch goes on
        return json.dumps({"line": n, "error": f"internal error: {type(e).__name__}: {str(e)[:200]}", "status": 500})


def _retrieve_one(item: tuple[int, str]) -> str:
    return _retrieve_line(_worker["retriever"], _worker["strategy"], _worker["cfg"], *item)


def _in_order(items: list, results) -> Iterator[str]:
    """Each input line's output line, in input order: its error line, or the next result."""
    for _n, _chunk, bad in items:
        yield json.dumps(bad) if bad else next(results)


def run_batch(retriever, path: Path, strategy: str, cfg, workers: int = 2, quiet: bool = False,
              llm_spec: dict | None = None, cross_encoder: str | None = None, strict: bool = False) -> dict:
    items = read_batch(path)
    bad = [b for _n, _c, b in items if b]
    if strict and bad:
        raise BadBatch(f"{path}: {len(bad)} bad line(s); --strict runs none of the batch: "
                       + "; ".join(f"{path}:{b['line']}: {b['error']}" for b in bad))
    good = [(n, c) for n, c, b in items if not b]
    t0 = time.perf_counter()
    if workers <= 1 or not good:
        if good:
            retriever.warm(cfg, embed=strategy != "B")
        results = (_retrieve_line(retriever, strategy, cfg, n, c) for n, c in good)
        for res in tqdm(_in_order(items, results), total=len(items), desc="retrieve", disable=quiet, file=sys.stderr):
            sys.stdout.write(res + "\n")
    else:
        db = retriever.db
        try:
            with database_workers(db, workers, _init_worker,
                                  (db.dsn, str(db.data_dir), strategy, cfg.to_dict(), llm_spec, cross_encoder)) as pool:
                results = pool.imap(_retrieve_one, good, chunksize=4)
                for res in tqdm(_in_order(items, results), total=len(items), desc="retrieve", disable=quiet,
                                file=sys.stderr):
                    sys.stdout.write(res + "\n")
        finally:
            db.stop()  # the last handle: the embedded server goes when the batch ends, however it ends
    seconds = time.perf_counter() - t0
    summary = {"lines": len(items), "chunks": len(good), "bad_lines": len(bad), "seconds": round(seconds, 2),
               "chunks_per_second": round(len(good) / seconds, 2) if seconds > 0 else None, "workers": workers}
    print(json.dumps({"batch_summary": summary}), file=sys.stderr)
    return summary
