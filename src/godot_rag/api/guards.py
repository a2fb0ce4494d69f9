"""What every HTTP answer and request goes through: the JSON error answer, the allowed Host names and
the cap on a request body's size."""
from __future__ import annotations

import json

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import Message, Receive, Scope, Send

from ..errors import mask_secrets

MAX_BODY = 2**20  # bytes of a request body, unless the route has its own cap (BODY_LIMITS in create_app)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")


class ErrorResponse(JSONResponse):
    """{"error": ...} written in ASCII: a message may quote input that UTF-8 cannot encode (a lone
    surrogate), which would turn a 4xx into a 500 while the answer is written."""

    def render(self, content) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def error(status: int, message: str, **extra) -> JSONResponse:
    """The one error answer: `{"error": "one line", ...}`, with no password (a driver's message may quote a DSN)."""
    text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    return ErrorResponse(status_code=status, content={"error": mask_secrets(text), **extra})


class BodyTooLarge(HTTPException):
    """Raised while a body is read, past its cap; answered 413 by the app's handler."""

    def __init__(self, limit: int):
        super().__init__(413, f"the request body is over {limit} bytes")
        self.limit = limit


def host_name(header: str) -> str:
    """The name in a Host header, without the port: `[::1]:8000` -> `::1`, `Example.org:80` -> `example.org`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware. `allowed_hosts` (None: any): a request whose Host header names another host is
    refused (400), so that a page served under another name cannot drive this server through DNS
    rebinding. Every request body is capped (`limits`: path -> bytes, else `default_limit`): a declared
    Content-Length over the cap is refused before reading, and a body that grows past it while it is read
    stops there (413)."""

    def __init__(self, app, allowed_hosts=None, limits: dict[str, int] | None = None, default_limit: int = MAX_BODY):
        self.app = app
        self.allowed = None if allowed_hosts is None else {host_name(h) for h in allowed_hosts}
        self.limits = dict(limits or {})
        self.default_limit = default_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        if self.allowed is not None and host_name(headers.get("host", "")) not in self.allowed:
            shown = headers.get("host", "")[:100] or "(none)"
            return await error(400, f"Host {shown!r} is not allowed by this server; "
                                    "`godot-rag serve --allow-host NAME` adds a name")(scope, receive, send)
        limit = self.limits.get(scope.get("path", ""), self.default_limit)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return await error(413, f"the request body is over {limit} bytes")(scope, receive, send)
        seen = 0

        async def capped_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, capped_receive, send)
