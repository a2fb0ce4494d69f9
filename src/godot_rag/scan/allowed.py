"""Server-side project folders a client may have scanned: only under the directories the server
was given (`serve`/`mcp --allow-path DIR`). Used by `POST /api/scan` and the MCP `scan` tool."""
from __future__ import annotations

import os
from pathlib import Path

MAX_PATH_CHARS = 4096
MALFORMED_PATH = "malformed path: give an absolute folder path on the server, as text without NUL or control characters"
OUTSIDE_PATH = "the path is not under a directory the server allows (--allow-path)"


class PathNotAllowed(ValueError):
    """One line for the client; `status` is the HTTP answer (403 not allowed, 400 malformed or not a folder)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def allowed_folder(raw: str, roots: list[Path], enable: str) -> Path:
    """The real folder a client's `raw` path names. The allowed roots are checked on the text first, so
    nothing outside them is resolved or stat'ed (and "outside" answers the same whether the path
    exists or not); then the real path, links resolved, must be under an allowed root too. `enable`
    names the flag that allows folders (the message when there are none)."""
    if not roots:
        raise PathNotAllowed(f"server-side paths are off: start the server with `{enable}`", 403)
    if not isinstance(raw, str):
        raise PathNotAllowed(MALFORMED_PATH, 400)
    try:
        raw.encode("utf-8")  # lone surrogates: text that names no file
    except UnicodeEncodeError:
        raise PathNotAllowed(MALFORMED_PATH, 400) from None
    if not os.path.isabs(raw) or len(raw) > MAX_PATH_CHARS or any(ord(ch) < 32 or ch == "\x7f" for ch in raw):
        raise PathNotAllowed(MALFORMED_PATH, 400)
    lexical = Path(os.path.normpath(raw))
    if not any(lexical == r or lexical.is_relative_to(r) for r in roots):
        raise PathNotAllowed(OUTSIDE_PATH, 403)
    try:
        real = Path(os.path.realpath(lexical))
    except (OSError, ValueError):
        raise PathNotAllowed(MALFORMED_PATH, 400) from None
    if not any(real == r or real.is_relative_to(r) for r in roots):
        raise PathNotAllowed(OUTSIDE_PATH, 403)
    if not real.is_dir():
        raise PathNotAllowed("no such directory under the allowed directories", 400)
    return real
