"""The judge's questions and how they are asked: the chunk with line numbers as the shared prefix, a question about
a mapping's occurrence or a docs record (`question_of`, the same for F and for calibration), the prompt's fingerprint
(`prompt_id`), and one asked question, cached per process (`ask`)."""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any, Protocol

from ...gdscript.lexicon import IDENT_RE, KEYWORDS
from ...records import model_text
from ..engine.types import Candidate

SYSTEM = ("You review Godot game code written in GDScript. You get SOURCE_CODE and then one question about it. "
          "Answer with JSON: {\"answer\": \"yes\" or \"no\", \"evidence\": [up to 3 exact strings found in both "
          "SOURCE_CODE and the record]}.")
MAX_CHUNK_CHARS = 1200  # about 350 tokens: the shared prefix costs ~2.5 s with the 1.5B on 2 cores
RECORD_CHARS = 300
NUMBERING_CHARS = 6  # what numbering adds to a line: `NNN| ` and its newline
LITERALS_ASKED = 10  # shared literals whose record lines a docs question shows
NOTES_CHARS, LINE_CHARS = 300, 200  # of a mapping's notes and of the chunk's line, in an occurrence question
CACHE_SIZE = 4096  # judged questions kept per process (a long-running `serve` stays bounded)
_cache: OrderedDict[tuple, dict] = OrderedDict()
_cache_lock = threading.Lock()  # questions to a server are asked from several threads
EXCERPT_LINE_CHARS = 160


class JudgeLLM(Protocol):
    """What the judge asks of an LLM (models.llm's local, remote and bundled ones)."""
    parallel: int  # questions it serves at once

    def identity(self) -> dict[str, Any]: ...

    def judge_answer(self, system: str, user: str, *, evidence: bool = False) -> dict[str, Any]: ...


def numbered(chunk: str) -> str:
    """The chunk with line numbers, so a question can point at a line; the shared prefix of every question."""
    out, size = [], 0
    for i, line in enumerate(chunk.splitlines(), 1):
        size += len(line) + NUMBERING_CHARS
        if size > MAX_CHUNK_CHARS:
            out.append("... (cut)")
            break
        out.append(f"{i:>3}| {line}")
    return "\n".join(out)


def prefix(chunk: str) -> str:
    return f"SOURCE_CODE (line numbers added):\n{numbered(chunk)}\n\n"


def docs_question(c: Candidate, evidence: list[str]) -> str:
    """The record's lines that hold the shared literals, then the question: about 70 tokens, 0.64 s with
    the 1.5B on 2 cores (the first 500 characters and a literal list were 162 tokens, 1.35 s)."""
    rec = focused_text(c.table, c.payload, evidence[:LITERALS_ASKED], limit=RECORD_CHARS)  # as the judge set keeps them
    return (f"RECORD (Godot 4 documentation):\n{rec}\n\n"
            "Question: does RECORD document the Godot API or the technique that SOURCE_CODE uses?")


def occurrence_question(c: Candidate, line: int, line_text: str) -> str:
    p = c.payload
    src, dst, change = p["source_api"], p["target_api"], p["change_type"].replace("_", " ")
    notes = (p.get("notes") or p.get("description") or "")[:NOTES_CHARS]
    return (f"MIGRATION RECORD: Godot 3 `{src}` became `{dst}` in Godot 4 ({change}). {notes}\n\n"
            f"Line {line}: {line_text.strip()[:LINE_CHARS]}\n\n"
            f"Question: is `{src}` on line {line} the Godot 3 `{src}` that became `{dst}` (yes), "
            f"or valid Godot 4 code as it stands (no)?")


def question_of(c: Candidate, chunk: str, at: tuple[int, int] | None, evidence: list[str]) -> tuple[str, str, bool]:
    """(cache key, question, whether to ask for cited evidence): the same for F and for calibration. `at`:
    the (line, column) of the occurrence a mapping's question is about; None for a docs question."""
    if at is not None:
        line_no, col = at
        lines = chunk.splitlines()
        line = lines[line_no - 1] if 0 < line_no <= len(lines) else ""
        return f"{c.table}:{c.id}@{line_no}:{col}", occurrence_question(c, line_no, line), False
    return f"{c.table}:{c.id}", docs_question(c, evidence), True


