"""Cut a parsed page into `docs_chunks` records of about `target_chars` characters.

Rules, in order:
- a heading always starts a new chunk, except that sections shorter than
  `min_chars` are joined to the next sibling so that headings with one line
  of text do not become chunks of their own;
- class-reference member entries (separated by rules) are packed together
  up to the target, and a chunk holding one entry names that member in `symbol`;
- a fenced code block is never cut, unless it alone is over the target:
  then it is cut at line boundaries;
- C# blocks stay in `code_blocks` (tagged `csharp`) but not in `content`,
  so that a GDScript query is scored against GDScript and prose only.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from ..gdscript.tokenize import tokenize
from .markdown import Block, Page, strip_links, strip_links_with_text
from .symbols import ApiVocabulary, extract_api_symbols, is_class_page

DOC_VERSION = "4.7"
DOCS_BASE_URL = "https://docs.godotengine.org/en/latest/"
SEPARATE_LANGUAGES = {"csharp", "cs", "c#"}
INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")
BOLD_NAME_RE = re.compile(r"\*\*(@?[A-Za-z_][A-Za-z0-9_]*)\*\*")
CONSTANT_ENTRY_RE = re.compile(r"^(?:[\w.@]+ )?\*\*(@?[A-Za-z_][A-Za-z0-9_]*)\*\* = ")  # a constant's (or property's) entry line


@dataclass
class Unit:
    text: str  # as it goes into content
    blocks: list[Block]
    size: int


@dataclass
class Segment:
    section_path: list[str]
    member: str | None
    units: list[Unit] = field(default_factory=list)
    csharp: list[Block] = field(default_factory=list)
    first_line: int = 0

    @property
    def size(self) -> int:
        return sum(u.size for u in self.units)


Piece = tuple[Segment, list[Unit]]  # a segment's units that go into one chunk


def doc_type_for(path: str) -> str:
    if path.startswith("classes/"):
        return "class_reference"
    if path.startswith("tutorials/migrating/"):
        return "migration_guide"
    if path.startswith(("getting_started/", "tutorials/")):
        return "tutorial"
    return "manual"


def version_tags_for(path: str) -> list[str]:
    tags = ["4.x", DOC_VERSION]
    m = re.search(r"upgrading_to_godot_(\d+)(?:\.(\d+))?$", path)
    if m:
        tags = ["4.x", f"{m.group(1)}.{m.group(2) or 0}"]
        tags.insert(0, "3.x" if not m.group(2) else f"{m.group(1)}.{int(m.group(2)) - 1}")
    return tags


def _code_text(block: Block) -> str:
    return f"```{block.language}\n{block.text}\n```"


def _split_code(block: Block, limit: int) -> list[Block]:
    """Cut an over-long code block at line boundaries."""
    parts: list[Block] = []
    cur: list[str] = []
    size = 0
    for i, line in enumerate(block.text.split("\n")):
        if cur and size + len(line) + 1 > limit:
            parts.append(Block("code", "\n".join(cur), language=block.language, line=block.line + i - len(cur)))
            cur, size = [], 0
        cur.append(line)
        size += len(line) + 1
    if cur:
        parts.append(Block("code", "\n".join(cur), language=block.language, line=block.line))
    return parts


TABLE_SEP_RE = re.compile(r"^\|?[\s|:+=-]*\|[\s|:+=-]*$")


def compact_text(text: str) -> str:
    """Squeeze the padding out of Markdown tables; drop their separator rows."""
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):
            if TABLE_SEP_RE.match(line.strip()):
                continue
            line = re.sub(r"\s{2,}", " ", line.strip())
        lines.append(line)
    return "\n".join(lines)


def _split_lines(text: str, limit: int) -> list[str]:
    """Cut over-long prose at line ends, then at sentence ends, then at spaces."""
    pieces: list[str] = []
    for line in text.split("\n"):
        while len(line) > limit:
            cut = max(line.rfind(". ", 0, limit), line.rfind(" ", 0, limit))
            cut = cut + 1 if cut > limit // 2 else limit
            pieces.append(line[:cut])
            line = line[cut:].lstrip()
        pieces.append(line)
    out, cur = [], ""
    for piece in pieces:
        if cur and len(cur) + len(piece) + 1 > limit:
            out.append(cur)
            cur = ""
        cur = f"{cur}\n{piece}" if cur else piece
    if cur:
        out.append(cur)
    return out


def segments_of(page: Page, target_chars: int) -> list[Segment]:
    trail: list[tuple[int, str]] = []
    segments: list[Segment] = []
    class_page = is_class_page(page.path)

    def new_segment(member: str | None, line: int) -> Segment:
        seg = Segment([t for _, t in trail], member, first_line=line)
        segments.append(seg)
        return seg

    seg = new_segment(None, 1)
    for block in page.blocks:
        if block.kind == "heading":
            while trail and trail[-1][0] >= block.level:
                trail.pop()
            trail.append((block.level, block.text))
            seg = new_segment(None, block.line)
            continue
        if block.kind == "rule":
            if class_page:
                seg = new_segment(None, block.line)
            continue
        if block.kind == "code" and block.language in SEPARATE_LANGUAGES:
            seg.csharp.append(block)
            continue
        if block.kind == "code":
            _add_code(seg, block, target_chars)
            continue
        text = compact_text(strip_links(block.text)[0])
        if class_page and not seg.units and seg.member is None:
            seg.member = _entry_name(text, seg, page.title)
        for part in _split_lines(text, target_chars) if len(text) > target_chars else [text]:
            seg.units.append(Unit(part, [block], len(part)))
    return [s for s in segments if s.units or s.csharp]


def _add_code(seg: Segment, block: Block, target_chars: int) -> None:
    pieces = [block] if len(block.text) <= target_chars else _split_code(block, target_chars)
    for piece in pieces:
        text = _code_text(piece)
        seg.units.append(Unit(text, [piece], len(text)))


def _entry_name(text: str, seg: Segment, page_title: str) -> str | None:
    """The member a class-reference entry's first paragraph names in bold, outside the page's own section."""
    name = BOLD_NAME_RE.search(text.split("\n", 1)[0])
    if name and seg.section_path and seg.section_path[-1] != page_title:
        return name.group(1)
    return None


def _pack(segments: list[Segment], target: int, min_chars: int) -> list[list[Piece]]:
    """Group (segment, units) pieces into chunks."""
    chunks: list[list[Piece]] = []
    for seg in segments:
        prev = chunks[-1] if chunks else None
        prev_size = sum(sum(u.size for u in units) for _, units in prev) if prev else 0
        prev_seg = prev[-1][0] if prev else None
        same_member_list = (
            prev_seg is not None and seg.member is not None and prev_seg.member is not None
            and prev_seg.section_path == seg.section_path
        )
        small_prev = (prev_seg is not None and prev_size < min_chars
                      and seg.section_path[: len(prev_seg.section_path)] == prev_seg.section_path)
        if prev is not None and (same_member_list or small_prev) and prev_size + seg.size <= target:
            prev.append((seg, list(seg.units)))
            continue
        # Cut the segment into pieces of at most `target`, balanced so the last is not a scrap.
        total = seg.size
        n = max(1, -(-total // target))
        goal = total / n
        cur: list[Unit] = []
        cur_size = 0
        for unit in seg.units:
            if (cur and cur_size + unit.size > target) or (cur and cur_size >= goal and cur_size + unit.size > goal * 1.1):
                chunks.append([(seg, cur)])
                cur, cur_size = [], 0
            cur.append(unit)
            cur_size += unit.size
        chunks.append([(seg, cur)])
    return chunks


def entry_members(pieces: list[Piece], known: set[str]) -> list[str]:
    """The members whose entries a class-reference chunk holds, in order: each segment's member (the entry a rule
    opens), and each constant entry (`**ZERO** = ...`, `TweenProcessMode **TWEEN_PROCESS_IDLE** = 1`) among its
    paragraphs. Constants have no rule between them, so one segment holds a whole Constants section, and its
    member, the section's first constant, is not in the pieces cut after it."""
    out: list[str] = []
    for seg, units in pieces:
        constants = [m.group(1) for u in units if (m := CONSTANT_ENTRY_RE.match(u.text)) and m.group(1) in known]
        own = [seg.member] if seg.member and not (seg.section_path[-1:] == ["Constants"] and constants) else []
        out += own + constants
    return list(dict.fromkeys(out))


