"""Drives POST /api/retrieve (strategy D) with 20 concurrent clients on loopback for 60 s,
in a bounded loop, against a `godot-rag serve` it starts itself; prints throughput, p50/p95,
failures and the server's RSS after warm-up and at the end.

    python bench/load.py [--clients 20] [--seconds 60] [--strategy D] [--vary-bm25]

`--vary-bm25` gives every request its own k1/b (800 distinct pairs): the server keeps only a few
BM25 parameter variants, so its memory must stay bounded all the same.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import psutil

ap = argparse.ArgumentParser()
ap.add_argument("--clients", type=int, default=20)
ap.add_argument("--seconds", type=float, default=60)
ap.add_argument("--strategy", default="D")
ap.add_argument("--queries", default="../shared/eval/known_item.dev.jsonl")
ap.add_argument("--max-requests", type=int, default=100_000)
ap.add_argument("--vary-bm25", action="store_true", help="a different k1/b on every request")
ap.add_argument("--warmup-seconds", type=float, default=15,
                help="the same concurrent load, before the warm RSS is read (thread pools and caches fill up)")
args = ap.parse_args()

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen([sys.executable, "-m", "godot_rag.cli", "serve", "--port", str(port)],
                          env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
url = f"http://127.0.0.1:{port}"
try:
    for _ in range(600):
        try:
            if httpx.get(url + "/api/strategies", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.5)
    with open(args.queries) as lines:
        chunks = [json.loads(l)["chunk_text"] for l in lines]
    lat, fails, lock = [], [], threading.Lock()
    budget = [args.max_requests]

    def client(i, deadline):
        with httpx.Client(timeout=120) as c:
            n = i
            while time.monotonic() < deadline:
                with lock:
                    if budget[0] <= 0:
                        return
                    budget[0] -= 1
                t = time.perf_counter()
                try:
                    body = {"chunkText": chunks[n % len(chunks)], "strategy": args.strategy, "explain": False}
                    if args.vary_bm25:
                        body["config"] = {"k1": round(0.5 + (n % 40) * 0.05, 2), "b": round((n // 40 % 20) / 20, 2)}
                    r = c.post(url + "/api/retrieve", json=body)
                    ok = r.status_code == 200
                except httpx.HTTPError as e:
                    ok, r = False, e
                with lock:
                    (lat if ok else fails).append(time.perf_counter() - t if ok else str(r))
                n += args.clients

    def run(seconds):
        deadline = time.monotonic() + seconds
        threads = [threading.Thread(target=client, args=(i, deadline)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run(args.warmup_seconds)
    warm_requests = len(lat)
    lat.clear()
    rss_warm = psutil.Process(server.pid).memory_info().rss
    t0 = time.perf_counter()
    run(args.seconds)
    wall = time.perf_counter() - t0
    lat.sort()
    print(json.dumps({
        "strategy": args.strategy, "vary_bm25": args.vary_bm25, "clients": args.clients, "warmup_requests": warm_requests,
        "seconds": round(wall, 1), "requests": len(lat),
        "failed": len(fails), "throughput_rps": round(len(lat) / wall, 2),
        "p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
        "p95_ms": round(lat[int(len(lat) * 0.95)] * 1000, 1) if lat else None,
        "server_rss_mb_warm": round(rss_warm / 2**20),
        "server_rss_mb_end": round(psutil.Process(server.pid).memory_info().rss / 2**20),
    }, indent=2))
finally:
    server.terminate()
    server.wait(30)
