"""Per-stage latency of strategies in one process, from each result's own trace, over a fixed sample of
an eval set (every `--step`-th chunk), plus the cold first answer of a new process. Uses only the
Retriever API, so the same script measures any checkout (`PYTHONPATH=<checkout>/src`) for a side-by-side.

    python bench/latency.py --data-dir DIR [--set ../shared/eval/realcode_godot4.dev.jsonl] [--n 200]
        [--strategies F,D] [--explain] [--cold] [--profile FILE.txt]

Prints one JSON object: per strategy, total p50/p95 (ms), the process CPU time per answer (p50/p95: steadier
than wall time when others share the CPU), and per stage p50/p95/mean (load steps apart);
`--cold` adds a new process's first F answer (its own Retriever, the database already running), and
`--profile` writes a cProfile summary of the timed loop (top functions by cumulative and own time).
"""
import argparse
import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--data-dir", default=None)
ap.add_argument("--set", default="../shared/eval/realcode_godot4.dev.jsonl")
ap.add_argument("--n", type=int, default=200)
ap.add_argument("--step", type=int, default=0, help="every step-th chunk (default: spread n over the set)")
ap.add_argument("--strategies", default="F,D")
ap.add_argument("--explain", action="store_true", help="retrieve with explain=True (the eval's and the page's way)")
ap.add_argument("--cold", action="store_true", help="also time a new process's first F answer")
ap.add_argument("--cold-only", action="store_true")
ap.add_argument("--profile", default=None, help="write a cProfile summary of the timed loop here")
args = ap.parse_args()

COLD = """
import time, sys, json
t0 = time.perf_counter()
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database
r = Retriever(Database(data_dir=sys.argv[1] or None))  # "": the default data dir
r.conn()
t1 = time.perf_counter()
res = r.retrieve(sys.argv[2], "F", explain=False)
t2 = time.perf_counter()
print(json.dumps({"import_and_connect_s": round(t1 - t0, 3), "first_F_answer_s": round(t2 - t1, 3),
                  "loads_ms": [[s.stage, s.ms] for s in res.trace.stages if s.stage.startswith("load:")],
                  "stages_ms": round(sum(s.ms for s in res.trace.stages if not s.stage.startswith("load:")), 1)}))
"""


def pct(values, q):
    return round(float(np.percentile(values, q)), 2) if values else None


def chunks():
    with open(args.set) as lines:
        rows = [json.loads(line)["chunk_text"] for line in lines]
    step = args.step or max(1, len(rows) // args.n)
    return rows[::step][: args.n]


def cold(sample: str) -> dict:
    out = subprocess.run([sys.executable, "-c", COLD, args.data_dir or "", sample], capture_output=True, text=True)
    if out.returncode:
        return {"error": out.stderr[-800:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def figures(totals: list[float], cpu: list[float], stages: dict[str, list[float]]) -> dict:
    """One strategy's latency figures: wall and CPU percentiles, and each stage's, slowest stage first."""
    return {"p50_ms": pct(totals, 50), "p95_ms": pct(totals, 95),
            "mean_ms": round(statistics.mean(totals), 2),
            "cpu_p50_ms": pct(cpu, 50), "cpu_p95_ms": pct(cpu, 95),
            "stages": {name: {"p50": pct(v, 50), "p95": pct(v, 95), "mean": round(statistics.mean(v), 2)}
                       for name, v in sorted(stages.items(), key=lambda kv: -statistics.mean(kv[1]))}}


def write_profile(prof: cProfile.Profile, path: str) -> None:
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("cumulative").print_stats(60)
    st.sort_stats("tottime").print_stats(60)
    Path(path).write_text(buf.getvalue())


def warm_up(retriever, strategies: list[str], sample: list[str]) -> None:
    """Loads and first-call costs out of the figures."""
    for s in strategies:
        for text in sample[:3]:
            retriever.retrieve(text, s, explain=args.explain)


def main() -> None:
    from godot_rag.retrieve.pipeline import Retriever
    from godot_rag.store.db import Database

    sample = chunks()
    report: dict = {"set": Path(args.set).name, "chunks": len(sample), "explain": args.explain}
    if args.cold or args.cold_only:
        Database(data_dir=args.data_dir).connect().close()  # the server up, so only the process is cold
        report["cold"] = [cold(sample[0]) for _ in range(2)]
        if args.cold_only:
            print(json.dumps(report, indent=1))
            return
    retriever = Retriever(Database(data_dir=args.data_dir))
    strategies = args.strategies.split(",")
    warm_up(retriever, strategies, sample)
    totals: dict = {s: [] for s in strategies}
    cpu: dict = {s: [] for s in strategies}  # process CPU time per answer: steadier than wall time on a shared CPU
    stages: dict = {s: {} for s in strategies}
    prof = cProfile.Profile() if args.profile else None
    for text in sample:  # interleaved, so a noisy neighbour weighs on every strategy alike
        for s in strategies:
            t, c = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            res = retriever.retrieve(text, s, explain=args.explain)
            if prof:
                prof.disable()
            totals[s].append((time.perf_counter() - t) * 1000)
            cpu[s].append((time.process_time() - c) * 1000)
            for log in res.trace.stages:
                if not log.stage.startswith("load:"):
                    stages[s].setdefault(log.stage, []).append(log.ms)
    for s in strategies:
        report[s] = figures(totals[s], cpu[s], stages[s])
    if prof:
        write_profile(prof, args.profile)
    print(json.dumps(report, indent=1))


main()
