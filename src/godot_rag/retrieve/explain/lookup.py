"""`Class` or `Class.member` -> its Godot 4 class-reference entry. A Godot 3 name that the converter
renamed (`KinematicBody2D`, `File.get_len`) is followed through its `api_mapping` records to the
Godot 4 name, and the answer says so."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ...gdscript.classref import ClassReference
from ..evidence.resources import EvidenceResources
from ..migration.version import CLASS_TYPES

SYMBOL_RE = re.compile(r"^@?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
MEMBER_RENAME_TYPES = {"method_rename", "property_rename", "signal_rename", "enum_rename", "color_rename"}


class SymbolError(ValueError):
    """The symbol is malformed or Godot 4 does not document it (one line for the user)."""


class LookupResult(BaseModel):
    symbol: str  # as asked
    godot4: str  # the Godot 4 name: `CharacterBody2D` or `FileAccess.get_length`
    godot3_name: str | None = None  # its Godot 3 name when it was renamed (the asked one, or the class it replaced)
    renamed_by: list[str] = []  # the api_mapping ids of those renames
    class_name: str
    member: str | None = None
    owner: str | None = None  # the class whose page documents the member (the class or an ancestor)
    kind: str  # class, method, property, signal, constant, enum, ...
    type: str | None = None
    inherits: list[str] = []  # the class's ancestors, nearest first
    page: str | None = None
    record_id: str | None = None  # the docs_chunks record of the entry (resource godot-rag://record/docs_chunks/<id>)
    record: dict | None = None


def _renames(mappings: Mapping[str, dict[str, Any]], name: str, types: set[str]) -> list[dict[str, Any]]:
    return [m for m in mappings.values() if m["source_api"] == name and m["change_type"] in types]


def _godot4_class(ref: ClassReference, mappings: Mapping[str, dict[str, Any]], cls: str,
                  member: str) -> tuple[str, str, list[dict[str, Any]]]:
    """(class, member, the renames that led there) for an asked class: itself, the Godot 4 class a Godot 3 one was
    renamed to, or the global scope of a bare global function or constant (`load`, `PI`)."""
    renamed: list[dict[str, Any]] = []
    if not ref.has_class(cls) and not (cls.startswith("@") and cls in ref.classes):
        renamed = _renames(mappings, cls, CLASS_TYPES)
        target = renamed[0]["target_api"] if renamed else None
        if target is not None and ref.has_class(target):
            cls = target
        elif not member and (glob := ref.global_member(cls)):  # a global function or constant: `load`, `PI`
            cls, member = glob[0], cls
        else:
            near = ref.where(cls)
            raise SymbolError(f"{cls}: no such class in the Godot 4 class reference, nor a Godot 3 class that was renamed"
                              + (f" (Godot 4 documents {', '.join(near)})" if near else ""))
    return cls, member, renamed


def _godot4_member(ref: ClassReference, mappings: Mapping[str, dict[str, Any]], cls: str,
                   member: str) -> tuple[str, tuple[str, dict[str, Any]], list[dict[str, Any]]]:
    """(member, (owner, its entry), the rename that led there) for an asked member of a Godot 4 class: itself, or
    the Godot 4 name a Godot 3 one was renamed to on that class."""
    found = ref.member(cls, member)
    if found is not None:
        return member, found, []
    member_renames = [(m, f) for m in _renames(mappings, member, MEMBER_RENAME_TYPES)
                      if (f := ref.member(cls, m["target_api"]))]
    if not member_renames:
        raise SymbolError(f"{cls}.{member}: {cls} has no member {member} in Godot 4"
                          + (f" (Godot 4 documents {', '.join(ref.where(member))})" if ref.where(member) else ""))
    first, found = member_renames[0]
    return first["target_api"], found, [first]


def lookup(retriever: EvidenceResources, symbol: str) -> LookupResult:
    symbol = (symbol or "").strip()
    if not SYMBOL_RE.match(symbol):
        raise SymbolError(f"{symbol[:80]!r}: give a class or Class.member, e.g. CharacterBody2D or Input.is_action_pressed")
    ref = retriever.class_reference()
    if not ref:
        raise SymbolError("the database has no class reference: run `godot-rag ingest` and `load` over the docs pages")
    mappings = retriever.records("api_mapping")
    cls, member, renamed = _godot4_class(ref, mappings, *symbol.partition(".")[::2])
    info = ref.classes[cls]
    out = {"symbol": symbol, "class_name": cls, "inherits": ref.lineage(cls)[1:], "page": info.get("page")}
    index = retriever.api_index()
    if member:
        member, (owner, minfo), rename = _godot4_member(ref, mappings, cls, member)
        renamed += rename
        rid = index["members"].get((owner, member)) or index["first"].get(owner)
        out.update(member=member, owner=owner, kind=minfo.get("kind") or "member", type=ref.type_of(minfo),
                   godot4=f"{cls}.{member}")
    else:
        rid = index["first"].get(cls)
        out.update(kind="class", godot4=cls)
    if renamed:
        out.update(godot3_name=symbol, renamed_by=[m["mapping_id"] for m in renamed])
    elif not member:  # a Godot 4 class that replaced a Godot 3 one (`CharacterBody2D` was `KinematicBody2D`)
        before = [m for m in mappings.values() if m["target_api"] == cls and m["change_type"] in CLASS_TYPES]
        if before:
            out.update(godot3_name=before[0]["source_api"], renamed_by=[m["mapping_id"] for m in before])
    record = retriever.records("docs_chunks").get(rid) if rid else None
    return LookupResult(**out, record_id=rid if record else None, record=record)
