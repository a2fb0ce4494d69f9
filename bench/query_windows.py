"""How the query's windows are encoded, measured five ways on the eval chunks: as the records are (all of a
chunk's windows in one padded batch, `Embedder.encode`), one window at a time as `retrieve` does
(`Embedder.encode_query`: no padding, and a chunk's last window is often short), and the first one, two or
three windows only.
Per way: the encoder's CPU per chunk with more than one window and over all chunks, the query vector's cosine
with the batched one, and how many F answers change against retrieve's own on the multi-window chunks of
realcode_godot4.dev (which records come back, or their order).

The int8 graph quantizes each batch's activations as a whole, so padding moves the vector: a way that
changes it changes answers, and would need the judged figures measured again.

    python bench/query_windows.py --data-dir DIR [--no-answers]
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=None)
ap.add_argument("--sets", default="realcode_godot4.dev,known_item.dev,migration.dev,godot4_clean.dev")
ap.add_argument("--no-answers", action="store_true", help="skip the F answers (encoder figures only)")
args = ap.parse_args()


def read(name: str) -> list[str]:
    return [json.loads(line)["chunk_text"] for line in open(Path("../shared/eval") / f"{name}.jsonl")]


def main() -> None:
    from godot_rag.models.embedder import Embedder

    texts = [t for name in args.sets.split(",") for t in read(name)]
    emb = Embedder(threads=1)  # as a batch worker runs it
    model = emb.load()
    emb.encode(texts[:3])

    def unit(v):
        return v / np.maximum(np.linalg.norm(v), 1e-12)

    def first_windows(t, n):
        """`encode_query` over the text's first n windows only (fewer windows for a long chunk)."""
        return unit(np.sum([model.encode([w], 1)[0] for w in emb.windows(t)[:n]], axis=0))

    ways = {
        "one_batch": lambda t: emb.encode([t])[0],
        "one_by_one": lambda t: emb.encode_query(t)[0],
        "first_window": lambda t: first_windows(t, 1),
        "first_two_windows": lambda t: first_windows(t, 2),
        "first_three_windows": lambda t: first_windows(t, 3),
    }
    multi = [t for t in texts if emb.window_count(t) > 1]
    report: dict = {"chunks": len(texts), "multi_window_chunks": len(multi)}
    base = None
    for name, way in ways.items():
        t0 = time.process_time()
        vecs = np.array([way(t) for t in multi])
        cpu_multi = time.process_time() - t0
        t0 = time.process_time()
        for t in texts:
            way(t)
        cpu_all = time.process_time() - t0
        base = vecs if base is None else base
        cos = (vecs * base).sum(1)
        report[name] = {"cpu_ms_per_multi_window_chunk": round(cpu_multi / len(multi) * 1000, 1),
                        "cpu_ms_per_chunk": round(cpu_all / len(texts) * 1000, 1),
                        "cosine_with_one_batch": {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5)}}
    if not args.no_answers:
        report["F_answers_changed"] = answers_changed(ways)
    print(json.dumps(report, indent=2))


def answers_changed(ways) -> dict:
    """On the multi-window realcode_godot4.dev chunks: F's (table, id, verdict) list with each way's vector."""
    from godot_rag.models.embedder import Embedder
    from godot_rag.retrieve.engine.config import RetrieveConfig
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store.db import Database

    r = Retriever(Database(data_dir=args.data_dir), embed_threads=1)
    cfg = RetrieveConfig()
    r.warm(cfg)
    emb = r.embedder
    chunks = [t for t in read("realcode_godot4.dev") if emb.window_count(t) > 1]
    plain = Embedder.encode_query

    def answers():
        return [[(c.table, c.id, c.verdict) for c in r.retrieve(t, "F", cfg, explain=False).results] for t in chunks]

    today = answers()  # one window at a time
    out = {"chunks": len(chunks)}
    for name in ("one_batch", "first_window", "first_two_windows", "first_three_windows"):
        way = ways[name]
        Embedder.encode_query = lambda self, text, way=way: (way(text or " "), self.window_count(text or " "))
        try:
            other = answers()
        finally:
            Embedder.encode_query = plain
        out[name] = {"changed": sum(a != b for a, b in zip(today, other)),
                     "records_changed": sum(set(a) != set(b) for a, b in zip(today, other))}
    return out


if __name__ == "__main__":
    main()
