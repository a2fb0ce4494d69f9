"""Mapping precision for the changes the real-code gold cannot judge: the migration page's prose
changes (`migration_guide:`) and the GDScript syntax changes (`gdscript_syntax:`).

The realcode_godot3 gold holds only the converter's rename pairs (../shared/eval/README.md). The same
rule is applied here to the other mappings, over the demos' script trees that sit beside the eval
sets (`../realcode/godot-demo-projects/{godot3,godot4}`): a mapping accepted on a Godot 3 chunk is
one the port applied when the Godot 4 script has the new name and has the old one fewer times
than the Godot 3 script (comments excluded). The gold was built against the demos' 4.0 branch; these
trees hold today's Godot 4 scripts, so the figure is the same rule on a later port, not the gold.

`removed` extends the converter gold the same way for the names Godot 4 no longer has, where the port
rewrote the line instead of renaming the name: a second figure next to the gold's, never in its place.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from ..gdscript.facts import parse_chunk
from ..gdscript.lexicon import IDENT, bounded

TREES = Path("realcode") / "godot-demo-projects"
RENAMES = Path("godot_docs") / "renames_3_to_4.jsonl"
# The converter tables that rename names in GDScript code (not C#, project settings, shaders, theme item strings).
GDSCRIPT_TABLES = ("class_renames", "builtin_types_renames", "gdscript_function_renames", "gdscript_properties_renames",
                   "gdscript_signals_renames", "enum_renames", "color_renames")


class PortTrees:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._code: dict[tuple[str, str], str | None] = {}  # a few trees per eval run, each read once for the run

    @classmethod
    def beside(cls, query_file: Path) -> PortTrees | None:
        """The script trees next to the eval sets' folder, when they are there."""
        root = Path(query_file).resolve().parent.parent / TREES
        return cls(root) if (root / "godot3").is_dir() and (root / "godot4").is_dir() else None

    def script(self, variant: str, rel: str) -> Path | None:
        """The script at `rel`; in the Godot 4 tree, also under the snake_case name the port gave some
        scripts (`grid/Grid.gd` -> `grid/grid.gd`)."""
        path = self.root / variant / rel
        if path.is_file():
            return path
        if not path.parent.is_dir():
            return None
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", path.stem).lower()
        wanted = {path.name.lower(), snake + path.suffix}
        return next((p for p in sorted(path.parent.iterdir()) if p.is_file() and p.name in wanted), None)

    def code(self, variant: str, rel: str) -> str | None:
        if (variant, rel) not in self._code:
            path = self.script(variant, rel)
            self._code[(variant, rel)] = (None if path is None else
                                          parse_chunk(path.read_text(encoding="utf-8", errors="replace")).no_comments)
        return self._code[(variant, rel)]

    @cached_property
    def renames(self) -> list[tuple[tuple[str, str, str], re.Pattern[str]]]:
        """The converter's GDScript rename pairs, from the docs folder beside the trees ([] when absent),
        each with the pattern of its Godot 3 name (a colour as `Color.<name>`)."""
        path = self.root.parent.parent / RENAMES
        if not path.is_file():
            return []
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [((r["table"], r["from"], r["to"]), bounded("Color." + r["from"] if r["table"] == "color_renames" else r["from"]))
                for r in rows if r.get("table") in GDSCRIPT_TABLES]

    def removed(self, query_id: str, chunk_text: str, exists: Callable[[str], bool]) -> set[tuple[str, str, str]] | None:
        """Converter pairs the gold's rule leaves out only because the port rewrote the line instead of
        renaming it: `from` occurs in the chunk's code (comments excluded; a colour as `Color.<name>`),
        Godot 4 has no such name at all (`exists`, the class reference), and the Godot 4 script has it
        fewer times than the Godot 3 one. The gold also asks that `to` be in the Godot 4 script; for a
        name Godot 4 lacks, a use of it is Godot 3 use whatever the port put in its place
        (`change_scene` -> `change_scene_to_packed`, `PoolStringArray` -> an untyped array).
        None when the trees do not hold the script in both versions."""
        rel = query_id.split(":", 1)[-1].rsplit("#", 1)[0]
        old, new = self.code("godot3", rel), self.code("godot4", rel)
        if old is None or new is None:
            return None
        code = parse_chunk(chunk_text).no_comments
        return {pair for pair, pattern in self.renames
                if pattern.search(code) and not exists(pair[1]) and len(pattern.findall(new)) < len(pattern.findall(old))}

    def applied(self, query_id: str, payload: dict[str, Any]) -> bool | None:
        """Whether the demos' port applied this mapping to the chunk's script; None when the trees do
        not hold that script in both versions."""
        rel = query_id.split(":", 1)[-1].rsplit("#", 1)[0]
        old, new = self.code("godot3", rel), self.code("godot4", rel)
        if old is None or new is None:
            return None
        patterns = [t[3:] for t in payload.get("match_terms") or [] if t.startswith("re:")]
        count = _pattern_counter(patterns) if patterns else _name_counter(payload)  # patterns: a syntax change
        target = new_name(str(payload.get("target_api") or ""))
        # An annotation counts with its family: `@export_range` is the port of an `export(int, 0, 9) var`.
        found = re.search(re.escape(target) + r"\w*", new) if target.startswith("@") else bounded(target).search(new)
        return bool(target) and bool(found) and count(new) < count(old)


def new_name(target: str) -> str:
    """The name a change's target introduces: `@export`, `bind`, `get_time_dict_from_system` in
    `Time.get_time_dict_from_system()["second"]`, `set` in `set/get property syntax`."""
    words = target.split("(", 1)[0].split()
    head = words[0] if words else ""
    if head.startswith("@"):
        return head
    m = re.search(IDENT, head.rsplit(".", 1)[-1])
    return m.group(0) if m else ""


def _pattern_counter(patterns: list[str]) -> Callable[[str], int]:
    """Counts the occurrences of a syntax change's Godot 3 patterns."""
    def count(text: str) -> int:
        return sum(len(re.findall(p, text)) for p in patterns)
    return count


def _name_counter(payload: dict[str, Any]) -> Callable[[str], int]:
    """Counts the occurrences of a mapping's Godot 3 name."""
    def count(text: str) -> int:
        return len(bounded(payload["source_api"]).findall(text))
    return count
