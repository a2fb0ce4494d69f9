"""Read a JSON Lines input file; a bad line raises an error naming the file and the line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator


def iter_jsonl(path: Path, error: Callable[[int, str], Exception] | None = None) -> Iterator[tuple[int, object]]:
    """Yields (line number, parsed value). `error(line, message)` builds the exception for a bad line."""
    error = error or (lambda n, msg: ValueError(f"{path}:{n}: {msg}"))
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise error(n, f"not UTF-8 (byte {e.start})") from None
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise error(n, f"malformed JSON: {e.msg} at column {e.colno}") from None
