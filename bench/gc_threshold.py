"""The garbage collector's share of F, in one process: every other chunk of an eval set through
`Retriever.retrieve` (explain off, one encoder thread), with the youngest generation's threshold at `--young`
(700 is Python's default; `retrieve.context.YOUNG_GC_THRESHOLD` is the project's).
Run two at the same time, one per core, to compare thresholds under the same machine load.

    python bench/gc_threshold.py --young 700 & python bench/gc_threshold.py --young 20000
        [--n 500] [--set ../shared/eval/realcode_godot4.dev.jsonl] [--data-dir DIR]

Prints one JSON object: process CPU ms a chunk, and per generation the collections and their ms a chunk.
"""
import argparse
import gc
import json
import time

from godot_rag.retrieve.engine import state
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

ap = argparse.ArgumentParser()
ap.add_argument("--young", type=int, required=True)
ap.add_argument("--n", type=int, default=500)
ap.add_argument("--warm", type=int, default=30, help="chunks answered first, untimed (models and caches load)")
ap.add_argument("--set", default="../shared/eval/realcode_godot4.dev.jsonl")
ap.add_argument("--data-dir", default=None)
args = ap.parse_args()

# The loads raise the threshold to YOUNG_GC_THRESHOLD (never lower it): that value is the one measured.
state.YOUNG_GC_THRESHOLD = args.young
young, middle, old = gc.get_threshold()
gc.set_threshold(args.young, middle, old)
with open(args.set) as lines:
    rows = [json.loads(line)["chunk_text"] for line in lines if line.strip()]
retriever = Retriever(Database(data_dir=args.data_dir), embed_threads=1)
for text in rows[: args.warm]:
    retriever.retrieve(text, "F", explain=False)

spent = {g: [0, 0.0] for g in range(3)}
started: dict[str, float] = {}


def timed(phase: str, info: dict) -> None:
    if phase == "start":
        started["t"] = time.perf_counter()
    else:
        spent[info["generation"]][0] += 1
        spent[info["generation"]][1] += time.perf_counter() - started["t"]


gc.callbacks.append(timed)
sample = rows[::2][: args.n]
t0 = time.process_time()
for text in sample:
    retriever.retrieve(text, "F", explain=False)
cpu = time.process_time() - t0
gc.callbacks.remove(timed)
n = len(sample)
print(json.dumps({"young_threshold": args.young, "chunks": n, "cpu_ms_per_chunk": round(cpu / n * 1000, 1),
                  "gc": {f"gen{g}": {"collections": c, "ms_per_chunk": round(s / n * 1000, 2)}
                         for g, (c, s) in spent.items()},
                  "gc_ms_per_chunk": round(sum(s for _, s in spent.values()) / n * 1000, 2)}))
