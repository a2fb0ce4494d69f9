"""Parse one converted Godot docs page into headings, prose paragraphs and fenced code blocks."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w#+.-]*)\s*$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
# Class-reference member entries are separated by a horizontal rule of dashes.
RULE_RE = re.compile(r"^-{20,}\s*$")


@dataclass
class Block:
    kind: str  # "heading" | "text" | "code" | "rule"
    text: str
    level: int = 0
    language: str = ""
    line: int = 0  # 1-based line where the block starts
    unclosed: bool = False


@dataclass
class Page:
    path: str  # docs path, e.g. getting_started/first_2d_game/03.coding_the_player
    file_name: str
    sha8: str
    blocks: list[Block] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        for b in self.blocks:
            if b.kind == "heading":
                return b.text
        return self.path.rsplit("/", 1)[-1]


PAGE_NAME_RE = re.compile(r"^(?P<stem>.+)__(?P<sha8>[0-9a-f]{8})\.md$")


def page_path_from_file(file_name: str) -> tuple[str, str]:
    """`a__b__c__1234abcd.md` -> (`a/b/c`, `1234abcd`)."""
    m = PAGE_NAME_RE.match(file_name)
    if not m:
        raise ValueError(f"{file_name}: page file names must end in __<sha8>.md")
    return m.group("stem").replace("__", "/"), m.group("sha8")


def strip_links(text: str) -> tuple[str, list[str]]:
    """Replace Markdown links by their text; return the link targets separately."""
    text, links = strip_links_with_text(text)
    return text, [target for _, target in links]


def strip_links_with_text(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Replace Markdown links by their text; return each link's (text, target) separately
    (`[ResourceLoader.load_threaded_request](classes__class_resourceloader__d2a76b2f.md)` names a member)."""
    links: list[tuple[str, str]] = []

    def repl(m: re.Match[str]) -> str:
        links.append((m.group(1), m.group(2)))
        return m.group(1)

    return LINK_RE.sub(repl, text), links


@dataclass
class _Paragraph:
    """The prose lines read since the last blank line, heading, rule or fence."""
    lines: list[str] = field(default_factory=list)
    start: int = 0  # 1-based line of its first line

    def add(self, line: str, number: int) -> None:
        if not self.lines:
            self.start = number
        self.lines.append(line)

    def flush_into(self, blocks: list[Block]) -> None:
        if self.lines and any(p.strip() for p in self.lines):
            blocks.append(Block("text", "\n".join(self.lines).strip("\n"), line=self.start))
        self.lines = []


def _read_fence(lines: list[str], i: int, marker: str, language: str) -> tuple[Block, int]:
    """The code block whose opening fence is line `i` (0-based), and the index of the line after its closing fence."""
    start = i + 1
    body: list[str] = []
    i += 1
    closed = False
    while i < len(lines):
        if lines[i].strip().startswith(marker[0] * len(marker)) and lines[i].strip().strip(marker[0]) == "":
            closed = True
            break
        body.append(lines[i])
        i += 1
    return Block("code", "\n".join(body), language=language or "text", line=start, unclosed=not closed), i + 1


def _line_block(line: str, number: int) -> Block | None:
    """The heading or rule that one line is, if it is one."""
    heading = HEADING_RE.match(line)
    if heading:
        return Block("heading", heading.group(2).strip(), level=len(heading.group(1)), line=number)
    if RULE_RE.match(line):
        return Block("rule", "", line=number)
    return None


def parse_page(file_name: str, text: str) -> Page:
    path, sha8 = page_path_from_file(file_name)
    page = Page(path=path, file_name=file_name, sha8=sha8)
    lines = text.split("\n")
    para = _Paragraph()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE_RE.match(line)
        if fence:
            para.flush_into(page.blocks)
            block, i = _read_fence(lines, i, fence.group(2), fence.group(3).lower())
            if block.unclosed:
                page.warnings.append(f"unclosed code fence opened at line {block.line}")
            page.blocks.append(block)
            continue
        block_of_line = _line_block(line, i + 1)
        if block_of_line is not None or not line.strip():
            para.flush_into(page.blocks)
            if block_of_line is not None:
                page.blocks.append(block_of_line)
        else:
            para.add(line, i + 1)
        i += 1
    para.flush_into(page.blocks)
    if not any(b.kind in ("text", "code") for b in page.blocks):
        page.warnings.append("empty page")
    return page
