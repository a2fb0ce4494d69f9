"""POST /api/scan, GET /api/scan/{job_id} (+ its output files) and the scan page at /scan.

A project comes as the request body, a zip (`Content-Type: application/zip`; options in the query
string), or as JSON `{"path": ...}` naming a folder on the server, which is allowed only under a
directory given to `godot-rag serve --allow-path DIR` (env GODOT_RAG_SCAN_ALLOW_PATH, os.pathsep-separated).
The scan runs as a background job; poll GET /api/scan/{job_id} for status, progress and results.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from starlette.concurrency import run_in_threadpool

from ..jsonlines import JSONInputError, parse_json
from ..scan.allowed import PathNotAllowed, allowed_folder
from ..scan.jobs import ScanJobs
from ..scan.project import discover
from ..scan.run import FAIL_ON, ScanError, ScanOptions, check_options
from ..store.scan_files import ZipRejected, extract_project_zip, remove_tree
from .guards import error as _error

if TYPE_CHECKING:
    from ..retrieve.pipeline import Retriever

MAX_UPLOAD = 50 * 2**20
MAX_JSON = 64 * 2**10
JOB_ID_RE = re.compile(r"^[0-9a-f]{32}$")
OUTPUT_FILES = {"report.html": "text/html", "report.md": "text/markdown", "findings.sarif": "application/sarif+json",
                "findings.jsonl": "application/x-ndjson", "chunks.jsonl": "application/x-ndjson",
                "scan.json": "application/json"}
OPTION_NAMES = ("strategy", "godot_version", "include_addons", "fail_on", "config")


def _options(raw: dict) -> dict:
    unknown = [k for k in raw if k not in (*OPTION_NAMES, "path")]
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(OPTION_NAMES)}, path")
    out: dict = {}
    if raw.get("strategy") is not None:
        out["strategy"] = str(raw["strategy"])
    gv = raw.get("godot_version")
    if gv not in (None, "", "project"):
        if str(gv) not in ("auto", "3", "4"):
            raise ValueError(f"godot_version {gv!r}: valid: auto, 3, 4 (or leave it out: each project.godot decides)")
        out["godot_version"] = str(gv)
    ia = raw.get("include_addons")
    if ia is not None:
        out["include_addons"] = ia if isinstance(ia, bool) else str(ia).lower() in ("1", "true", "yes", "on")
    fo = raw.get("fail_on")
    if fo is not None:
        if fo not in FAIL_ON:
            raise ValueError(f"fail_on {fo!r}: valid: {', '.join(FAIL_ON)}")
        out["fail_on"] = fo
    cfg = raw.get("config")
    if cfg is not None:
        if not isinstance(cfg, dict):
            raise ValueError("config must be an object of setting name -> value")
        out["config"] = cfg
    return out


def _validate(root: Path, options: dict) -> None:
    """Usage errors answer at once (4xx), before a job exists."""
    opts = ScanOptions(root=root, strategy=options.get("strategy", "F"), godot_version=options.get("godot_version"),
                       include_addons=bool(options.get("include_addons")), fail_on=options.get("fail_on"),
                       settings=dict(options.get("config") or {}))
    check_options(opts)
    if not discover(root, include_addons=opts.include_addons).scripts:
        raise ScanError("no .gd files found (addons/, .godot/ and .import/ are skipped"
                        + ("" if opts.include_addons else "; include_addons=true scans addons/") + ")")


def add_scan_routes(app: FastAPI, retriever: Retriever, static_dir: Path, allow_paths: Sequence[Path] = ()) -> ScanJobs:
    jobs = ScanJobs(retriever)
    app.state.scan_jobs = jobs
    app.state.scan_allowed = [Path(p).resolve() for p in allow_paths]  # `serve --allow-path DIR`

    @app.post("/api/scan", status_code=202, tags=["scan"],
              responses={400: {"description": "bad zip, path or option"}, 403: {"description": "path not allowed"},
                         413: {"description": "upload too large"}, 415: {"description": "unsupported content type"},
                         422: {"description": "no .gd files"}})
    async def api_scan(request: Request) -> JSONResponse:
        """Start a scan job: the body is a zip of the project (Content-Type: application/zip, options as
        query parameters: strategy, godot_version, include_addons, fail_on), or JSON {"path": "/server/dir",
        ...options}. Answers 202 with the job id; GET /api/scan/{job_id} gives status, progress, results."""
        ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
        body = await _read_body(request, MAX_JSON if ctype == "application/json" else MAX_UPLOAD)
        if isinstance(body, JSONResponse):
            return body
        if ctype == "application/json":
            return await _scan_folder(jobs, body, app.state.scan_allowed)
        if ctype in ("application/zip", "application/x-zip-compressed", "application/octet-stream"):
            return await _scan_upload(jobs, body, dict(request.query_params))
        return _error(415, "send the project as a zip body (Content-Type: application/zip) "
                           'or JSON {"path": ...} (Content-Type: application/json)')

    _add_job_routes(app, jobs, static_dir)
    return jobs


async def _read_body(request: Request, limit: int) -> bytes | JSONResponse:
    """The body, or the 413 answer once it is over `limit` bytes (declared or read)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        return _error(413, f"the request body is over {limit} bytes")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            return _error(413, f"the request body is over {limit} bytes")
    return bytes(body)


