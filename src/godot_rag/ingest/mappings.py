"""`api_mapping` records: the converter's rename pairs, plus the changes that the
migration pages state in prose (`X's `a()` is now `b()``) and the GDScript syntax
changes that are not renames (yield, export, onready, tool, setget, ...)."""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..gdscript.classref import ClassReference
from ..gdscript.lexicon import IDENT_RE
from ..jsonlines import iter_jsonl

CHANGE_TYPES = {
    "class_renames": "class_rename",
    "enum_renames": "enum_rename",
    "builtin_types_renames": "builtin_type_rename",
    "gdscript_function_renames": "method_rename",
    "gdscript_properties_renames": "property_rename",
    "gdscript_signals_renames": "signal_rename",
    "csharp_function_renames": "csharp_method_rename",
    "csharp_properties_renames": "csharp_property_rename",
    "csharp_signals_renames": "csharp_signal_rename",
    "project_settings_renames": "project_setting_rename",
    "project_godot_renames": "project_godot_rename",
    "input_map_renames": "input_map_rename",
    "shaders_renames": "shader_rename",
    "color_renames": "color_rename",
    "theme_override_renames": "theme_override_rename",
}
GODOT_FROM, GODOT_TO = "3.x", "4.0"
B = "(?<![A-Za-z0-9_])"  # identifier boundary, left
E = "(?![A-Za-z0-9_])"  # identifier boundary, right
MIGRATION_PAGE_PREFIX = "tutorials/migrating/upgrading_to_godot_4"


def ident_pattern(name: str) -> str:
    return B + re.escape(name) + E


class RenameFileError(ValueError):
    pass


