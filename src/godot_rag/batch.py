"""`godot-rag retrieve --batch`: many chunks, both cores, one JSON result per line on stdout."""
from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

from .jsonlines import iter_jsonl


def read_batch(path: Path) -> list[str]:
    chunks = []
    for n, rec in iter_jsonl(path):
        text = rec.get("chunkText", rec.get("chunk_text")) if isinstance(rec, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path}:{n}: field 'chunkText' (or 'chunk_text') must be a string")
        chunks.append(text)
    return chunks


def run_batch(retriever, path: Path, strategy: str, cfg, workers: int = 2, quiet: bool = False) -> dict:
    chunks = read_batch(path)
    retriever.warm(cfg)
    t0 = time.perf_counter()
    # torch and numpy release the GIL in their kernels, so threads keep both cores busy.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(lambda c: retriever.retrieve(c, strategy, cfg, explain=False), chunks)
        for res in tqdm(results, total=len(chunks), desc="retrieve", disable=quiet, file=sys.stderr):
            sys.stdout.write(res.model_dump_json() + "\n")
    seconds = time.perf_counter() - t0
    summary = {"chunks": len(chunks), "seconds": round(seconds, 2), "chunks_per_second": round(len(chunks) / seconds, 2)}
    print(json.dumps({"batch_summary": summary}), file=sys.stderr)
    return summary
