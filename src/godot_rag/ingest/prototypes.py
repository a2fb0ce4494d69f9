"""`label_prototypes`: findings a Godot code reviewer would flag, each citing its evidence.

Migration prototypes are built from the `api_mapping` records (one per kind of
change), so their `validator_rules` are derived, not typed in. A few review
prototypes describe Godot 4 practice; their evidence chunks are located in the
docs by the terms they are about.
"""
from __future__ import annotations

import re
from typing import Any

from .mappings import SYNTAX_CHANGES, EvidenceIndex, ident_pattern

GROUPS = [
    # change_type, label, expected finding, recommended action, severity
    ("class_rename", "godot3_class_name", "A Godot 3 class name is used in Godot 4 code.",
     "Rename the class to its Godot 4 name (see target_api of the cited api_mapping).", "error"),
    ("builtin_type_rename", "godot3_builtin_type", "A Godot 3 built-in type name is used.",
     "Use the Godot 4 built-in type name.", "error"),
    ("method_rename", "godot3_method_name", "A method renamed in Godot 4 is called by its Godot 3 name.",
     "Call the Godot 4 method name; check the class reference for changed arguments.", "error"),
    ("property_rename", "godot3_property_name", "A property renamed in Godot 4 is used by its Godot 3 name.",
     "Use the Godot 4 property name.", "error"),
    ("signal_rename", "godot3_signal_name", "A signal renamed in Godot 4 is connected or emitted by its Godot 3 name.",
     "Use the Godot 4 signal name.", "error"),
    ("enum_rename", "godot3_enum_constant", "A Godot 3 enum constant is used.",
     "Use the Godot 4 constant name.", "error"),
    ("project_setting_rename", "godot3_project_setting", "A Godot 3 project setting path is read or written.",
     "Use the Godot 4 setting path.", "warning"),
    ("input_map_rename", "godot3_input_action", "A Godot 3 built-in input action name is used.",
     "Use the Godot 4 action name.", "warning"),
    ("theme_override_rename", "godot3_theme_override", "A Godot 3 theme override name is used.",
     "Use the Godot 4 theme_override_* name.", "warning"),
]

SYNTAX_LABELS = {
    "yield->await": ("yield_instead_of_await", "`yield` is used for a coroutine; Godot 4 uses `await`.",
                     "Replace `yield(obj, \"signal\")` with `await obj.signal`.", "error"),
    "export->@export": ("export_keyword", "The Godot 3 `export` keyword is used.", "Use the `@export` annotation.", "error"),
    "onready->@onready": ("onready_keyword", "The Godot 3 `onready` keyword is used.", "Use the `@onready` annotation.", "error"),
    "tool->@tool": ("tool_keyword", "The Godot 3 `tool` keyword is used.", "Use the `@tool` annotation.", "error"),
    "setget->set/get": ("setget_syntax", "The Godot 3 `setget` syntax is used.",
                        "Rewrite as a property with `set(value):` / `get:` blocks.", "error"),
    "move_and_slide(args)->move_and_slide()": (
        "move_and_slide_arguments", "`move_and_slide()` is called with Godot 3 arguments.",
        "Set `velocity` (and `up_direction`) on the CharacterBody, then call `move_and_slide()` without arguments.", "error"),
    "connect(string)->signal.connect": (
        "string_signal_connection", "A signal is connected with the string-based Godot 3 form.",
        "Use `signal_name.connect(callable)`.", "warning"),
}

REVIEW: list[dict[str, Any]] = [
    {
        "prototype_id": "review:physics_body_moved_in_process",
        "label": "physics_movement_in_process",
        "input_pattern": r"func\s+_process\s*\([^)]*\)\s*(?:->\s*\w+\s*)?:(?:\n[ \t][^\n]*)*?move_and_(?:slide|collide)\s*\(",
        "expected_finding": "A physics body is moved in `_process()` instead of `_physics_process()`.",
        "recommended_action": "Move the physics movement into `_physics_process(delta)`.",
        "severity": "warning",
        "locate": r"_physics_process",
        "must_not_match": [r"func\s+_physics_process"],
    },
    {
        "prototype_id": "review:hard_coded_key_check",
        "label": "hard_coded_key_instead_of_action",
        "input_pattern": r"Input\.is_key_pressed\s*\(\s*KEY_",
        "expected_finding": "Input reads a hard-coded key instead of an input action.",
        "recommended_action": "Define an action in the Input Map and use `Input.is_action_pressed()`.",
        "severity": "info",
        "locate": r"Input Map",
        "must_not_match": [],
    },
    {
        "prototype_id": "review:get_node_every_frame",
        "label": "get_node_in_process_loop",
        "input_pattern": r"func\s+_(?:physics_)?process\s*\([^)]*\)\s*(?:->\s*\w+\s*)?:(?:\n[ \t][^\n]*)*?get_node\s*\(",
        "expected_finding": "`get_node()` is looked up every frame inside a process callback.",
        "recommended_action": "Cache the node in an `@onready var`.",
        "severity": "info",
        "locate": r"@onready var",
        "must_not_match": [],
    },
]