def read_renames(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, rec in iter_jsonl(path, lambda n, msg: RenameFileError(f"{path}:{n}: {msg}")):
        if not isinstance(rec, dict):
            raise RenameFileError(f"{path}:{n}: each line must be a JSON object")
        for field in ("table", "from", "to"):
            if not isinstance(rec.get(field), str) or not rec[field]:
                raise RenameFileError(f"{path}:{n}: field '{field}' must be a non-empty string")
        if rec["table"] not in CHANGE_TYPES:
            raise RenameFileError(f"{path}:{n}: field 'table': unknown rename table {rec['table']!r}")
        out.append(rec)
    return out


class EvidenceIndex:
    """Find the docs chunks that document a name or discuss it on the migration pages."""

    def __init__(self, chunks: list[dict[str, Any]]) -> None:
        self.by_symbol: dict[str, list[str]] = defaultdict(list)
        self.by_member: dict[str, list[str]] = defaultdict(list)
        self.migration: list[dict[str, Any]] = []
        for c in chunks:
            sym = c.get("symbol")
            if sym:
                self.by_symbol[sym].append(c["chunk_id"])
                if "." in sym:
                    self.by_member[sym.split(".", 1)[1]].append(c["chunk_id"])
            if c["metadata"]["page_path"].startswith(MIGRATION_PAGE_PREFIX):
                self.migration.append(c)
        self.all_chunks = chunks

    def class_chunk(self, cls: str) -> list[str]:
        ids = self.by_symbol.get(cls, [])
        return ids[:1]

    def member_chunks(self, member: str, limit: int = 3) -> list[str]:
        return self.by_member.get(member, [])[:limit]

    def migration_chunks(self, pattern: str, limit: int = 3) -> list[str]:
        rx = re.compile(pattern)
        return [c["chunk_id"] for c in self.migration if rx.search(c["content"])][:limit]

    def any_chunks(self, pattern: str, limit: int = 3, prefer: tuple[str, ...] = ()) -> list[str]:
        rx = re.compile(pattern)
        hits = [c for c in self.all_chunks if rx.search(c["content"])]
        hits.sort(key=lambda c: not c["metadata"]["page_path"].startswith(prefer) if prefer else 0)
        return [c["chunk_id"] for c in hits[:limit]]


_DECLARING_KEYWORD = {"method_rename": "func", "signal_rename": "signal", "property_rename": "var"}


def _rename_negatives(change: str, src: str, dst: str) -> list[str]:
    negative = []
    if src in dst and src != dst:
        negative.append(ident_pattern(dst))
    # A chunk declaring its own member of that name is not using the Godot 3 API, except for
    # virtual methods (renamed to `_name`): there the declaration is the Godot 3 override.
    if change in _DECLARING_KEYWORD and not dst.startswith("_"):
        negative.append(rf"{_DECLARING_KEYWORD[change]}\s+{re.escape(src)}{E}")
    if change in ("class_rename", "builtin_type_rename"):
        negative.append(rf"class_name\s+{re.escape(src)}{E}")
    return negative


def _rename_evidence(change: str, src: str, dst: str, evidence: EvidenceIndex) -> list[str]:
    """The chunks documenting the new name, then the migration chunks discussing the old one."""
    target_chunks: list[str] = []
    if change in ("class_rename", "builtin_type_rename"):
        target_chunks = evidence.class_chunk(dst)
    elif not change.startswith(("csharp", "project", "input", "shader", "color")):
        target_chunks = evidence.member_chunks(dst)
    discussed = evidence.migration_chunks(ident_pattern(src))
    return list(dict.fromkeys(target_chunks + discussed))


def _rename_notes(table: str, change: str, src: str, ref: ClassReference) -> tuple[str, float]:
    """The record's notes and confidence: a name Godot 4 still has is weaker evidence."""
    still = ref.where(src)
    notes = f"Renamed by the Godot 3->4 project converter ({table})."
    confidence = 1.0
    if still:
        confidence = 0.6
        notes += (f" godot4_still_valid: '{src}' is still Godot 4 API ({', '.join(still)}), so an occurrence is "
                  "evidence only where it does not resolve as that Godot 4 API.")
    if change.startswith("csharp"):
        notes += " Applies to C# code only."
    return notes, confidence


def _rename_record(rename: dict[str, Any], ref: ClassReference, evidence: EvidenceIndex) -> dict[str, Any]:
    table, src, dst = rename["table"], rename["from"], rename["to"]
    change = CHANGE_TYPES[table]
    notes, confidence = _rename_notes(table, change, src, ref)
    return {
        "mapping_id": f"{table}:{src}->{dst}",
        "source_api": src,
        "target_api": dst,
        "change_type": change,
        "godot_from": GODOT_FROM,
        "godot_to": GODOT_TO,
        "confidence": confidence,
        "evidence_chunk_ids": _rename_evidence(change, src, dst, evidence),
        "match_terms": [src],
        "notes": notes,
        "negative_patterns": _rename_negatives(change, src, dst),
    }


def rename_mappings(renames: list[dict[str, Any]], ref: ClassReference,
                    evidence: EvidenceIndex) -> tuple[list[dict[str, Any]], list[str]]:
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen: set[str] = set()
    for r in renames:
        mapping_id = f"{r['table']}:{r['from']}->{r['to']}"
        if mapping_id in seen:
            warnings.append(f"duplicate rename pair {mapping_id}")
            continue
        seen.add(mapping_id)
        records.append(_rename_record(r, ref, evidence))
    return records, warnings


# "AcceptDialog's `set_autowrap()` is now `set_autowrap_mode()`."  and similar sentences.
PROSE_CHANGE_RE = re.compile(
    r"(?:(?P<cls>[A-Z][A-Za-z0-9]+)(?: and (?P<cls2>[A-Z][A-Za-z0-9]+))?'s? )?`(?P<src>[A-Za-z_][A-Za-z0-9_.]*)(?P<paren>\(\))?`"
    r"(?: (?:method|property|signal))? (?:is now|was renamed to|was inverted and renamed to|was replaced by|"
    r"should be converted to|is no longer used and should be converted to) "
    r"`(?P<dst>[^`]+?)(?:\(\))?`"
    # "You may have to replace some `instance()` calls with `instantiate()`.": calls of one method by another.
    r"|[Rr]eplace (?:some |all |the )?`(?P<call_src>[A-Za-z_][A-Za-z0-9_]*)\(\)` calls with "
    r"`(?P<call_dst>[A-Za-z_][A-Za-z0-9_]*)\(\)`"
)
# The migration page lists its changes under bold headings; the heading says what kind of member changed.
# A page links a class to its reference page (`[AABB](classes__class_aabb__5710e3d5.md)'s ...`): the link text stays.
LINK_RE = re.compile(r"\[([^\]]+)\]\([^)]*\)")
# A bullet's subject: `-   BaseButton's signals are now ... The `pressed` property is now ...`. A change in a
# later sentence of the bullet that names no class of its own is a change of that class.
SUBJECT_RE = re.compile(r"^\s*[-*]\s+(?P<cls>[A-Z][A-Za-z0-9]+)(?: and (?P<cls2>[A-Z][A-Za-z0-9]+))?'s?\s")
SECTION_RE = re.compile(r"^\*\*(Methods|Properties|Signals|Enums|Constants)\*\*\s*$")
SECTION_KINDS = {"Methods": "method", "Properties": "property", "Signals": "signal", "Enums": "constant",
                 "Constants": "constant"}
CHANGE_OF_KIND = {"method": "method_change", "property": "property_change", "signal": "signal_change",
                  "constant": "constant_change"}


def _documents(ref: ClassReference, cls: str | None, name: str, kind: str | None, own_only: bool = False) -> bool:
    """Whether Godot 4's class reference documents `name` (of that kind) on `cls` (or an ancestor).
    A property's setter and getter are documented methods."""
    if not cls or not ref.has_class(cls):
        return False
    found = ref.member(cls, name)
    if found is None or (own_only and found[0] != cls):
        return False
    return kind is None or found[1]["kind"] == kind or (kind == "constant" and found[1]["kind"] in ("constant", "enum"))


@dataclass
class ProseChange:
    """One change a migration page's sentence states, its direction checked against the class reference."""
    name: str  # the Godot 3 name
    dst: str  # what replaces it, as the sentence writes it
    cls: str | None
    cls2: str | None
    kind: str | None  # method, property, signal, constant; None where neither list nor wording says
    note: str
    warning: str | None


def _migration_lines(chunks: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str | None, str]]:
    """Each line of the migration pages' chunks, links reduced to their text, with the kind of member its list
    holds (from the list's bold heading)."""
    section: str | None = None
    where: tuple[str, tuple[str, ...]] | None = None
    for c in chunks:
        if not c["metadata"]["page_path"].startswith(MIGRATION_PAGE_PREFIX):
            continue
        # A list can run on into the next chunk of the same section: its bold heading stays in force.
        here = (c["metadata"]["page_path"], tuple(c["section_path"]))
        if here != where:
            section, where = None, here
        for line in c["content"].split("\n"):
            head = SECTION_RE.match(line.strip())
            if head:
                section = SECTION_KINDS[head.group(1)]
                continue
            if line.strip().startswith("#"):
                section = None
            yield c, section, LINK_RE.sub(r"\1", line)


