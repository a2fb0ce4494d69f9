"""`godot-rag mcp` over stdio: the SDK's transport, with every line read through the one JSON reader first.
The SDK's own reader drops a line it cannot decode without a word (a malformed line, a lone surrogate,
nesting deeper than its parser goes), and the client then waits forever; here such a line is answered
with a JSON-RPC error (-32700 parse error, -32600 not a JSON-RPC message), as the HTTP transport does."""
from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..formats import one_line
from ..jsonlines import JSONInputError, parse_json

MAX_LINE_BYTES = 16 * 2**20  # one JSON-RPC message: a chunk with its project's symbol table fits many times


def _id_of(line: str) -> Any:
    """The id of a request Python's parser reads but ours refuses (a lone surrogate), else None."""
    try:
        value = json.loads(line) if len(line) <= MAX_LINE_BYTES else None
    except (ValueError, RecursionError):
        return None
    given = value.get("id") if isinstance(value, dict) else None
    return given if isinstance(given, (str, int)) and not isinstance(given, bool) else None


def refusal(line: str) -> tuple[int, str, Any] | None:
    """(JSON-RPC error code, message, the request's id or None) for a line the server cannot take, else None:
    one our JSON reader refuses, or one the SDK's own decoder would drop (a lone surrogate, not JSON-RPC)."""
    try:
        parse_json(line, max_bytes=MAX_LINE_BYTES)
    except JSONInputError as e:
        return types.PARSE_ERROR, f"parse error: {e}", None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as e:
        if any(err.get("type") == "json_invalid" for err in e.errors()):
            return types.PARSE_ERROR, f"parse error: {one_line(str(e.errors()[0].get('msg')))[:200]}", _id_of(line)
        return types.INVALID_REQUEST, "invalid request: not a JSON-RPC 2.0 message", _id_of(line)
    return None


class CheckedLines:
    """The lines of stdin for the SDK's reader: a line `refusal` names is answered on `attach`'s stream
    and never reaches the SDK; blank lines are skipped."""

    def __init__(self, lines: AsyncIterable[str]):
        self._lines = lines
        self._replies: Any = None
        self._attached = anyio.Event()

    def attach(self, write_stream) -> None:
        self._replies = write_stream
        self._attached.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            problem = refusal(line)
            if problem is None:
                yield line
                continue
            code, message, request_id = problem
            await self._attached.wait()  # the first line may come before the server runs
            error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))
            await self._replies.send(SessionMessage(error))


def _stdin_lines() -> tuple[anyio.AsyncFile[str], Callable[[], None] | None]:
    """fd 0 as the SDK claims it (pointed at the null device meanwhile, so no child reads the wire), as text."""
    from mcp.server import stdio

    buffer, restore = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    return anyio.wrap_file(stdio._UnownedTextWrapper(buffer, encoding="utf-8", errors="replace")), restore


async def run_stdio(server) -> None:
    """`server.run_stdio_async`, with `CheckedLines` in front of the SDK's reader."""
    raw, restore = _stdin_lines()
    lines = CheckedLines(raw)
    try:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            lines.attach(write_stream)
            low = server._lowlevel_server
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        if restore is not None:
            restore()