def _alternation(names: list[str]) -> str:
    # Longest first, so a name never loses to its own prefix; then by name, so the same input gives the same record.
    names = sorted(set(names), key=lambda n: (-len(n), n))
    return "(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(n) for n in names) + ")(?![A-Za-z0-9_])"


def _group_prototype(group_spec: tuple[str, str, str, str, str], group: list[dict[str, Any]]) -> dict[str, Any]:
    """The prototype for one kind of rename, matching every source name of its mappings."""
    change, label, finding, action, severity = group_spec
    sources = [m["source_api"] for m in group]
    targets = [m["target_api"] for m in group if m["source_api"] in m["target_api"]]
    cited = list(dict.fromkeys(c for m in group for c in m["evidence_chunk_ids"] if c.startswith("tutorials/migrating/")))[:5]
    return {
        "prototype_id": f"migration:{label}",
        "label": label,
        "task_type": "migration",
        "input_pattern": _alternation(sources),
        "expected_finding": finding,
        "recommended_action": action,
        "evidence_mapping_ids": [m["mapping_id"] for m in group],
        "evidence_chunk_ids": cited,
        "severity": severity,
        "validator_rules": {
            "must_match": [_alternation(sources)],
            "must_not_match_at_match": [_alternation(targets)] if targets else [],
            "requires_accepted_mapping_type": change,
        },
    }


def _syntax_prototype(syntax: dict[str, Any], mappings: list[dict[str, Any]]) -> dict[str, Any]:
    label, finding, action, severity = SYNTAX_LABELS[syntax["id"]]
    mapping_id = f"gdscript_syntax:{syntax['id']}"
    mapping = next((m for m in mappings if m["mapping_id"] == mapping_id), None)
    return {
        "prototype_id": f"migration:{label}",
        "label": label,
        "task_type": "migration",
        "input_pattern": syntax["match"][0],
        "expected_finding": finding,
        "recommended_action": action,
        "evidence_mapping_ids": [mapping_id],
        "evidence_chunk_ids": mapping["evidence_chunk_ids"] if mapping else [],
        "severity": severity,
        "validator_rules": {"must_match": syntax["match"], "must_not_match": syntax["negative"]},
    }


def _review_prototype(review: dict[str, Any], evidence: EvidenceIndex) -> dict[str, Any]:
    locate = re.escape(review["locate"]) if "\\" not in review["locate"] else review["locate"]
    return {
        "prototype_id": review["prototype_id"],
        "label": review["label"],
        "task_type": "code_review",
        "input_pattern": review["input_pattern"],
        "expected_finding": review["expected_finding"],
        "recommended_action": review["recommended_action"],
        "evidence_mapping_ids": [],
        "evidence_chunk_ids": evidence.any_chunks(locate, limit=3, prefer=("tutorials/", "getting_started/")),
        "severity": review["severity"],
        "validator_rules": {"must_match": [review["input_pattern"]], "must_not_match": review["must_not_match"]},
    }


def build_prototypes(mappings: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    evidence = EvidenceIndex(chunks)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for m in mappings:
        by_type.setdefault(m["change_type"], []).append(m)
    out = [_group_prototype(spec, by_type[spec[0]]) for spec in GROUPS if by_type.get(spec[0])]
    out += [_syntax_prototype(syntax, mappings) for syntax in SYNTAX_CHANGES]
    out += [_review_prototype(review, evidence) for review in REVIEW]
    return out


__all__ = ["build_prototypes", "ident_pattern"]