def _prose_change(m: re.Match[str], subject: re.Match[str] | None, section: str | None,
                  rename_ids: set[tuple[str, str]], ref: ClassReference) -> ProseChange | None:
    """The change one sentence match states; None where the converter's table already has it."""
    src, dst, cls = m.group("src") or m.group("call_src"), m.group("dst") or m.group("call_dst"), m.group("cls")
    cls2 = m.group("cls2")
    if not cls and subject and ref.has_class(subject.group("cls")):
        cls, cls2 = subject.group("cls"), subject.group("cls2")
    if (src.split(".")[-1], dst.split(".")[-1].split("(")[0]) in rename_ids:
        return None
    kind = section or ("method" if m.group("paren") or m.group("call_src") else None)
    name = src.split(".")[-1]
    new = dst.split(".")[-1].split("(")[0]
    renamed = IDENT_RE.fullmatch(new) is not None  # false where the change is no rename (`mat * vec`)
    note, warning = "", None
    if renamed and cls and _documents(ref, cls, name, kind, own_only=True) and not _documents(ref, cls, new, kind):
        # Godot 4 documents the "old" name and not the "new" one: the sentence is reversed.
        name, dst = new, name
        note = f" The page states it the other way round; Godot 4's class reference documents {cls}.{dst}."
        warning = f"migration page: {cls}'s `{src}` -> `{m.group('dst')}` reversed by the class reference"
    return ProseChange(name, dst, cls, cls2, kind, note, warning)


def _prose_record(chunk: dict[str, Any], line: str, change: ProseChange, mapping_id: str,
                  ref: ClassReference) -> dict[str, Any]:
    name, note = change.name, change.note
    classes = [x for x in (change.cls, change.cls2) if x]
    still = ref.where(name)
    if still:
        note += (f" godot4_still_valid: '{name}' is still Godot 4 API ({', '.join(still)}), so only an "
                 f"occurrence on {' or '.join(classes) or 'the changed class'} is evidence.")
    return {
        "mapping_id": mapping_id,
        "source_api": name,
        "target_api": change.dst,
        "change_type": CHANGE_OF_KIND.get(change.kind or "", "api_change"),
        "godot_from": GODOT_FROM,
        "godot_to": GODOT_TO,
        "confidence": 0.8 if change.cls else 0.6,
        "evidence_chunk_ids": [chunk["chunk_id"]],
        "match_terms": [name] + [f"{k}.{name}" for k in classes],
        "notes": f"Stated on {chunk['metadata']['page_path']} ({change.kind or 'api'} change): {line.strip()[:300]}{note}",
        "negative_patterns": [rf"func\s+{re.escape(name)}{E}"],
    }


def prose_mappings(chunks: list[dict[str, Any]], rename_ids: set[tuple[str, str]],
                   ref: ClassReference) -> tuple[list[dict[str, Any]], list[str]]:
    """Changes stated in the migration pages' prose, each citing the chunk that states it.

    The kind (method, property, signal, constant) comes from the list the sentence sits in, not
    from its wording; the direction is checked against the Godot 4 class reference (the new name
    must be documented there; a sentence that has them the other way round is turned around and
    the note says so)."""
    records: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for c, section, line in _migration_lines(chunks):
        subject = SUBJECT_RE.match(line)
        for m in PROSE_CHANGE_RE.finditer(line):
            change = _prose_change(m, subject, section, rename_ids, ref)
            if change is None:
                continue  # the converter's table already has it
            if change.warning:
                warnings.append(change.warning)
            mapping_id = f"migration_guide:{change.cls + '.' if change.cls else ''}{change.name}->{change.dst}"
            if mapping_id not in records:
                records[mapping_id] = _prose_record(c, line, change, mapping_id, ref)
    return list(records.values()), warnings


