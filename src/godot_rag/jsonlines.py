"""The one JSON reader for every input (HTTP bodies, batch lines, MCP arguments, settings files): its size
and nesting are capped, and any failure is one short message (`JSONInputError`), never a traceback. Also
reads a JSON Lines input file; a bad line costs that line alone."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import BinaryIO

STDIN = Path("-")  # a path argument of `-` reads standard input
MAX_DEPTH = 64  # nesting levels of arrays and objects: real requests use 4, and Python's parser recurses
MAX_JSON_BYTES = 64 * 2**20  # one value (a line, a body): far over any real chunk with its project context


class JSONInputError(ValueError):
    """An input that is not the JSON it should be; `status`: the HTTP status that answers it."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _too_deep(value: object, limit: int) -> bool:
    """Whether `value` nests arrays or objects more than `limit` levels (an explicit stack: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[object] = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def parse_json(data: bytes | str, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_DEPTH) -> object:
    """The parsed value of one JSON text, or `JSONInputError`: over `max_bytes` (413), not UTF-8, malformed or
    nested over `max_depth` levels (400). A lone surrogate (`"\\ud800"`) is kept: the check of the field it
    is in names its place (chunk_text.py)."""
    if len(data) > max_bytes:
        raise JSONInputError(f"the JSON input is over {max_bytes} bytes", 413)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise JSONInputError(f"not UTF-8 (byte {e.start})") from None
    try:
        value = json.loads(data)
    except json.JSONDecodeError as e:
        raise JSONInputError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:  # Python's parser gives up long before memory does
        raise JSONInputError(f"malformed JSON: nested more than {max_depth} levels") from None
    if _too_deep(value, max_depth):
        raise JSONInputError(f"malformed JSON: nested more than {max_depth} levels")
    return value


def unknown_fields(value: dict, valid: Iterable[str]) -> str | None:
    """The one message for keys an input object may not have, or None when it has none."""
    known = list(valid)
    unknown = sorted(str(k)[:60] for k in value if k not in known)
    if not unknown:
        return None
    return f"unknown field(s) {', '.join(unknown[:5])}; valid: {', '.join(known)}"


def open_input(path: Path) -> AbstractContextManager[BinaryIO]:
    """The file's bytes, or standard input's for `-`: a reader of our own on fd 0, left open (it is not
    ours). A thread blocked in it then never holds the lock of `sys.stdin`, which the interpreter takes
    when it exits."""
    if path == STDIN:
        return nullcontext(open(sys.stdin.fileno(), "rb", closefd=False))
    return open(path, "rb")


def read_jsonl_lines(path: Path) -> Iterator[tuple[int, object, str | None]]:
    """Yields (line number, parsed value, None), or (line number, None, what is wrong) for a line that
    `parse_json` refuses; blank lines are skipped. Lines are read as they come: a pipe is answered
    line by line, and a large file is never held whole."""
    with open_input(path) as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield n, parse_json(raw), None
            except JSONInputError as e:
                yield n, None, str(e)


def iter_jsonl(path: Path, error: Callable[[int, str], Exception] | None = None) -> Iterator[tuple[int, object]]:
    """Yields (line number, parsed value). `error(line, message)` builds the exception for a bad line."""
    error = error or (lambda n, msg: ValueError(f"{path}:{n}: {msg}"))
    for n, value, problem in read_jsonl_lines(path):
        if problem is not None:
            raise error(n, problem)
        yield n, value
