"""Background scan jobs for the HTTP API: one scan at a time, in a thread of the server process,
with the server's own (warm) Retriever; each job keeps its progress and, when done, its results."""
from __future__ import annotations

import atexit
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..store.scan_files import make_job_dir, remove_tree
from .run import ScanError, ScanInterrupted, ScanOptions, hide_server_paths, run_scan

MAX_JOBS = 20  # finished jobs kept (with their outputs); older ones are removed


@dataclass
class Job:
    id: str
    source: str  # what the client sees of the root: "upload", or the server-side folder's name
    dir: Path  # the job's own directory: src/ (an upload), out/
    root: Path
    options: dict
    status: str = "queued"  # queued | running | done | error | cancelled
    phase: str = "queued"
    done: int = 0
    total: int = 0
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    summary: dict | None = None
    files: list[dict] | None = None
    findings: list[dict] | None = None

    @property
    def out(self) -> Path:
        return self.dir / "out"

    def status_view(self, with_results: bool = True) -> dict:
        d = {"job_id": self.id, "status": self.status, "source": self.source, "options": self.options,
             "progress": {"phase": self.phase, "done": self.done, "total": self.total,
                          "fraction": round(self.done / self.total, 4) if self.total
                          else (1.0 if self.status == "done" else 0.0)},
             "created": self.created, "started": self.started, "finished": self.finished, "error": self.error}
        if self.summary is not None:
            d["summary"] = self.summary
        if with_results and self.files is not None:
            d["files"] = self.files
        return d


def results_view(files: list[dict]) -> list[dict]:
    """files -> chunks -> findings, as the scan page shows them (records by id, not their payloads)."""
    out = []
    for e in files:
        chunks = []
        for c in e["chunks"]:
            chunks.append({
                "index": c["index"], "start_line": c["start_line"], "end_line": c["end_line"], "kind": c["kind"],
                "name": c["name"], "part": c.get("part"), "parts": c.get("parts"), "chunkText": c["text"],
                "godot_version": c["cfg"].get("godot_version"), "extends": c["cfg"].get("extends"),
                "error": c.get("error"),
                "records": [{"table": r["table"], "id": r["id"], "group": r.get("group"), "reason": r.get("reason")}
                            for r in c.get("records") or []],
                "findings": c.get("findings") or [],
            })
        out.append({"file": e["file"], "project": e["project"], "godot_version": e["godot_version"],
                    "version_source": e["version_source"], "error": e["error"], "chunker": e["chunker"],
                    "findings": e.get("findings") or {}, "chunks": chunks})
    return out


class ScanJobs:
    def __init__(self, retriever, max_jobs: int = MAX_JOBS):
        self.retriever = retriever
        self.max_jobs = max_jobs
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._closing = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="godot-rag-scan")
        atexit.register(self.close)

    def new_dir(self) -> tuple[str, Path]:
        job_id = uuid.uuid4().hex
        return job_id, make_job_dir(prefix=f"godot-rag-scan-{job_id[:8]}-")

    def submit(self, job_id: str, job_dir: Path, root: Path, source: str, options: dict) -> Job:
        job = Job(job_id, source, job_dir, root, options)
        with self._lock:
            self._jobs[job.id] = job
            self._evict()
        self._executor.submit(self._run, job)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def _evict(self) -> None:
        finished = [j for j in self._jobs.values() if j.status in ("done", "error", "cancelled")]
        while len(self._jobs) > self.max_jobs and finished:
            old = finished.pop(0)
            self._jobs.pop(old.id, None)
            remove_tree(old.dir)

    def _progress(self, job: Job):
        def cb(phase: str, done: int, total: int) -> None:
            job.phase, job.done, job.total = phase, done, total
        return cb

    def _run(self, job: Job) -> None:
        if self._closing:
            job.status = "cancelled"
            return
        job.status, job.started = "running", time.time()
        o = job.options
        opts = ScanOptions(root=job.root, out=job.out, strategy=o.get("strategy", "F"), godot_version=o.get("godot_version"),
                           workers=1, include_addons=bool(o.get("include_addons")), fail_on=o.get("fail_on"), quiet=True,
                           settings=dict(o.get("config") or {}), shown_root=job.source)
        try:
            res = run_scan(opts, retriever=self.retriever, progress=self._progress(job), cancelled=lambda: self._closing)
        except ScanInterrupted as e:
            job.status, job.error = "cancelled", str(e)
        except ScanError as e:
            job.status, job.error = "error", str(e)
        except Exception as e:
            job.status, job.error = "error", f"{type(e).__name__}: {str(e)[:300]}"
        else:
            job.summary, job.files, job.findings = res.summary, results_view(res.files), res.findings
            job.status, job.phase = "done", "done"
        finally:
            if job.error:  # the client sees no server path
                job.error = hide_server_paths(job.error, self.retriever.db, {job.root: job.source, job.dir: "(job)"})
            job.finished = time.time()
            if job.source == "upload":
                remove_tree(job.dir / "src")  # the outputs stay until the job is evicted

    def close(self) -> None:
        self._closing = True
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for job in self._jobs.values():
                remove_tree(job.dir)
            self._jobs.clear()
