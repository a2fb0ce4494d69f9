"""Whether a chunk copies a guide record's code (`copied_share`): a block of the chunk that the record's code holds
up to renaming, anchored by something of the chunk's own content (`copy_anchor`)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...gdscript.lexicon import KEYWORDS
from ..query.segment import split_segments
from ..recall.codematch import clone_match, code_tokens, is_ident, numbered_code_lines

MIN_BLOCK_LINES = 3  # code lines of a top-level block of the chunk that a page may copy on its own
QUOTES = "\"'"  # a string token opens with one


@dataclass(frozen=True)
class CopyNames:
    """The names a copy of a record's code may rename, and those it keeps. `renameable`: the chunk's names a copy may
    rename; `api_names`: the record's API (`DocsApiStats.code_api_names`), which a copy keeps: no name of the chunk
    is renamed to one of them, but for the Godot 4 name `renames` gives it (the converter's renames, Godot 3 name ->
    Godot 4 names); `hub_names`: API names that anchor nothing (`DocsApiStats.hub_names`, `copy_anchor`)."""
    renameable: frozenset[str]
    api_names: frozenset[str] = frozenset()
    renames: Mapping[str, frozenset[str]] | None = None
    hub_names: frozenset[str] = frozenset()


def copied_share(chunk: str, code: str, names: CopyNames, min_lines: int = MIN_BLOCK_LINES) -> float:
    """The largest share of one block of the chunk (the whole chunk, or a top-level block of it with at least
    `min_lines` code lines) that the record's code holds up to renaming (`names`), each record line copied once: a
    chunk made of two pages' code copies each of them in one of its blocks. A block counts only when its matched
    lines keep something of the chunk's content as it is (`copy_anchor`)."""
    return copied_shares(chunk, code, names, min_lines)[0]


def copied_shares(chunk: str, code: str, names: CopyNames, min_lines: int = MIN_BLOCK_LINES) -> tuple[float, float]:
    """(`copied_share`, the same share counting blocks without an anchor too): what the trace shows of a copy of
    nothing but the code's frame."""
    best, loose = 0.0, 0.0
    blocks = split_segments(chunk)
    for i, text in enumerate([chunk] + (blocks if len(blocks) > 1 else [])):
        ratio, lines = clone_match(text, code, names.renameable, one_to_one=True, record_api=names.api_names,
                                   renames=names.renames)
        if not ratio or (i and len(lines) < min_lines):
            continue
        loose = max(loose, ratio)
        if copy_anchor(text, lines, code, names.renameable, api=len(lines) >= min_lines,
                       hub_names=names.hub_names) is not None:
            best = max(best, ratio)
    return best, loose


def copy_anchor(text: str, lines: list[int], code: str, renameable: frozenset[str], api: bool = True,
                hub_names: frozenset[str] = frozenset()) -> str | None:
    """The first name or string that the chunk's matched lines keep as they are in the record's `code` (a keyword
    does not count; an author's name counts only where the record has it too, not renamed), or None. A function's
    signature line does not count: with it, a chunk of `func _ready() -> void:` and a call of the author's
    `_tween()` would copy every page whose code has a `_ready` that calls a function of its own (the callback
    weighs in the model's `shared_callback`). `api=False` (a copy of fewer than MIN_BLOCK_LINES lines): a name of
    the API does not count either. A handler's signature and `results.clear()` match any page's function that
    clears a list of its own; the author's names (`min_speed`, `_find_other`) or a string make it a copy. A name of
    `hub_names` (only hub classes have it: `free`, `queue_free`, `add_child`) never counts: `if x:` / `x.free()` four
    times is the frame of any cleanup, an XR manager's as much as a physics test's."""
    kept = code_tokens(code)  # a chunk name the record has is never renamed (`lines_match`): it matched as it is
    numbered = dict(numbered_code_lines(text))
    return next((t for n in lines if "func" not in (toks := numbered.get(n, ())) for t in toks
                 if t[0] in QUOTES or (is_ident(t) and t not in KEYWORDS and t not in hub_names
                                       and (t in kept if t in renameable else api))), None)
