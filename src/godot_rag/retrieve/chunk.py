"""The one check of a chunk before any stage sees it: not empty, not over the size limit, text."""
from __future__ import annotations

from .config import MAX_CHUNK_CHARS


class ChunkError(ValueError):
    """The chunk itself is unusable (empty, or over the size limit)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status

    def __reduce__(self):  # survives the trip back from a --batch worker process
        return (ChunkError, (str(self), self.status))


def check_chunk(chunk: str) -> str:
    if chunk is None or not chunk.strip():
        raise ChunkError("chunkText is empty: pass the raw GDScript chunk", 422)
    if len(chunk) > MAX_CHUNK_CHARS:
        raise ChunkError(f"chunkText is {len(chunk)} characters; the limit is {MAX_CHUNK_CHARS}. "
                         "Split the file into functions or blocks first.", 413)
    if "\x00" in chunk:
        at = chunk.index("\x00")
        line = chunk.count("\n", 0, at) + 1
        col = at - (chunk.rfind("\n", 0, at) + 1) + 1
        raise ChunkError(f"chunkText holds a NUL byte at line {line}, column {col}: a .gd file is text, "
                         "pass the chunk as it is in the file", 422)
    return chunk
