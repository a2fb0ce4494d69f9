"""Times ingest, load and embed on the full pages into a fresh embedded database, then the
same three again with nothing changed; prints chunk counts and the database size.

    python bench/pipeline.py [--shared ../shared] [--work bench-out/pipeline]
"""
import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--shared", default="../shared")
ap.add_argument("--work", default="bench-out/pipeline")
args = ap.parse_args()
work = Path(args.work)
shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
base = ["godot-rag"]
data = ["--data-dir", str(work / "pgdata")]
steps = {
    "ingest": [*base, "ingest", "--pages", f"{args.shared}/godot_docs/pages", "--renames",
               f"{args.shared}/godot_docs/renames_3_to_4.jsonl", "--out", str(work / "jsonl"), "--quiet"],
    "load": [*base, "load", "--jsonl", str(work / "jsonl"), "--quiet", *data],
    "embed": [*base, "embed", "--quiet", *data],
}
out = {}
for round_name in ("first", "rerun"):
    for name, cmd in steps.items():
        t = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            sys.exit(f"{name} failed: {res.stderr[-2000:]}")
        out[f"{round_name}_{name}_s"] = round(time.perf_counter() - t, 2)
        out[f"{round_name}_{name}_result"] = json.loads(res.stdout.strip().splitlines()[-1])
    out[f"{round_name}_total_s"] = round(sum(out[f"{round_name}_{n}_s"] for n in steps), 2)
status = json.loads(subprocess.run([*base, "status", *data], capture_output=True, text=True).stdout)
out["rows"] = {t: v["rows"] for t, v in status["tables"].items()}
out["database_mb"] = round(status["database_bytes"] / 1e6, 1)
print(json.dumps({k: v for k, v in out.items() if not k.endswith("_result")}, indent=2))