@lru_cache(maxsize=1)
def prompt_id() -> str:
    """A fingerprint of the questions as asked (chat template, system prompt, layout, record excerpt,
    answer prefix): a calibration holds only for the prompt it was measured with. Rendered from an
    example longer than every cut, so a change to a template or a limit changes it."""
    from ...models.llm import ANSWER_PREFIX, _chatml

    chunk = "extends Node2D\n\nfunc _ready():\n" + "".join(f"\tvar v{i} = Viewport.new()  # {'x' * 40}\n" for i in range(40))
    line = "\tvar v = Viewport.new()" + " " * 250 + "# end"
    doc = Candidate(table="docs_chunks", id="p#0", payload={
        "section_path": ["Page", "Section"],
        "content": "Viewport.new() and play() " + "long " * 60 + "\n"
                   + "".join(f"Line {i} about Viewport.new() and play(){' and more' * i}.\n" for i in range(30))})
    rename = Candidate(table="api_mapping", id="m", payload={"source_api": "Viewport", "target_api": "SubViewport",
                                                             "change_type": "class_rename", "notes": "Renamed. " * 60})
    literals = [f"Viewport.new{i}" for i in range(12)] + ["play"]
    text = "\x00".join([_chatml(SYSTEM, prefix(chunk) + docs_question(doc, literals)),
                        occurrence_question(rename, 4, line), ANSWER_PREFIX])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def check_cited(cited: list[str], chunk: str, record_text: str) -> tuple[list[str], list[str]]:
    ok: list[str] = []
    bad: list[str] = []
    for s in cited:
        s = s.strip()
        (ok if s and s in chunk and s in record_text else bad).append(s)
    return ok, bad


def ask(llm: JudgeLLM, chunk: str, key: str, question: str, evidence: bool) -> dict:
    """One judged question, cached per (model, chunk, question)."""
    ident = llm.identity()
    ck = (ident["model"], ident.get("sha256"), hashlib.sha256(chunk.encode()).hexdigest(), key, evidence,
          hashlib.sha256(question.encode()).hexdigest())
    with _cache_lock:
        if ck in _cache:
            _cache.move_to_end(ck)
            return dict(_cache[ck], cached=True)
    res = llm.judge_answer(SYSTEM, prefix(chunk) + question, evidence=evidence)
    out = {**res, "cached": False}
    with _cache_lock:
        _cache[ck] = out
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return out


def focused_text(table: str, rec: dict, literals: list[str], limit: int = 300) -> str:
    """The record as the Qwen judge reads it next to the chunk: a docs chunk's section path and the lines
    of its content that hold the most of the literals it shares with the chunk, in their order ("..."
    marks a gap), within `limit` characters (a cut at the head would often miss them, and every
    character costs prompt time). Without a shared name that fits, the head; other tables: their model text."""
    names = {n for lit in literals for n in IDENT_RE.findall(lit) if len(n) > 2 and n not in KEYWORDS}
    if table != "docs_chunks" or not names:
        return model_text(table, rec, limit)
    head = " / ".join(rec.get("section_path") or [])
    lines = [line.strip()[:EXCERPT_LINE_CHARS] for line in (rec.get("content") or "").splitlines()]
    ranked = sorted((-len(names & set(IDENT_RE.findall(line))), i) for i, line in enumerate(lines))
    keep: list[int] = []
    for score, i in ranked:
        if score == 0:
            break
        trial = sorted([*keep, i])
        if len(_excerpt(head, lines, trial)) <= limit:
            keep = trial
    return _excerpt(head, lines, keep) if keep else model_text(table, rec, limit)


def _excerpt(head: str, lines: list[str], keep: list[int]) -> str:
    out = [head] if head else []
    for n, i in enumerate(keep):
        if n and i > keep[n - 1] + 1:
            out.append("...")
        out.append(lines[i])
    return "\n".join(out)