def _accepted(job: Any) -> JSONResponse:
    return JSONResponse(status_code=202, content={"job_id": job.id, "status": job.status,
                                                  "status_url": f"/api/scan/{job.id}"})


async def _scan_folder(jobs: ScanJobs, body: bytes, allowed: list[Path]) -> JSONResponse:
    """JSON {"path": ..., options}: a folder on the server, under one of the `allowed` ones."""
    try:
        raw = parse_json(body or b"null", max_bytes=MAX_JSON)
    except JSONInputError as e:
        return _error(e.status, str(e))
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"].strip():
        return _error(400, 'send {"path": "/folder/on/the/server"} or a zip body (Content-Type: application/zip)')
    try:
        options = _options(raw)
    except ValueError as e:
        return _error(400, str(e))
    try:
        real = allowed_folder(raw["path"], allowed, "godot-rag serve --allow-path DIR")
    except PathNotAllowed as e:
        return _error(e.status, str(e))
    try:
        await run_in_threadpool(_validate, real, options)
    except ScanError as e:
        return _error(422 if "no .gd files" in str(e) else 400, str(e).replace(str(real), real.name))
    job_id, job_dir = jobs.new_dir()
    return _accepted(jobs.submit(job_id, job_dir, real, real.name, options))


async def _scan_upload(jobs: ScanJobs, body: bytes, query: dict) -> JSONResponse:
    """A zip of the project, its options in the query string."""
    try:
        options = _options(query)
    except ValueError as e:
        return _error(400, str(e))
    job_id, job_dir = jobs.new_dir()
    src = job_dir / "src"
    try:
        n = await run_in_threadpool(extract_project_zip, body, src)
        if not n:
            raise ZipRejected("the zip holds no .gd, project.godot or .gitignore file", 422)
        await run_in_threadpool(_validate, src, options)
    except ZipRejected as e:
        remove_tree(job_dir)
        return _error(e.status, str(e))
    except ScanError as e:
        remove_tree(job_dir)
        return _error(422 if "no .gd files" in str(e) else 400, str(e))
    return _accepted(jobs.submit(job_id, job_dir, src, "upload", options))


def _add_job_routes(app: FastAPI, jobs: ScanJobs, static_dir: Path) -> None:
    """A job's status and output files, and the scan page."""
    @app.get("/api/scan/{job_id}", tags=["scan"])
    def api_scan_status(job_id: str, results: bool = True) -> JSONResponse:
        """Status, progress and, once done, the summary and files -> chunks -> findings."""
        job = jobs.get(job_id) if JOB_ID_RE.match(job_id or "") else None
        if job is None:
            return _error(404, "no such scan job")
        return JSONResponse(content=job.status_view(with_results=results))

    @app.get("/api/scan/{job_id}/{name}", tags=["scan"])
    def api_scan_file(job_id: str, name: str) -> Response:
        """One output file of a finished job: report.html, report.md, findings.sarif, findings.jsonl,
        chunks.jsonl or scan.json."""
        job = jobs.get(job_id) if JOB_ID_RE.match(job_id or "") else None
        if job is None or name not in OUTPUT_FILES:
            return _error(404, "no such scan job or file")
        path = job.out / name
        if job.status != "done" or not path.is_file():
            return _error(409, f"the job is {job.status}; its files come when it is done")
        return FileResponse(path, media_type=OUTPUT_FILES[name], filename=name if name != "report.html" else None)

    @app.get("/scan", include_in_schema=False)
    def scan_page() -> FileResponse:
        return FileResponse(static_dir / "scan.html")
