"""Read a JSON Lines input file; a bad line raises an error naming the file and the line."""
from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import BinaryIO, Callable, ContextManager, Iterator

STDIN = Path("-")  # a path argument of `-` reads standard input


def open_input(path: Path) -> ContextManager[BinaryIO]:
    """The file's bytes, or standard input's for `-` (left open: it is not ours)."""
    return nullcontext(sys.stdin.buffer) if path == STDIN else open(path, "rb")


def read_jsonl_lines(path: Path) -> Iterator[tuple[int, object, str | None]]:
    """Yields (line number, parsed value, None), or (line number, None, what is wrong) for a line that
    is not UTF-8 or not JSON; blank lines are skipped. Lines are read as they come: a pipe is answered
    line by line, and a large file is never held whole."""
    with open_input(path) as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                yield n, None, f"not UTF-8 (byte {e.start})"
                continue
            if not line.strip():
                continue
            try:
                yield n, json.loads(line), None
            except json.JSONDecodeError as e:
                yield n, None, f"malformed JSON: {e.msg} at column {e.colno}"


def iter_jsonl(path: Path, error: Callable[[int, str], Exception] | None = None) -> Iterator[tuple[int, object]]:
    """Yields (line number, parsed value). `error(line, message)` builds the exception for a bad line."""
    error = error or (lambda n, msg: ValueError(f"{path}:{n}: {msg}"))
    for n, value, problem in read_jsonl_lines(path):
        if problem is not None:
            raise error(n, problem)
        yield n, value
