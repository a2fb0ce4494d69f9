"""FastAPI app: POST /api/retrieve, GET /api/strategies, GET /api/examples, the debugger page at /."""
from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from ..errors import mask_secrets
from ..examples import EXAMPLES, REFERENCE_CHUNK  # noqa: F401  (re-exported for callers)
from ..gdscript.chunk_text import MAX_CHUNK_CHARS, ChunkTextError, check_chunk_text
from ..gdscript.project import RequestContext
from ..jsonlines import JSONInputError, parse_json
from ..models.llm import LLMError
from ..retrieve.engine.config import ConfigError, RetrieveConfig, clip
from ..retrieve.engine.types import RetrieveResult
from ..retrieve.pipeline import Retriever
from ..retrieve.strategies import STRATEGIES, check_strategy, describe
from ..store.db import StoreError, StoreUnavailable

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse
    from fastapi.staticfiles import StaticFiles
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError("the HTTP API needs the 'serve' extra: pip install 'godot-rag[serve]'") from e
from .guards import MAX_BODY, BodyTooLarge, Guard
from .guards import error as _error

log = logging.getLogger("godot_rag.api")

STATIC = Path(__file__).resolve().parent.parent / "web" / "static"


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelled key ("strateg") is a 400, never a silent default

    chunkText: str = Field(..., description="The raw GDScript chunk, exactly as in the .gd file.")
    strategy: str = Field("F", description="A-F; see GET /api/strategies.")
    k: int = Field(10, ge=1, le=100, strict=True, description="Results per table (an integer: `true` is not 1).")
    tables: list[str] | None = Field(None, description="Tables to search (default all three).")
    explain: bool = Field(True, description="Per-term BM25 explanations.")
    # Validated by the one settings model (an unknown name is a 400 listing the valid ones); documented here in full.
    config: dict[str, Any] | None = Field(None, description="Other retrieval settings by name (RetrieveConfig).",
                                          json_schema_extra={"properties": RetrieveConfig.model_json_schema()["properties"],
                                                             "additionalProperties": False})
    godot_version: str | None = Field(
        None, description='"3", "4" or "auto" (default): sharpens the ambiguous migration cases only.')
    extends: str | None = Field(
        None, description="The script's class when the chunk has no `extends` line (e.g. the file header's).")
    format: Literal["records", "result", "full", "prompt"] = Field(
        "full", description='"full": the whole result (the debugger page); "result": rejected records by id, without '
                            'payload; "records": {"records": [...]}, the accepted records as '
                            '`retrieve --format records` writes them; '
                            '"prompt": {"chunk", "prompt", "tokens"}, the accepted evidence as text for a model.')
    prompt_budget: int | None = Field(None, ge=1, le=100_000, strict=True,
                                      description='With "format": "prompt": the evidence\'s size in '
                                                  "(estimated) tokens (default 600).")
    id: str | int | None = Field(
        None, description="Your name for the chunk, echoed as `chunk` on each record and `id` on a result.")

    @field_validator("id")
    @classmethod
    def _id(cls, value: Any) -> Any:
        from ..formats import check_chunk_id

        return check_chunk_id(value)
    # Validated by the one context model (an unknown field is a 400 listing the valid ones).
    context: dict[str, Any] | None = Field(None, description="The project around the chunk: project_symbols, file_path, "
                                           "extends, godot_version (RequestContext); every field optional.")


def availability(retriever: Retriever, llm_optional: bool = False) -> dict:
    """What this server cannot run, each with the reason and the server command that enables it (the web
    page keeps such a strategy's column and shows both). None: it runs."""
    import importlib.util

    llm_cmd = "godot-rag serve --llm-bundled 0.5b (or --llm-gguf FILE, --llm-url URL)"
    no_llm = {"reason": "this server was started without an LLM", "enable": llm_cmd}
    has_llm = retriever.llm is not None
    strategies = {n: (None if has_llm or llm_optional or not s.needs else
                      {**no_llm, "enable": s.needs.split(": ", 1)[-1]}) for n, s in STRATEGIES.items()}
    rerankers = {"none": None,
                 "nanoranker": None if importlib.util.find_spec("nanoranker") else
                 {"reason": "the nanoranker package is not installed", "enable": "pip install 'godot-rag[rerank]'"},
                 "qwen": None if has_llm else no_llm,
                 "cross-encoder": None if retriever.cross_encoder_path else
                 {"reason": "this server was started without a cross-encoder", "enable": "godot-rag serve --cross-encoder DIR"}}
    return {"unavailable": strategies, "rerankers": rerankers, "llm": has_llm, "llm_optional": llm_optional}