def _csharp_of(pieces: list[Piece]) -> list[Block]:
    """C# blocks travel with the first piece of their segment."""
    csharp: list[Block] = []
    for seg, us in pieces:
        if (seg.units and us and us[0] is seg.units[0]) or not seg.units:
            csharp.extend(seg.csharp)
    return csharp


def _api_symbols(units: list[Unit], code: list[Block], vocab: ApiVocabulary) -> list[str]:
    """The API names the chunk's GDScript code and inline code spans use."""
    inline = [m.group(1) for u in units for b in u.blocks if b.kind == "text" for m in INLINE_CODE_RE.finditer(b.text)]
    gd_code = [b.text for b in code if b.language in ("gdscript", "gd", "text", "")]
    return extract_api_symbols(gd_code + inline, vocab)


def _class_page_symbols(page: Page, pieces: list[Piece], members: list[str],
                        api_symbols: list[str]) -> tuple[str, list[str]]:
    """A class-reference chunk's `symbol` and its `api_symbols` with the members whose entries it holds."""
    symbol = page.title
    # One entry (a method, a property, an enum with its constants), where the chunk opens it; a piece of the
    # Constants section that holds several of them is about the class.
    entry = [seg.member for seg, _ in pieces if seg.member]
    if len(entry) == 1 and len(pieces) == 1 and entry[0] in members and (
            pieces[0][0].section_path[-1:] != ["Constants"] or len(members) == 1):
        symbol = f"{page.title}.{entry[0]}"
    # A class-reference chunk is about the members whose entries it holds.
    return symbol, list(dict.fromkeys(api_symbols + [f"{page.title}.{m}" for m in members]))


