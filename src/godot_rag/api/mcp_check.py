"""The MCP tool `check`: GDScript an agent has just written, checked against the Godot 4 class reference (F's
API check, `retrieve/evidence/check.py`): deprecated and experimental API, members the receiver's class lacks,
wrong argument counts, each with its line, the action and the reference entry. No retrieval runs: the answer is
small (a few hundred tokens for a typical function) and quick. Bad input is a tool error."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field

from ..gdscript.api_check import REFERENCE_VERSION, SEVERITY, ApiCheck
from ..gdscript.chunk_text import ChunkTextError, check_chunk_text
from ..gdscript.facts import parse_chunk
from ..gdscript.project import RequestContext
from ..gdscript.resolve import extends_hint, resolve_uses
from ..retrieve.engine.config import ConfigError, RetrieveConfig
from ..retrieve.evidence.check import action_of, check_resolved, undecided_summary
from ..retrieve.pipeline import Retriever
from ..retrieve.query.parse import ResolvedChunk
from ..store.db import StoreError

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError("the MCP server needs the 'mcp' extra: pip install 'godot-rag[mcp]'") from e

GODOT4_RE = re.compile(r"^4(\.\d+){0,2}$")


class CheckedFinding(BaseModel):
    kind: str  # deprecated_api | experimental_api | missing_engine_member | wrong_argument_count
    severity: str
    line: int
    col: int
    api: str
    message: str
    action: str
    reference: str  # the entry's URL in the class reference


class CheckAnswer(BaseModel):
    reference_version: str  # the Godot version of the class reference checked against
    summary: str  # one line
    findings: list[CheckedFinding]
    checked: int  # engine API uses resolved and checked
    undecided: list[str]  # uses not decided, each with why (their receiver's class is not stated)


def godot4(version: str | None) -> None:
    if version is not None and not GODOT4_RE.match(version.strip()):
        raise ToolError(f"godot_version {version[:20]!r}: the check reads the Godot {REFERENCE_VERSION} class reference "
                        "and checks Godot 4 code (4, 4.3, ...); for Godot 3 code call `evidence`, whose mappings "
                        "give the Godot 4 names")


def run_check(retriever: Retriever, code: str, extends: str | None, context: dict[str, Any] | None) -> ApiCheck:
    try:
        code = check_chunk_text(code)
        request = RequestContext.parse(context)
        cfg = RetrieveConfig.from_mapping({"extends": extends} if extends else {})
    except (ChunkTextError, ConfigError) as e:
        raise ToolError(str(e)) from None
    facts = parse_chunk(code)
    try:
        ref = retriever.class_reference()
        res = resolve_uses(facts, ref, extends_hint(facts, cfg.extends, request), cfg.resolve_max_hops,
                           project=request.index() if request is not None else None,
                           own_scope=request.own_scope() if request is not None else None)
        return check_resolved(retriever, ResolvedChunk(facts, res))
    except StoreError as e:
        raise ToolError(str(e)) from None


def answer(result: ApiCheck, payloads: Mapping[str, Any]) -> CheckAnswer:
    from ..gdscript.api_check import prototype_id

    findings = [CheckedFinding(kind=f.kind, severity=SEVERITY[f.kind], line=f.line, col=f.col, api=f.api,
                               message=f.message, action=action_of(f, payloads.get(prototype_id(f)) or {}),
                               reference=f.reference.url) for f in result.findings]
    undecided = undecided_summary(result.undecided)
    if findings:
        summary = f"{len(findings)} finding(s) in {result.checked} engine API use(s) checked"
    else:
        summary = (f"{result.checked} engine API use(s) resolved in Godot {REFERENCE_VERSION}; none removed, renamed, "
                   "deprecated or called with a wrong number of arguments")
    if result.undecided:
        summary += f"; {len(result.undecided)} use(s) not decided: their receiver's class is not stated"
    return CheckAnswer(reference_version=REFERENCE_VERSION, summary=summary, findings=findings,
                       checked=result.checked, undecided=undecided)


def add_check(server: MCPServer, retriever: Retriever) -> None:
    @server.tool(description="Check GDScript you have just written against the Godot 4 class reference: deprecated "
                             "and experimental API, members the receiver's engine class lacks (with the closest real "
                             "ones), wrong argument counts; each finding with its line, the action and the reference "
                             "entry. Only receivers whose engine class the code states are checked; the rest are "
                             "listed as undecided.")
    def check(code: Annotated[str, Field(description="The GDScript code (a function, a file).")],
              godot_version: Annotated[str | None, Field(max_length=20, description="4, 4.3, ...")] = None,
              extends: Annotated[str | None, Field(max_length=200, description="The script's class when the code has "
                                                   "no `extends` line.")] = None,
              context: Annotated[dict[str, Any] | None, Field(description="The project around the code, as `evidence` "
                                                              "takes it: a name the project declares is not engine API.")] = None,
              ) -> CheckAnswer:
        godot4(godot_version)
        result = run_check(retriever, code, extends, context)
        try:
            payloads: Mapping[str, Any] = retriever.records("label_prototypes") if result.findings else {}
        except StoreError as e:
            raise ToolError(str(e)) from None
        return answer(result, payloads)
