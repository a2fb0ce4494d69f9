"""Split a chunk that touches several topics into segments (top-level functions or blocks).

A boundary is a blank line followed by a line at the chunk's base indentation.
When that gives a single segment (one function), the body is split the same way at
its own indentation: the paragraphs a programmer separates with blank lines.
Segments shorter than `min_lines` code lines are joined to their neighbour, so a
lone `extends Node` or `var x` does not become a query of its own.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import NamedTuple

from ...gdscript.tokenize import local_weights, tokenize, tokenizer_of
from ..engine.resources import Resources
from ..engine.stage import Stage
from ..engine.state import QueryState

SEGMENTS_CACHE = 1024  # chunks kept split: the guide model splits the chunk again for each guide it decides


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def split_segments(text: str, min_lines: int = 2) -> list[str]:
    return list(_segments(text, min_lines))


@lru_cache(maxsize=SEGMENTS_CACHE)
def _segments(text: str, min_lines: int) -> tuple[str, ...]:
    segs = _split_at(text, None, min_lines)
    if len(segs) == 1:
        code = [l for l in text.split("\n") if l.strip()]
        inner = sorted({_indent(l) for l in code})
        if len(inner) > 1:
            segs = _split_at(text, inner[1], min_lines)
    return tuple(segs)


def _split_at(text: str, level: int | None, min_lines: int) -> list[str]:
    lines = text.split("\n")
    code = [l for l in lines if l.strip()]
    if not code:
        return []
    base = min(_indent(l) for l in code) if level is None else level
    blocks: list[list[str]] = [[]]
    prev_blank = False
    for line in lines:
        if not line.strip():
            prev_blank = True
            blocks[-1].append(line)
            continue
        if prev_blank and _indent(line) == base and any(l.strip() for l in blocks[-1]):
            blocks.append([])
        blocks[-1].append(line)
        prev_blank = False
    merged: list[list[str]] = []
    for block in blocks:
        if merged and sum(1 for l in merged[-1] if l.strip()) < min_lines:
            merged[-1].extend(block)
        else:
            merged.append(list(block))
    if len(merged) > 1 and sum(1 for l in merged[-1] if l.strip()) < min_lines:
        tail = merged.pop()
        merged[-1].extend(tail)
    return ["\n".join(b).strip("\n") for b in merged if any(l.strip() for l in b)]


class Segmented(NamedTuple):
    texts: list[str]  # the BM25 query texts: the whole chunk, then its segments


def run_segment(q: QueryState[Resources]) -> Segmented:
    """The segment stage: the chunk's top-level blocks (or a function's paragraphs) become extra BM25 texts."""
    texts = [q.chunk]
    if q.cfg.segments:
        segs = split_segments(q.chunk)
        if len(segs) > 1:
            texts = [q.chunk, *segs]
            q.trace.segments = segs
    q.note(segments=len(texts) - 1)
    return Segmented(texts)


SEGMENT = Stage("segment", run_segment, "split a chunk touching several topics into blocks; each gets its own BM25 list")


class QueryTerms(NamedTuple):
    tokens: list[list[str]]  # the BM25 query terms of each query text (the chunk, then its segments)
    weights: dict[str, float] | None  # BM25 weights of the chunk's own names (None: not down-weighted)


class Tokenized(NamedTuple):
    terms: QueryTerms


def run_tokenize(q: QueryState[Resources], texts: list[str]) -> Tokenized:
    """The tokenize stage: the BM25 query terms of each text, and the weights of the chunk's own names."""
    tok = tokenizer_of(q.cfg)
    tokens = [tokenize(t, tok) for t in texts]
    term_weights = local_weights(texts[0], q.cfg.local_weight)
    q.trace.tokens = tokens[0]
    counts = Counter(tokens[0])
    q.note(tokenizer=tok.key(), tokens=len(tokens[0]), unique=len(counts), top=counts.most_common(40),
           local_names=sorted(term_weights or {}), local_weight=q.cfg.local_weight)
    return Tokenized(QueryTerms(tokens, term_weights))


TOKENIZE = Stage("tokenize", run_tokenize, "code-aware tokens: identifiers whole and lowercased, string literals as code")