@dataclass
class ChunkSource:
    """The page file a chunk comes from."""
    file: str
    sha256: str


def _metadata(page: Page, seg0: Segment, lines: list[int], content: str, members: list[str],
              links: list[list[str]]) -> dict[str, Any]:
    return {
        "page_path": page.path,
        "page_title": page.title,
        "members": members,
        "line_start": min(lines) if lines else seg0.first_line,
        "line_end": max(lines) if lines else seg0.first_line,
        "content_sha256": hashlib.sha256(content.encode()).hexdigest(),
        "links": links,  # [text, target] pairs, read by record_api.add_record_api, which turns them into `mentions`
    }


def _record(page: Page, pieces: list[Piece], vocab: ApiVocabulary, source: ChunkSource) -> dict[str, Any] | None:
    """One chunk's record, its `chunk_id` still empty; None for a chunk with neither units nor C#."""
    seg0 = pieces[0][0]
    units = [u for _, us in pieces for u in us]
    csharp = _csharp_of(pieces)
    if not units and not csharp:
        return None
    content = "\n\n".join(u.text for u in units)
    code = [b for u in units for b in u.blocks if b.kind == "code"]
    code_blocks: list[dict[str, Any]] = [{"language": b.language, "code": b.text, "line": b.line} for b in code]
    code_blocks += [{"language": "csharp", "code": b.text, "line": b.line} for b in csharp]
    api_symbols = _api_symbols(units, code, vocab)
    links = [list(t) for u in units for b in u.blocks if b.kind == "text" for t in strip_links_with_text(b.text)[1]]
    members: list[str] = []
    symbol = None
    if is_class_page(page.path):
        members = entry_members(pieces, vocab.members.get(page.title, set()) - {page.title})
        symbol, api_symbols = _class_page_symbols(page, pieces, members, api_symbols)
    lines = [b.line for u in units for b in u.blocks] + [b.line for b in csharp]
    return {
        "chunk_id": "",  # set by chunk_page, once the page's chunk count is known
        "doc_version": DOC_VERSION,
        "source_url": DOCS_BASE_URL + page.path + ".html",
        "source_file": source.file,
        "source_sha256": source.sha256,
        "doc_type": doc_type_for(page.path),
        "symbol": symbol,
        "section_path": seg0.section_path or [page.title],
        "heading": (seg0.section_path or [page.title])[-1],
        "content": content,
        "code_blocks": code_blocks,
        "language_tags": sorted({b["language"] for b in code_blocks}),
        "godot_version_tags": version_tags_for(page.path),
        "api_symbols": api_symbols,
        "token_count": len(tokenize(content)),
        "metadata": _metadata(page, seg0, lines, content, members, links),
    }


def chunk_page(
    page: Page,
    vocab: ApiVocabulary,
    *,
    source_file: str,
    source_sha256: str,
    target_chars: int = 1800,
    min_chars: int = 300,
) -> list[dict[str, Any]]:
    source = ChunkSource(source_file, source_sha256)
    packed = _pack(segments_of(page, target_chars), target_chars, min_chars)
    records = [rec for pieces in packed if (rec := _record(page, pieces, vocab, source)) is not None]
    for i, rec in enumerate(records):
        rec["chunk_id"] = f"{page.path}#{i:03d}"
        rec["metadata"]["chunk_index"] = i
        rec["metadata"]["chunk_count"] = len(records)
    return records