def create_app(retriever: Retriever, warm: bool = True, llm_optional: bool = False,
               allowed_hosts: list[str] | None = None, allow_paths: Sequence[Path] = ()) -> FastAPI:
    """`allowed_hosts`: the names a request's Host header may give (None: any; `serve` passes its list).
    `allow_paths`: the folders POST /api/scan may read (`serve --allow-path`)."""
    from .scan_routes import MAX_UPLOAD, add_scan_routes

    app = FastAPI(title="godot-rag", version="0.1.0", lifespan=_lifespan(retriever, warm),
                  description="Evidence retrieval for raw GDScript chunks, with a trace for every score.")
    app.add_middleware(Guard, allowed_hosts=allowed_hosts, limits={"/api/scan": MAX_UPLOAD})
    _add_error_handlers(app)
    _add_retrieve_routes(app, retriever, llm_optional)
    # -- scan jobs: POST /api/scan, GET /api/scan/{job_id}, the scan page at /scan (api/scan_routes.py)
    add_scan_routes(app, retriever, STATIC, allow_paths)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _document_request_model(app)
    return app


def _lifespan(retriever: Retriever, warm: bool) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if warm:
            with suppress(StoreError):  # requests will answer 503 with the reason
                retriever.warm()
        yield

    return lifespan


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answer in our one shape, {"error": ...}, and no traceback to the client."""
    @app.exception_handler(BodyTooLarge)
    def _too_large(request: Request, exc: BodyTooLarge) -> JSONResponse:
        return _error(413, exc.detail)

    @app.exception_handler(StarletteHTTPException)
    def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own answers (404, 405) in our one shape: {"error": ...}.
        response = _error(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})  # a 405's Allow
        return response

    @app.exception_handler(Exception)
    def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, mask_secrets(f"{type(exc).__name__}: {exc}"))
        return _error(500, f"internal error: {type(exc).__name__}")

    @app.exception_handler(RequestValidationError)
    def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation_error(exc.errors())


def _validation_error(raw_errors: Sequence[Any]) -> JSONResponse:
    # Never echo the input back (a 5 MB body must not come back as a 5 MB answer).
    errors = [{"loc": [clip(x) for x in e.get("loc", ())][:5], "msg": str(e.get("msg", ""))[:200], "type": e.get("type")}
              for e in raw_errors[:10]]
    unknown = [e["loc"][-1] for e in errors if e["type"] == "extra_forbidden"][:5]
    if unknown:
        valid = ", ".join(RetrieveRequest.model_fields)
        return _error(400, f"unknown request field(s) {', '.join(unknown)}; valid: {valid}", errors=errors)
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = [x for x in first["loc"] if x != "body"]
    return _error(422, f"{'.'.join(map(str, where)) or 'body'}: {first['msg']}", errors=errors)


def _add_retrieve_routes(app: FastAPI, retriever: Retriever, llm_optional: bool) -> None:
    """POST /api/retrieve, GET /api/strategies, GET /api/examples and the debugger page at /."""
    @app.post("/api/retrieve", response_model=RetrieveResult, openapi_extra={"requestBody": {
        "required": True, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RetrieveRequest"}}}}},
              responses={400: {"description": "unknown strategy or setting"}, 413: {"description": "chunk too long"},
                         422: {"description": "empty chunk, or text that UTF-8 cannot encode"},
                         503: {"description": "database unreachable"}})
    async def api_retrieve(request: Request) -> JSONResponse:
        # The body goes through the one JSON reader (size, depth, lone surrogates), then the request model.
        try:
            req = RetrieveRequest.model_validate(parse_json(await request.body(), max_bytes=MAX_BODY))
        except JSONInputError as e:
            return _error(e.status, str(e))
        except ValidationError as e:
            return _validation_error(e.errors())
        return await run_in_threadpool(_answer, retriever, llm_optional, req)

    # response_model=None: the typed return must not become a response model (the OpenAPI document stays as it was).
    @app.get("/api/strategies", response_model=None)
    def api_strategies() -> dict:
        return {"strategies": {n: s.about for n, s in STRATEGIES.items()}, "stage_lists": describe(), "default": "F",
                "settings": RetrieveConfig().to_dict(), "max_chunk_chars": MAX_CHUNK_CHARS,
                **availability(retriever, llm_optional)}

    @app.get("/api/examples", response_model=None)
    def api_examples() -> dict:
        return {"examples": EXAMPLES}

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")


def _answer(retriever: Retriever, llm_optional: bool, req: RetrieveRequest) -> JSONResponse:
    """One checked request's answer: the result in its format, or the error with its status."""
    try:
        check_chunk_text(req.chunkText)
    except ChunkTextError as e:
        return _error(e.status, str(e), max_chars=MAX_CHUNK_CHARS)
    try:
        strategy = check_strategy(req.strategy)
    except ConfigError as e:
        return _error(400, str(e), valid_strategies=list(STRATEGIES))
    try:
        base = ({"llm_optional": True} if llm_optional else {}) | dict(req.config or {})
        k = req.k if "k" in req.model_fields_set or "k" not in base else None  # a config.k is validated, not dropped
        cfg = RetrieveConfig.merged(base, k=k, tables=req.tables or None, godot_version=req.godot_version,
                                    extends=req.extends)
        context = RequestContext.parse(req.context)
    except (ConfigError, TypeError) as e:
        return _error(400, str(e))
    try:
        result = retriever.retrieve(req.chunkText, strategy, cfg, explain=req.explain, context=context)
    except StoreUnavailable as e:
        return _error(503, f"database unavailable: {retriever.db.hide_paths(str(e))}")
    except StoreError as e:
        return _error(503, retriever.db.hide_paths(str(e)))
    except ConfigError as e:
        return _error(400, str(e))
    except LLMError as e:
        return _error(503, f"LLM unavailable: {e}")
    from ..formats import json_object

    return JSONResponse(content=json_object(result, req.format, req.id, req.prompt_budget))


