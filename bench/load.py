"""Drives POST /api/retrieve (strategy D) with 20 concurrent clients on loopback for 60 s,
in a bounded loop, against a `godot-rag serve` it starts itself; prints throughput, p50/p95,
failures and the server's RSS after warm-up and at the end.

    python bench/load.py [--clients 20] [--seconds 60] [--strategy D]
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
    chunks = [json.loads(l)["chunk_text"] for l in open(args.queries)]
    httpx.post(url + "/api/retrieve", json={"chunkText": chunks[0], "strategy": args.strategy}, timeout=120)
    rss_warm = psutil.Process(server.pid).memory_info().rss
    lat, fails, lock = [], [], threading.Lock()
    deadline = time.monotonic() + args.seconds
    budget = [args.max_requests]

    def client(i):
        with httpx.Client(timeout=120) as c:
            n = i
            while time.monotonic() < deadline:
                with lock:
                    if budget[0] <= 0:
                        return
                    budget[0] -= 1
                t = time.perf_counter()
                try:
                    r = c.post(url + "/api/retrieve", json={"chunkText": chunks[n % len(chunks)], "strategy": args.strategy,
                                                           "explain": False})
                    ok = r.status_code == 200
                except httpx.HTTPError as e:
                    ok, r = False, e
                with lock:
                    (lat if ok else fails).append(time.perf_counter() - t if ok else str(r))
                n += args.clients

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    print(json.dumps({
        "strategy": args.strategy, "clients": args.clients, "seconds": round(wall, 1), "requests": len(lat),
        "failed": len(fails), "throughput_rps": round(len(lat) / wall, 2),
        "p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
        "p95_ms": round(lat[int(len(lat) * 0.95)] * 1000, 1) if lat else None,
        "server_rss_mb_warm": round(rss_warm / 2**20), "server_rss_mb_end": round(psutil.Process(server.pid).memory_info().rss / 2**20),
    }, indent=2))
finally:
    server.terminate()
    server.wait(30)
