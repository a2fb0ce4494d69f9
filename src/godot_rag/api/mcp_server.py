"""`godot-rag mcp`: the Model Context Protocol server for coding agents (the official SDK, `mcp`).

Tools (typed input schemas, structured output): `evidence`, `explain`, `lookup`, `scan`, `strategies`, `check`
(`mcp_check.py`: code an agent just wrote, checked against the class reference);
resource `godot-rag://record/{table}/{id}`. The same Retriever, settings model and database as the
CLI and the HTTP API; the answers are the shared renderings (formats.py) and the why-not of the
debugger page (retrieve/why.py). Every error is a tool error with a one-line message; the server
keeps answering.
"""
from __future__ import annotations

import json
import logging
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..errors import mask_secrets
from ..formats import one_line, record_rows
from ..gdscript.chunk_text import ChunkTextError, check_chunk_text
from ..gdscript.project import RequestContext
from ..jsonlines import unknown_fields
from ..models.llm import LLMError
from ..retrieve.engine.config import ConfigError, RetrieveConfig
from ..retrieve.engine.types import RetrieveResult
from ..retrieve.explain.lookup import LookupResult, SymbolError
from ..retrieve.explain.lookup import lookup as lookup_symbol
from ..retrieve.explain.why import WhyRecord, unseen_reason, why
from ..retrieve.pipeline import Retriever
from ..retrieve.strategies import STRATEGIES, describe
from ..scan.allowed import PathNotAllowed, allowed_folder
from ..store.db import StoreError
from .mcp_check import add_check

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp.types import CallToolResult, InputRequiredResult

    from ..scan.run import ScanResult

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError("the MCP server needs the 'mcp' extra: pip install 'godot-rag[mcp]'") from e

log = logging.getLogger("godot_rag.mcp")

Strategy = Literal["A", "B", "C", "D", "E", "F"]
GodotVersion = Literal["auto", "3", "4"]
Chunk = Annotated[str, Field(description="The raw GDScript chunk, exactly as it appears in the .gd file.")]
K = Annotated[int, Field(ge=1, le=100, strict=True, description="Results per table (F: the guides group of docs).")]
Extends = Annotated[str | None, Field(description="The script's class when the chunk has no `extends` line.")]
ProjectContext = Annotated[dict[str, Any] | None, Field(
    description="The project around the chunk (every field optional): project_symbols ([{name, kind, file, line, "
                "scope, extends}]), file_path, extends, godot_version (\"4.3\"). A name the project declares is then "
                "not taken for a Godot 3 API.")]
TOP_FINDING_FIELDS = ("file", "line", "column", "severity", "label", "expected_finding", "recommended_action",
                      "mappings", "docs_chunk_ids")


# -- structured outputs -----------------------------------------------------------------------------
class EvidenceRecord(BaseModel):
    table: str
    id: str
    payload: dict[str, Any]  # the user's record, as stored
    score: float
    reason: str  # one line: the validator's reason, or how the record was found
    group: str | None = None  # docs in F: "guides" or "api_reference"
    rule: str | None = None  # F: the named rule that decided the verdict (docs/rules.md)


class Evidence(BaseModel):
    strategy: str
    chunk_sha256: str
    records: list[EvidenceRecord]
    rejected: int  # records the validator rejected (`explain` says why)
    total_ms: float


class Explanation(BaseModel):
    strategy: str
    record: str  # as asked: a record id or a docs page path
    verdict: str  # one line
    records: list[WhyRecord]  # every record known under that id or page: where each was lost, stage by stage
    unseen_reason: str | None = None  # when no stage saw it


class ScanReport(BaseModel):
    root: str
    files_scanned: int
    chunks: int
    findings: dict[str, Any]  # total, by_severity, by_label, migration
    top_findings: list[dict[str, Any]]  # the most severe first
    unreadable: list[dict[str, Any]] = []
    chunk_errors: int = 0
    seconds: float


class StrategyEntry(BaseModel):
    about: str
    stages: list[str]
    available: bool
    unavailable_reason: str | None = None


class Strategies(BaseModel):
    default: str
    strategies: dict[str, StrategyEntry]


# -- the server ---------------------------------------------------------------------------------------
def checked_chunk(chunk: str) -> str:
    """The one check of an incoming chunk (chunk_text.py: empty, too long, NUL, lone surrogates)."""
    try:
        return check_chunk_text(chunk)
    except ChunkTextError as e:
        raise ToolError(str(e)) from None


def _argument_errors(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:3]:
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "arguments"
        parts.append(f"argument '{where}': {err.get('msg', 'invalid')}")
    return "; ".join(parts)


