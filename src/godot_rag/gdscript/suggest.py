"""The closest real members to a name a class lacks: the Godot 4 name the converter's 3 -> 4 tables give it (when
the class or an ancestor has that name), then the class's and its ancestors' members nearest by edit distance."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .classref import ClassReference

SUGGESTIONS = 3  # closest members named at most
# A member is close when at most this share of the name's characters must change (`set_textur` -> `set_texture`: 1
# of 10); at least `MIN_EDITS` is always allowed.
MAX_EDIT_SHARE = 0.34
MIN_EDITS = 1
# Members code reaches by name (`obj.name`); theme items and constructors are not.
# A typo is at most this many edits, and at most this share of the name's characters (`set_textur`: 1 of 10);
# `test_name` is 2 of 9 from `get_name`: a name of its own.
TYPO_EDITS = 2
TYPO_SHARE = 0.15
CODE_KINDS = frozenset({"method", "property", "signal", "constant", "enum"})


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of `a` and `b`, or `limit + 1` once it is sure to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        if min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def lineage_members(ref: ClassReference, cls: str) -> dict[str, str]:
    """member name -> the class that documents it, for `cls` and its ancestors (the nearest class wins)."""
    out: dict[str, str] = {}
    for owner in ref.lineage(cls):
        for name, info in ref.classes[owner]["members"].items():
            if info.get("kind") in CODE_KINDS:
                out.setdefault(name, owner)
    return out


@dataclass(frozen=True)
class Suggestion:
    api: str  # `Owner.member`
    name: str  # the name written
    edits: int  # its edit distance from the name written
    renamed: bool  # the converter's Godot 4 name for it

    @property
    def near_miss(self) -> bool:
        """A typo or a Godot 3 name: what only a real member's name explains, unlike a script's own `take_damage`."""
        return self.renamed or self.edits <= min(TYPO_EDITS, len(self.name) * TYPO_SHARE)


def closest_members(ref: ClassReference, cls: str, name: str,
                    renames: Mapping[str, str] | None = None) -> list[Suggestion]:
    """Up to `SUGGESTIONS` members of `cls` and its ancestors that `name` was probably meant to be: the converter's
    Godot 4 name first, then the nearest by edit distance (ties by name)."""
    members = lineage_members(ref, cls)
    out: list[Suggestion] = []
    renamed = (renames or {}).get(name)
    if renamed and renamed in members:
        out.append(Suggestion(f"{members[renamed]}.{renamed}", name, edit_distance(name, renamed, len(name)), True))
    limit = max(MIN_EDITS, int(len(name) * MAX_EDIT_SHARE))
    near = sorted((d, m) for m in members if m != name and (d := edit_distance(name.lower(), m.lower(), limit)) <= limit)
    found = [Suggestion(f"{members[m]}.{m}", name, d, False) for d, m in near if m != renamed]
    # Only a near miss is offered: a name two edits from a shorter one is another member (`OS.get_date` is not
    # `get_name`; its replacement is in another class), and a wrong replacement misleads more than none.
    out += [s for s in found if s.near_miss]
    return out[:SUGGESTIONS]


# The converter's tables of member names (`renames_3_to_4.jsonl`'s `table`); class and setting renames are not members.
MEMBER_RENAME_TABLES = ("gdscript_function_renames", "gdscript_properties_renames", "gdscript_signals_renames",
                        "enum_renames")


def member_renames(rows: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """Godot 3 member name -> its Godot 4 name, from the converter's rename rows (the first row of a name wins)."""
    out: dict[str, str] = {}
    for row in rows:
        if row.get("table") in MEMBER_RENAME_TABLES and row.get("from") and row.get("to"):
            out.setdefault(row["from"], row["to"])
    return out
