"""The version decisions, per occurrence: is an occurrence of a Godot 3 name in the chunk really Godot 3 use?
Named rules in ordered tables (`VERSION_RULES`, `OCCURRENCE_RULES`, `GODOT3_OVERRULES`): each a name, a test
that gives the reason when it applies, and an outcome; the first that applies decides, and the trace names it.

Decided from the corpus, per occurrence, and traced:
- where it is: code, comment or string. A comment counts only where it writes a name Godot 4 no
  longer has as code (`# call get_tree().get_rpc_sender_id()`, not `# Spawn RigidBody scenes.`) and
  the chunk's code is Godot 3: the converter renames it there too, and it is weak evidence that never
  carries a finding. Strings count only for
  string-based APIs (project settings, input actions, theme overrides) and at the argument where
  a call takes a signal name, a node path or a class name (`connect("hide", self, "_on")` index 0,
  `yield(obj, "hide")` index 1, `add_custom_type("Mover", "KinematicBody", ...)` index 1); a signal
  name Godot 4 has no signal of (`hide`, now only a method) is Godot 3 use;
- what it resolves to in Godot 4 (the resolve stage): a use that resolves as valid Godot 4
  API is not evidence (`hide()` on a CanvasItem, `Viewport.SCALING_3D_MODE_FSR`), unless it names a
  Godot 4 signal or theme item as a plain value (`button.pressed = true`: ambiguous); a receiver
  whose Godot 4 class lacks the member is (`get_tree().change_scene()`); a name Godot 4 does
  not have at all is (`KinematicBody2D`, `deg2rad`);
- a change the migration page states for one class (`PathFollow2D's rotate is now rotates`)
  concerns only a receiver of that class: read from the script's `extends` (a Godot 3 name through
  the converter's class renames), a typed, constructed or literal local, or a class name. For a name
  Godot 4 still has, an unknown receiver says nothing; a bare call of a global function
  (`load(...)`) is the global;
- what is left is ambiguous (a name valid in both versions): the chunk's version markers
  decide (`@export`, `await`, `super()` against `export var`, `yield(`, `connect("s", o, "m")`,
  and the unambiguous Godot 3 names found in the same chunk), sharpened by the request's
  `godot_version` hint. Nothing is accepted without a literal occurrence;
- a declaration of a renamed virtual is Godot 3 use when the script's class has the new virtual and
  not the old name (`func make_visible(visible):` in an EditorPlugin, whose Godot 4 virtual is `_make_visible`);
- a renamed constant whose Godot 4 name the receiver's class does not have is not this use's
  migration (`Label.ALIGN_CENTER` would become `Label.ALIGNMENT_CENTER`, which Godot 4 does not have:
  Label's alignment went elsewhere), so it is no evidence for it;
- a scene node named after a class Godot 4 no longer has (`$KinematicBody2D`) is weak evidence: nodes
  keep their names through a port, so the chunk's Godot 4 markers or a hint of 4 overrule it. Only a
  whole node name counts: `"RigidBody%s" % kind` and `"Camera Rig"` name other nodes.
"""
from __future__ import annotations

from typing import Any

from ...gdscript.classref import ClassReference
from ...gdscript.facts import GDScriptFacts, NameOccurrence
from ...gdscript.resolution import Resolution
from ..engine.trace import OccurrenceStatus
from .chunk_rules import OCCURRENCE_RULES
from .project_rules import GODOT3_OVERRULES, NOT_COMPILED, VERSION_RULES
from .version_occurrence import ChunkScope, OccurrenceCase, VersionRule

__all__ = ["GODOT3_OVERRULES", "OCCURRENCE_RULES", "VERSION_RULES", "classify_in_context", "classify_occurrence",
           "decide_occurrence", "first_rule"]


def first_rule(rules: tuple[VersionRule, ...], o: OccurrenceCase) -> tuple[VersionRule, str] | None:
    """The first rule of the table that applies to the occurrence, with its reason."""
    return next(((rule, why) for rule in rules if (why := rule.applies(o))), None)


def decide_occurrence(o: OccurrenceCase) -> tuple[OccurrenceStatus, str, str]:
    """(status, why, rule) from the chunk alone: the first of `OCCURRENCE_RULES` that applies."""
    fired = first_rule(OCCURRENCE_RULES, o)
    if fired is None:
        raise ValueError(f"{o.where}: no occurrence rule applies to region {o.occ['region']!r}")
    return fired[0].outcome, fired[1], fired[0].name


def classify_occurrence(facts: GDScriptFacts, res: Resolution, ref: ClassReference, mapping: dict[str, Any], occ: NameOccurrence,
                        renamed: dict[str, str] | None = None) -> tuple[OccurrenceStatus, str]:
    """(status, why) for one literal occurrence of the mapping's source, from the chunk alone. `renamed`: the
    converter's class renames (Godot 3 name -> Godot 4 name), to read a receiver written with its Godot 3 class name.

    status: ignored | valid_godot4 | godot3 | godot3_comment (a comment writes a dropped name as code) | ambiguous"""
    status, why, _ = decide_occurrence(OccurrenceCase(facts, res, ref, mapping, occ, renamed or {}, None, None))
    return status, why


def classify_in_context(scope: ChunkScope, mapping: dict[str, Any], occ: NameOccurrence) -> tuple[OccurrenceStatus, str, str]:
    """(status, why, rule): the rules that read the project and the Godot 4-only syntax (`VERSION_RULES`), then the
    chunk-only ones (`OCCURRENCE_RULES`), then the overrules of a `godot3` decision. `rule` names the rule that decided."""
    o = OccurrenceCase(scope.facts, scope.resolution, scope.ref, mapping, occ, scope.renamed_classes, scope.version,
                       scope.context)
    if fired := first_rule(VERSION_RULES, o):
        return fired[0].outcome, f"{fired[1]} [rule {fired[0].name}]", fired[0].name
    status, why, name = decide_occurrence(o)
    if status != "godot3":
        return status, why, name
    if overruled := first_rule(GODOT3_OVERRULES, o):
        return overruled[0].outcome, f"{why}; {overruled[1]} [rule {overruled[0].name}]", overruled[0].name
    if scope.context is not None and scope.context.major == "4":
        return status, f"{why}; {NOT_COMPILED} [rule engine_api_missing]", "engine_api_missing"
    return status, why, name
