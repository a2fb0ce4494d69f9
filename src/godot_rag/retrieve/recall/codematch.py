"""Code-clone match: how much of the chunk's code appears, line for line, in a record's code.

Two lines match when their token sequences are equal up to a consistent renaming of
identifiers (a "type-2 clone"): `v1.autostart = true` matches `timer.autostart = true`.
Renaming is allowed only for the author's names (what the chunk declares, and names the
Godot 4 API does not know) that the record never uses, and never for API names, keywords,
literals or operators: `Vector2` against `Vector3`, or `_process` against `_physics_process`,
is a contradiction, not a match. The ratio is the share of the chunk's tokens (in
lines of 3 tokens or more) that sit in matching lines. It is a structural signal, not
a Godot rule, and it only multiplies the fused score: score * (1 + alpha * ratio).
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import NamedTuple

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts, parse_chunk
from ...gdscript.lexicon import IDENT, KEYWORDS
from ...records import record_code
from ..engine.stage import Stage
from ..engine.state import Pool, Pooled, QueryState
from ..engine.trace import RATIO_DIGITS, SCORE_DIGITS, CodematchInfo, built_by
from ..engine.types import Candidate
from .resources import RecallResources

TOKEN_RE = re.compile(IDENT + r"|\d+(?:\.\d+)?|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|"
                      r"==|!=|<=|>=|\+=|-=|\*=|/=|->|:=|\S")


MIN_LINE_TOKENS = 3  # decided: a shorter line (`pass`, `else:`, `}`) matches in any code, so it is no evidence
MATCHED_LINES_SHOWN = 12  # matched lines the trace lists
CODE_CACHE = 32_768  # codes kept tokenized (records' and chunks')
CHUNK_LINES_CACHE = 256  # chunks (and their segments and blocks) kept with their fixed tokens: one query reuses a few


@lru_cache(maxsize=CODE_CACHE)
def numbered_code_lines(code: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """(1-based line number, tokens) of each line with 3 tokens or more once its comment is cut.
    Cached: a record's code is matched by codematch and again by the validator, for every segment."""
    out = []
    for n, line in enumerate(code.split("\n"), 1):
        toks = TOKEN_RE.findall(line)
        if "#" in toks:  # a string is one token, so a lone `#` starts the comment (`# The player's ...` too)
            toks = toks[: toks.index("#")]
        if len(toks) >= MIN_LINE_TOKENS:
            out.append((n, tuple(toks)))
    return tuple(out)


@lru_cache(maxsize=CODE_CACHE)
def _record_lines(code: str) -> tuple[frozenset[str], dict[int, list[tuple[str, ...]]]]:
    """A record's code lines by length, and its tokens (read-only)."""
    by_len: dict[int, list[tuple[str, ...]]] = defaultdict(list)
    for _, line in numbered_code_lines(code):
        by_len[len(line)].append(line)
    return frozenset(t for lines in by_len.values() for line in lines for t in line), dict(by_len)


def code_tokens(code: str) -> frozenset[str]:
    """The tokens of a code's matchable lines (read-only)."""
    return _record_lines(code)[0]


def code_identifiers(code: str) -> frozenset[str]:
    """The identifiers of a code's matchable lines (what a clone match can rename)."""
    return frozenset(t for t in code_tokens(code) if is_ident(t))


def is_ident(tok: str) -> bool:
    return tok[0].isalpha() or tok[0] == "_"


def lines_match(q: Sequence[str], d: Sequence[str], record_tokens: AbstractSet[str], renameable: AbstractSet[str],
                record_api: AbstractSet[str] = frozenset(), renames: Mapping[str, AbstractSet[str]] | None = None) -> bool:
    """`record_api`: the record's names a chunk name may not be renamed to (the API it calls, in a copy), unless
    `renames` gives that name as the chunk name's Godot 4 one (`AnimatedSprite` -> `AnimatedSprite2D`)."""
    renaming: dict[str, str] = {}
    for a, b in zip(q, d):
        if a == b:
            continue
        if (not (is_ident(a) and is_ident(b)) or a in KEYWORDS or b in KEYWORDS or a in record_tokens
                or a not in renameable or (b in record_api and b not in (renames or {}).get(a, ()))):
            return False
        if renaming.setdefault(a, b) != b:
            return False
    return True


def _fixed_tokens(line: tuple[str, ...], renameable: frozenset[str]) -> frozenset[str]:
    """The tokens of a chunk line that `lines_match` can only match by equality."""
    return frozenset(t for t in line if not (is_ident(t) and t not in KEYWORDS and t in renameable))


ChunkLine = tuple[int, tuple[str, ...], frozenset[str]]  # (line number, tokens, the tokens matched only as they are)


@lru_cache(maxsize=CHUNK_LINES_CACHE)
def _chunk_lines(chunk: str, renameable: frozenset[str]) -> tuple[tuple[ChunkLine, ...], int, frozenset[int]]:
    """The chunk's code lines, each with its fixed tokens, their token count, and the lines' lengths (a record
    with no line of any of them matches none). Cached for the query: the chunk is matched against every
    candidate record (a str and a frozenset keep their hash, so the key costs nothing); a long batch never needs
    an old chunk again, so few are kept."""
    qlines = numbered_code_lines(chunk)
    return (tuple((n, line, _fixed_tokens(line, renameable)) for n, line in qlines), sum(len(t) for _, t in qlines),
            frozenset(len(t) for _, t in qlines))