def _document_request_model(app: FastAPI) -> None:
    """/api/retrieve reads its body itself (the one JSON reader), so FastAPI does not see RetrieveRequest:
    the OpenAPI document gets it here, where the route's requestBody points."""
    build = app.openapi

    def openapi() -> dict:
        schema = build()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        if "RetrieveRequest" not in components:
            model = RetrieveRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(model.pop("$defs", {}))
            components["RetrieveRequest"] = model
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def bound_heap() -> bool:
    """glibc only: blocks of 1 MiB and more (BM25 weights under a client's k1/b, embedding batches)
    go straight to mmap and back to the OS when freed, and the heap keeps two arenas instead of
    one per request thread. Without this, a long-running server's RSS creeps up with every
    request thread even though nothing leaks. Returns whether it applied."""
    import ctypes
    import ctypes.util
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_mmap_threshold, m_arena_max = -3, -8  # from <malloc.h>
        return bool(libc.mallopt(m_mmap_threshold, 1 << 20)) and bool(libc.mallopt(m_arena_max, 2))
    except (OSError, AttributeError):
        return False


def listen_socket(host: str, port: str) -> socket.socket:
    """The server's socket, bound before anything else starts, so a bad --host or --port is one
    line (ValueError) instead of the HTTP server's tracebacks. `port` as given on the command line."""
    text = str(port).strip()
    if not text.isdigit() or int(text) > 65535:
        raise ValueError(f"--port {str(port)[:40]!r}: not a port number (0 to 65535; 0 picks a free one)")
    try:  # IPv4 unless the host is an IPv6 address, as uvicorn does: `localhost` is 127.0.0.1
        family, kind, proto, _, address = socket.getaddrinfo(host, int(text), family=socket.AF_INET6 if ":" in host
                                                             else socket.AF_INET, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError, ValueError) as e:
        raise ValueError(f"--host {host[:100]!r}: not an address of this machine ({getattr(e, 'strerror', None) or e})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as e:
        sock.close()
        raise ValueError(f"cannot listen on {host}:{text} ({e.strerror or e})") from None
    return sock
