"""The one check of a chunk's text, made where the text comes in (the CLI, a batch line, an HTTP
request, an MCP tool call) and again by `Retriever.retrieve`, so no stage ever sees text it cannot
handle. One message per problem; `status` is the HTTP status the problem answers with."""
from __future__ import annotations

MAX_CHUNK_CHARS = 20_000  # characters: a chunk is a function or a block, never a whole large file

# problem -> HTTP status: an over-long chunk is too large (413), every other problem is unprocessable (422)
STATUS = {"type": 422, "empty": 422, "too_long": 413, "nul": 422, "not_utf8": 422}


class ChunkTextError(ValueError):
    """The chunk's text is unusable: not text, empty, too long, holding a NUL, or not encodable as UTF-8."""

    def __init__(self, message: str, problem: str):
        super().__init__(message)
        self.problem = problem
        self.status = STATUS[problem]

    def __reduce__(self) -> tuple[type[ChunkTextError], tuple[str, str]]:  # survives the trip back from a --batch worker process
        return (ChunkTextError, (str(self), self.problem))


def _where(text: str, at: int) -> str:
    line = text.count("\n", 0, at) + 1
    return f"line {line}, column {at - (text.rfind(chr(10), 0, at) + 1) + 1}"


def check_chunk_text(text: object) -> str:
    """`text` unchanged when it is a usable chunk; otherwise ChunkTextError with one clear message."""
    if not isinstance(text, str):
        raise ChunkTextError(f"chunkText must be a string, not {type(text).__name__}", "type")
    if not text.strip():
        raise ChunkTextError("chunkText is empty: pass the raw GDScript chunk", "empty")
    if len(text) > MAX_CHUNK_CHARS:
        raise ChunkTextError(f"chunkText is {len(text)} characters; the limit is {MAX_CHUNK_CHARS}. "
                             "Split the file into functions or blocks first.", "too_long")
    if "\x00" in text:
        raise ChunkTextError(f"chunkText holds a NUL byte at {_where(text, text.index(chr(0)))}: a .gd file is text, "
                             "pass the chunk as it is in the file", "nul")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:  # lone surrogates: a str can hold them, UTF-8 (and every model) cannot
        raise ChunkTextError(f"chunkText holds U+{ord(text[e.start]):04X} (a lone surrogate) at {_where(text, e.start)}, "
                             "which UTF-8 cannot encode: send the chunk as UTF-8 text", "not_utf8") from None
    return text