def renameable_names(facts: GDScriptFacts, ref: ClassReference | None = None) -> frozenset[str]:
    """The author's names: what the chunk declares (less the engine callbacks it overrides, `_process`),
    and names the Godot 4 API does not know (a fragment's locals declared above it). Without the class
    reference, a capitalised name is taken for a class and kept."""
    names = set(facts.declared)
    if ref is not None:
        names -= {f for f in facts.functions if ref.exists(f)}
        names |= {i for i in facts.identifiers if i not in facts.declared and not ref.exists(i) and not ref.global_member(i)}
    else:
        names |= {i for i in facts.identifiers if i not in facts.declared and not i[0].isupper()}
    return frozenset(names)


def clone_match(chunk: str, code: str, renameable: frozenset[str] | None = None,
                one_to_one: bool = False, record_api: AbstractSet[str] = frozenset(),
                renames: Mapping[str, AbstractSet[str]] | None = None) -> tuple[float, list[int]]:
    """(ratio of chunk tokens in matching lines, the chunk's line numbers (1-based) of those lines).
    `one_to_one`: each line of the record stands for one line of the chunk at most, as in a copy (four
    `var _a : bool = false` lines of the chunk are not four lines copied from one such line of a record).
    `record_api`: names of the record's code that a chunk name may not be renamed to: what a copy needs (the
    chunk's `options.add_item(A)` is no copy of `agent.set_target_position(target)`, whose method is API), but
    for the Godot 4 names `renames` gives the chunk's Godot 3 ones."""
    if renameable is None:
        renameable = renameable_names(parse_chunk(chunk))
    qlines, total, lengths = _chunk_lines(chunk, frozenset(renameable))  # a frozenset is its own copy
    tokens, by_len = _record_lines(code)
    if not qlines or not by_len or lengths.isdisjoint(by_len):
        return 0.0, []
    matched, hit = [], 0
    used: set[tuple[int, int]] = set()  # (length, index) of the record lines a copy has used
    for n, line, fixed in qlines:
        same_length = by_len.get(len(line))
        # A token that may not be renamed must appear as it is: a line with one the record lacks matches nothing.
        if not same_length or not fixed <= tokens:
            continue
        found = next((i for i, d in enumerate(same_length)
                      if (len(line), i) not in used and lines_match(line, d, tokens, renameable, record_api, renames)), None)
        if found is not None:
            if one_to_one:
                used.add((len(line), found))
            matched.append(n)
            hit += len(line)
    return hit / total, matched


class CloneMatch(NamedTuple):
    """One candidate's match: the share of the chunk's code lines found, the score before the bonus, the lines."""
    ratio: float
    before: float
    matched: list[int]


def _codematch_info(chunk: str, alpha: float, found: CloneMatch, score: float, rank: int) -> CodematchInfo:
    """The info, built only when read: most candidates stop at the shortlist, and nothing reads theirs."""
    ratio, before, matched = found
    qlines = dict(numbered_code_lines(chunk))
    return CodematchInfo(ratio=round(ratio, RATIO_DIGITS), alpha=alpha, score_before=round(before, SCORE_DIGITS),
                         score=round(score, SCORE_DIGITS), rank=rank,
                         matched_lines=[" ".join(qlines[n]) for n in matched[:MATCHED_LINES_SHOWN]])


_CODES: dict[int, tuple[dict, str]] = {}  # id(payload) -> (that payload, its code): held, so the id stays its own


def _code_of(payload: dict) -> str:
    """`record_code`, once per stored record (payloads are read-only): a query matches a few hundred records,
    and joining the code again made a new string whose hash the cached tokenizing had to compute again."""
    got = _CODES.get(id(payload))
    if got is None or got[0] is not payload:
        if len(_CODES) >= CODE_CACHE:
            _CODES.clear()
        got = _CODES[id(payload)] = (payload, record_code(payload))
    return got[1]


def apply_codematch(chunk: str, candidates: list[Candidate], alpha: float,
                    renameable: frozenset[str] | None = None) -> tuple[list[Candidate], int]:
    """(the candidates re-ranked by the clone bonus, how many of them match a line of the chunk)."""
    if renameable is None:
        renameable = renameable_names(parse_chunk(chunk))
    scored = []
    for c in candidates:  # re-scored in place: this query's own copies, made by the union
        ratio, matched = clone_match(chunk, _code_of(c.payload), renameable) if c.table == "docs_chunks" else (0.0, [])
        before = c.score
        c.score = before * (1 + alpha * ratio)
        scored.append((c, CloneMatch(ratio, before, matched)))
    scored.sort(key=lambda x: (-x[0].score, x[0].id))
    out = []
    for i, (c, found) in enumerate(scored):
        c.rank = i + 1
        c.add_stage("codematch", built_by(CodematchInfo, _codematch_info, chunk, alpha, found, c.score, i + 1))
        out.append(c)
    return out, sum(1 for _, found in scored if found.ratio and round(found.ratio, RATIO_DIGITS) > 0)


def run_codematch(q: QueryState[RecallResources], pool: Pool, texts: list[str]) -> Pooled:
    """Docs only: the other tables hold no code to match."""
    alpha = q.cfg.codematch_alpha
    if not alpha or "docs_chunks" not in pool:
        q.note(skipped="codematch_alpha is 0" if not alpha else "no docs_chunks")
        return Pooled(pool)
    out = dict(pool)
    matched = [apply_codematch(text, lst, alpha) for text, lst in zip(texts, pool["docs_chunks"])]
    out["docs_chunks"] = [lst for lst, _ in matched]
    q.record_ids("docs_chunks", "codematch", out["docs_chunks"][0])
    q.note(alpha=alpha, with_match=matched[0][1])
    return Pooled(out)


CODEMATCH = Stage("codematch", run_codematch,
                  "code-clone bonus: fused x (1 + share of the chunk's code lines found in the record's code, up to renaming)")