class GodotRagMCP(MCPServer):
    """The SDK's server, with every tool error on one line (argument errors name the argument)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context | None = None) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):  # a misspelled argument is refused, as HTTP refuses a key
            unknown = unknown_fields(arguments, tool.parameters.get("properties", {}))
            if unknown:
                raise ToolError(f"{name}: {unknown.replace('field(s)', 'argument(s)')}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as e:
            cause = e.__cause__
            log.error("tool %s failed", name, exc_info=cause)
            raise ToolError(f"{name}: internal error: {type(cause).__name__}: "
                            f"{mask_secrets(one_line(str(cause)))[:300]}") from None
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {_argument_errors(cause)}") from None
            message = str(e).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(f"{name}: {mask_secrets(one_line(message))[:500]}") from None


class _Tools:
    """What the tools share: the retriever, the server's settings, the folders `scan` may read."""

    def __init__(self, retriever: Retriever, base: dict[str, Any], roots: list[Path]):
        self.retriever, self.base, self.roots = retriever, base, roots

    def config(self, k: int, godot_version: str, extends: str | None) -> RetrieveConfig:
        try:
            return RetrieveConfig.from_mapping(self.base | {"k": k, "godot_version": godot_version}
                                               | ({"extends": extends} if extends else {}))
        except ConfigError as e:
            raise ToolError(str(e)) from None

    def run(self, chunk: str, strategy: str, cfg: RetrieveConfig, explain: bool,
            context: dict[str, Any] | None = None) -> RetrieveResult:
        chunk = checked_chunk(chunk)
        try:
            request_context = RequestContext.parse(context)
        except ConfigError as e:
            raise ToolError(f"context: {e}") from None
        needs = STRATEGIES[strategy].needs
        if needs and self.retriever.llm is None and not cfg.llm_optional:
            raise ToolError(f"strategy {strategy} needs an LLM, and this server has none: "
                            "start it with --llm-bundled 0.5b (or --llm-gguf FILE, --llm-url URL)")
        try:
            return self.retriever.retrieve(chunk, strategy, cfg, explain=explain, context=request_context)
        except (ChunkTextError, ConfigError, StoreError) as e:
            raise ToolError(str(e)) from None
        except LLMError as e:
            raise ToolError(f"LLM unavailable: {e}") from None


def create_server(retriever: Retriever, base_cfg: RetrieveConfig | None = None,
                  allow_paths: list[Path] | None = None) -> GodotRagMCP:
    tools = _Tools(retriever, (base_cfg or RetrieveConfig()).to_dict(), [Path(p).resolve() for p in allow_paths or []])
    server = GodotRagMCP("godot-rag", version="0.1.0", log_level="WARNING", instructions=(
        "Evidence for raw GDScript chunks from the Godot 4 docs, the Godot 3 -> 4 API mappings and reviewer "
        "findings. Call `evidence` with a chunk exactly as it is in the .gd file; `explain` says why a record "
        "came back or not; `lookup` gives a class or member's Godot 4 reference entry; `check` checks Godot 4 code "
        "you have just written against the class reference (deprecated, missing members, argument counts)."))
    for add in (_add_evidence, _add_explain, _add_lookup, _add_scan, _add_strategies, _add_record):  # the tools' order
        add(server, tools)
    add_check(server, retriever)
    return server


def _add_evidence(server: GodotRagMCP, tools: _Tools) -> None:
    @server.tool(description="The evidence records for a raw GDScript chunk: the accepted records (Godot 4 docs "
                             "chunks, Godot 3 -> 4 API mappings, reviewer findings), each as the user's JSONL record "
                             "with its score and a one-line reason.")
    def evidence(chunk: Chunk, strategy: Strategy = "F", k: K = 10, godot_version: GodotVersion = "auto",
                 extends: Extends = None, context: ProjectContext = None) -> Evidence:
        result = tools.run(chunk, strategy, tools.config(k, godot_version, extends), explain=False, context=context)
        rows = [EvidenceRecord(**{f: v for f, v in row.items() if f != "chunk"}) for row in record_rows(result, None)]
        return Evidence(strategy=result.strategy, chunk_sha256=result.chunk_sha256, records=rows,
                        rejected=len(result.rejected), total_ms=result.trace.total_ms)


def _add_explain(server: GodotRagMCP, tools: _Tools) -> None:
    @server.tool(description="Why this record, or why not: the stage of the strategy that lost the record, with its "
                             "rank and score at every stage it reached (the debugger page's why-not). record_id is a "
                             "record id (page#NNN, table:from->to, a prototype id) or a docs page path.")
    def explain(chunk: Chunk, record_id: Annotated[str, Field(min_length=1, max_length=500)], strategy: Strategy = "F",
                k: K = 10, godot_version: GodotVersion = "auto", extends: Extends = None,
                context: ProjectContext = None) -> Explanation:
        result = tools.run(chunk, strategy, tools.config(k, godot_version, extends), explain=True, context=context)
        found = why(result, record_id.strip(), tools.retriever.records("api_mapping"))
        if not found:
            reason = unseen_reason(result)
            return Explanation(strategy=result.strategy, record=record_id, records=[], unseen_reason=reason,
                               verdict=f"lost before the first stage: {reason}")
        return Explanation(strategy=result.strategy, record=record_id, records=found,
                           verdict="; ".join(f"{r.id}: {r.verdict}" for r in found[:5]))