# GDScript syntax changes that no rename table covers. Each is located in the docs
# by its own terms; the record cites the chunk that states it.
SYNTAX_CHANGES: list[dict[str, Any]] = [
    {
        "id": "yield->await", "source_api": "yield", "target_api": "await",
        "match": [r"(?<![A-Za-z0-9_@])yield\s*\("], "negative": [r"await\b"],
        "locate": r"`yield`", "notes": "Coroutines: `yield(obj, \"signal\")` became `await obj.signal`.",
    },
    {
        "id": "export->@export", "source_api": "export", "target_api": "@export",
        "match": [r"(?m)^\s*export(?:\s*\([^)]*\))?\s+var\b"], "negative": [r"@export"],
        "locate": r"@export", "notes": "The `export` keyword became the `@export` annotation family.",
    },
    {
        "id": "onready->@onready", "source_api": "onready", "target_api": "@onready",
        "match": [r"(?m)^\s*onready\s+var\b"], "negative": [r"@onready"],
        "locate": r"@onready", "notes": "The `onready` keyword became the `@onready` annotation.",
    },
    {
        "id": "tool->@tool", "source_api": "tool", "target_api": "@tool",
        "match": [r"(?m)^\s*tool\s*$"], "negative": [r"@tool"],
        "locate": r"`tool` keyword", "notes": "The `tool` keyword became the `@tool` annotation.",
    },
    {
        "id": "setget->set/get", "source_api": "setget", "target_api": "set/get property syntax",
        "match": [r"\bsetget\b"], "negative": [],
        "locate": r"setter and getter syntax", "notes": "`var x setget setter, getter` became `var x: set = ..., get = ...`.",
    },
    {
        "id": "move_and_slide(args)->move_and_slide()", "source_api": "move_and_slide",
        "target_api": "velocity property + move_and_slide()",
        "match": [r"move_and_slide\s*\(\s*[^)\s]"], "negative": [r"move_and_slide\s*\(\s*\)"],
        "locate": r"move_and_slide",
        "notes": "CharacterBody's `move_and_slide()` takes no arguments in Godot 4; set `velocity` first.",
    },
    {
        "id": "connect(string)->signal.connect", "source_api": "connect",
        "target_api": "signal.connect(callable)",
        "match": [r"(?<![A-Za-z0-9_.])connect\s*\(\s*\"[^\"]+\"\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*,\s*\""],
        "negative": [r"\.connect\s*\(\s*[A-Za-z_]"],
        "locate": r"signal connection syntax",
        "notes": "String-based `connect(\"signal\", target, \"method\")` became `signal.connect(callable)`.",
    },
]


def syntax_mappings(evidence: EvidenceIndex) -> tuple[list[dict[str, Any]], list[str]]:
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    for change in SYNTAX_CHANGES:
        cited = evidence.migration_chunks(change["locate"], limit=2)
        where = "the migration pages"
        if not cited:
            cited = evidence.any_chunks(change["locate"], limit=2, prefer=("tutorials/scripting/gdscript/",))
            where = "the GDScript reference pages"
        if not cited:
            warnings.append(f"syntax change {change['id']}: no chunk states it; record kept without evidence")
        records.append({
            "mapping_id": f"gdscript_syntax:{change['id']}",
            "source_api": change["source_api"],
            "target_api": change["target_api"],
            "change_type": "syntax_change",
            "godot_from": GODOT_FROM,
            "godot_to": GODOT_TO,
            "confidence": 0.9,
            "evidence_chunk_ids": cited,
            "match_terms": ["re:" + p for p in change["match"]],
            "notes": f"{change['notes']} Stated in {where}.",
            "negative_patterns": change["negative"],
        })
    return records, warnings


def build_mappings(renames: list[dict[str, Any]], chunks: list[dict[str, Any]],
                   ref: ClassReference) -> tuple[list[dict[str, Any]], list[str]]:
    evidence = EvidenceIndex(chunks)
    renamed, warnings = rename_mappings(renames, ref, evidence)
    pairs = {(r["from"], r["to"]) for r in renames}
    prose, w1 = prose_mappings(chunks, pairs, ref)
    syntax, w2 = syntax_mappings(evidence)
    return renamed + prose + syntax, warnings + w1 + w2
