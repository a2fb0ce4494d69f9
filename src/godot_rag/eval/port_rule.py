"""Mapping precision for the changes the real-code gold cannot judge: the migration page's prose
changes (`migration_guide:`) and the GDScript syntax changes (`gdscript_syntax:`).

The realcode_godot3 gold holds only the converter's rename pairs (../shared/eval/README.md). The same
rule is applied here to the other mappings, over the demos' script trees that sit beside the eval
sets (`../realcode/godot-demo-projects/{godot3,godot4}`): a mapping accepted on a Godot 3 chunk is
one the port applied when the Godot 4 script has the new name and has the old one fewer times
than the Godot 3 script (comments excluded). The gold was built against the demos' 4.0 branch; these
trees hold today's Godot 4 scripts, so the figure is the same rule on a later port, not the gold.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from ..gdscript import IDENT, bounded, parse_chunk

TREES = Path("realcode") / "godot-demo-projects"


class PortTrees:
    def __init__(self, root: Path):
        self.root = root

    @classmethod
    def beside(cls, query_file: Path) -> "PortTrees | None":
        """The script trees next to the eval sets' folder, when they are there."""
        root = Path(query_file).resolve().parent.parent / TREES
        return cls(root) if (root / "godot3").is_dir() and (root / "godot4").is_dir() else None

    @lru_cache(maxsize=256)
    def code(self, variant: str, rel: str) -> str | None:
        path = self.root / variant / rel
        if not path.is_file():
            return None
        return parse_chunk(path.read_text(encoding="utf-8", errors="replace")).no_comments

    def applied(self, query_id: str, payload: dict) -> bool | None:
        """Whether the demos' port applied this mapping to the chunk's script; None when the trees do
        not hold that script in both versions."""
        rel = query_id.split(":", 1)[-1].rsplit("#", 1)[0]
        old, new = self.code("godot3", rel), self.code("godot4", rel)
        if old is None or new is None:
            return None
        patterns = [t[3:] for t in payload.get("match_terms") or [] if t.startswith("re:")]
        if patterns:  # a syntax change: its Godot 3 patterns
            count = lambda text: sum(len(re.findall(p, text)) for p in patterns)  # noqa: E731
        else:
            count = lambda text: len(bounded(payload["source_api"]).findall(text))  # noqa: E731
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