def _add_lookup(server: GodotRagMCP, tools: _Tools) -> None:
    @server.tool(description="Class or Class.member -> its Godot 4 class-reference entry (kind, type, inheritance, "
                             "the docs record). A Godot 3 name the converter renamed (KinematicBody2D) is followed "
                             "to its Godot 4 name, and the answer says so.")
    def lookup(symbol: Annotated[str, Field(min_length=1, max_length=200, description="Class or Class.member")]) -> LookupResult:
        try:
            return lookup_symbol(tools.retriever, symbol)
        except (SymbolError, StoreError) as e:
            raise ToolError(str(e)) from None


def _add_scan(server: GodotRagMCP, tools: _Tools) -> None:
    @server.tool(description="Scan a Godot project folder on this machine (only under a directory the server allows, "
                             "--allow-path): the findings summary and the most severe findings.")
    def scan(path: Annotated[str, Field(min_length=1, max_length=4096)], godot_version: GodotVersion | None = None,
             include_addons: bool = False, top: Annotated[int, Field(ge=1, le=100)] = 10) -> ScanReport:
        from ..scan.run import ScanError, ScanOptions, run_scan

        try:
            root = allowed_folder(path, tools.roots, "godot-rag mcp --allow-path DIR")
        except PathNotAllowed as e:
            raise ToolError(str(e)) from None
        settings = {k: v for k, v in tools.base.items() if k != "godot_version"}
        with tempfile.TemporaryDirectory(prefix="godot-rag-mcp-scan-") as out:
            # One process: the scan runs in this server, on its retriever (`godot-rag scan` uses every core).
            opts = ScanOptions(root=root, out=Path(out) / "scan", formats=(), workers=1, quiet=True,
                               godot_version=godot_version, include_addons=include_addons, settings=settings)
            try:
                res = run_scan(opts, retriever=tools.retriever)
            except ScanError as e:
                raise ToolError(str(e)) from None
        return _scan_report(res, top)


def _scan_report(res: ScanResult, top: int) -> ScanReport:
    """The scan's summary and its `top` most severe findings."""
    from ..scan.findings import severity_rank

    s = res.summary
    ranked = sorted(res.findings, key=lambda f: (-severity_rank(f["severity"]), f["file"], f["line"]))
    return ScanReport(root=s["root"], files_scanned=s["files_scanned"], chunks=s["chunks"], findings=s["findings"],
                      top_findings=[{k: f.get(k) for k in TOP_FINDING_FIELDS} | {"code": f["evidence"]["code"]}
                                    for f in ranked[:top]],
                      unreadable=s["unreadable"], chunk_errors=len(s["chunk_errors"]), seconds=s["seconds"])


def _add_strategies(server: GodotRagMCP, tools: _Tools) -> None:
    @server.tool(description="Each strategy (A-F), what it does, its stage list, and whether this server can run it.")
    def strategies() -> Strategies:
        out = {}
        for name, s in describe().items():
            missing = bool(s["needs"]) and tools.retriever.llm is None and not tools.base.get("llm_optional")
            out[name] = StrategyEntry(about=s["about"], stages=[st["name"] for st in s["stages"]], available=not missing,
                                      unavailable_reason=f"needs {s['needs']}; this server has no LLM" if missing else None)
        return Strategies(default="F", strategies=out)


def _add_record(server: GodotRagMCP, tools: _Tools) -> None:
    @server.resource("godot-rag://record/{table}/{+id}", mime_type="application/json",
                     description="One stored record by table and id (percent-encode `#` as %23 in docs ids).")
    def record(table: str, id: str) -> str:
        from ..records import TABLES

        if table not in TABLES:
            raise ResourceNotFoundError(f"unknown table {table!r}; valid: {', '.join(TABLES)}")
        try:
            payload = tools.retriever.records(table).get(id)
        except StoreError as e:
            raise ResourceNotFoundError(one_line(str(e))) from None
        if payload is None:
            raise ResourceNotFoundError(f"{table} has no record {id!r}")
        return json.dumps(payload, ensure_ascii=False)


# -- running it -------------------------------------------------------------------------------------
def warm_in_background(retriever: Retriever, cfg: RetrieveConfig) -> threading.Thread:
    """Load the indexes and the embedder while the client connects: the first answer is then quick, and
    `initialize` is not kept waiting. A failure is only logged (the tools answer with the reason)."""

    def warm() -> None:
        try:
            retriever.warm(cfg)
        except Exception as e:
            print_err(f"godot-rag mcp: warm-up failed ({one_line(str(e))[:300]}); the tools answer with the reason")

    thread = threading.Thread(target=warm, name="godot-rag-warm", daemon=True)
    thread.start()
    return thread


def serve_stdio(server: GodotRagMCP) -> None:
    """Until the client closes stdin. The SDK points fd 1 at stderr meanwhile, so nothing stray reaches the wire."""
    import anyio

    from .mcp_stdio import run_stdio

    anyio.run(run_stdio, server)


def serve_http(server: GodotRagMCP, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp; `announce(url)` once the socket listens."""
    import uvicorn

    app = server.streamable_http_app(host=host)

    class Server(uvicorn.Server):
        async def startup(self, sockets: list | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                announce(f"http://{host}:{port}/mcp")

    Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()


def print_err(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
