"""1,000 chunks through `godot-rag retrieve --batch` (strategy D): chunks per second, CPU use
(process CPU seconds / wall seconds; 2.0 means both cores busy) and output bytes per chunk.

    python bench/batch.py [--n 1000] [--strategy D] [--workers 2] [--format records|result|full]
        [--queries ../shared/eval/realcode_godot4.dev.jsonl] [--data-dir DIR] [--godot-rag PATH]
"""
import argparse
import json
import resource
import subprocess
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1000)
ap.add_argument("--strategy", default="D")
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--format", default="records", choices=["records", "result", "full"])
ap.add_argument("--queries", default=None, help="one eval set (default: every set in ../shared/eval)")
ap.add_argument("--data-dir", default=None)
ap.add_argument("--godot-rag", default="godot-rag", help="the command (another checkout: PYTHONPATH decides)")
args = ap.parse_args()
chunks = []
for f in [Path(args.queries)] if args.queries else sorted(Path("../shared/eval").glob("*.jsonl")):
    with open(f) as lines:
        chunks += [json.loads(l)["chunk_text"] for l in lines if "chunk_text" in l]
out = Path("bench-out")
out.mkdir(exist_ok=True)
batch = out / "batch.jsonl"
with open(batch, "w") as fh:
    for i in range(args.n):
        fh.write(json.dumps({"chunkText": chunks[i % len(chunks)]}) + "\n")
t = time.perf_counter()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
res = subprocess.run([args.godot_rag, "retrieve", "--batch", str(batch), "--strategy", args.strategy, "--workers",
                      str(args.workers), "--quiet", "--format", args.format]
                     + (["--data-dir", args.data_dir] if args.data_dir else []), capture_output=True, text=True)
wall = time.perf_counter() - t
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
lines = res.stdout.strip().splitlines()
summary = [json.loads(l) for l in res.stderr.splitlines() if l.startswith('{"batch_summary"')]
print(json.dumps({"chunks": args.n, "output_lines": len(lines), "bytes_per_chunk": round(len(res.stdout.encode()) / args.n),
                  "wall_s": round(wall, 1), "chunks_per_s_including_start": round(args.n / wall, 2),
                  "retrieval": summary[0]["batch_summary"] if summary else None,
                  "cpu_s": round(cpu, 1), "cpu_ms_per_chunk": round(cpu / args.n * 1000, 1),
                  "cores_busy": round(cpu / wall, 2)}, indent=2))
