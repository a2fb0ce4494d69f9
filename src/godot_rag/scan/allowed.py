"""Server-side project folders a client may have scanned: only under the directories the server
was given (`--allow-path DIR`, env GODOT_RAG_SCAN_ALLOW_PATH, os.pathsep-separated). Used by
`POST /api/scan` and the MCP `scan` tool."""
from __future__ import annotations

import os
from pathlib import Path

ALLOW_ENV = "GODOT_RAG_SCAN_ALLOW_PATH"


class PathNotAllowed(ValueError):
    """One line for the client; `status` is the HTTP answer (403 not allowed, 400 not a folder)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def allowed_roots() -> list[Path]:
    raw = os.environ.get(ALLOW_ENV, "")
    return [Path(p).resolve() for p in raw.split(os.pathsep) if p.strip()]


def allowed_folder(raw: str, roots: list[Path], enable: str) -> Path:
    """`raw` resolved (links followed), when it is a folder under one of `roots`. `enable` names the flag
    that allows folders (the message when there are none)."""
    if not roots:
        raise PathNotAllowed(f"server-side paths are off: start the server with `{enable}`", 403)
    try:
        real = Path(raw).expanduser().resolve(strict=True)
    except (OSError, RuntimeError):
        raise PathNotAllowed(f"{raw[:300]}: no such directory", 400) from None
    if not any(real == r or real.is_relative_to(r) for r in roots):
        raise PathNotAllowed(f"{raw[:300]}: not under a directory the server allows (--allow-path)", 403)
    if not real.is_dir():
        raise PathNotAllowed(f"{raw[:300]}: not a directory", 400)
    return real
