"""The parser-based GDScript facts, the Godot 4 class reference, the resolve stage and the
version decisions, against the real Godot 4.7 class reference in ../shared."""
from __future__ import annotations

import json

import pytest

from conftest import REFERENCE_CHUNK, SHARED
from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.resolve import resolve_uses
from godot_rag.retrieve.engine.types import Candidate
from godot_rag.retrieve.evidence.validate import ValidationScope, validate
from godot_rag.retrieve.migration.version import (
    WEAK_OVERRULES,
    ConverterRenames,
    VersionMarkers,
    comment_reference_overruled,
    converter_renames,
    decide_ambiguous,
    version_context,
    version_names,
)
from godot_rag.retrieve.migration.version_occurrence import ChunkScope
from godot_rag.retrieve.migration.version_rules import (
    GODOT3_OVERRULES,
    OCCURRENCE_RULES,
    VERSION_RULES,
    classify_in_context,
    classify_occurrence,
)
from godot_rag.retrieve.migration.version_stage import decide_occurrences, mapping_markers
from godot_rag.retrieve.recall.codematch import clone_match, renameable_names


def test_facts_tell_code_from_comments_and_strings():
    src = ('extends Node2D\n# Spawn RigidBody scenes.\nfunc _ready(speed: float) -> void:\n'
           '\tvar n := "RigidBody".length()\n\tvar t := Timer.new()\n\t$AnimatedSprite2D.play()\n'
           '\tget_tree().quit()  # bye\n\tawait get_tree().process_frame\n')
    f = parse_chunk(src)
    assert f.parser == "tree-sitter" and f.parse_errors == []
    assert f.extends == "Node2D"
    assert "RigidBody" not in f.identifiers and "RigidBody" in f.all_identifiers
    assert [o["region"] for o in f.occurrences("RigidBody")] == ["comment", "string"]
    assert f.local_types == {"speed": "float", "t": "Timer"}
    assert {"n", "t", "speed", "_ready"} <= f.declared
    roots = {(c.root_kind, c.root, tuple(p.name for p in c.parts)) for c in f.chains}
    assert ("call", "get_tree", ("quit",)) in roots and ("get_node", "", ("play",)) in roots
    assert ("string", "", ("length",)) in roots
    assert {m.what for m in f.markers if m.version == "4"} == {"await"}


def test_godot3_syntax_markers_and_fallback():
    f = parse_chunk('tool\nextends KinematicBody2D\nexport(int) var speed = 3\nonready var s = $S\n'
                    'func f():\n\tyield(get_tree(), "idle_frame")\n\tconnect("pressed", self, "_on")\n')
    got = {m.what for m in f.markers}
    assert {"tool keyword", "export var", "onready var", "yield()", 'connect("signal", target, "method")'} <= got
    assert all(m.version == "3" for m in f.markers)
    broken = parse_chunk("func (((:\n  ))) ]] var x = \n if if if\n]]]")
    assert broken.parser == "regex-fallback" and broken.parse_errors


def names_and_types(found):
    """A member lookup's owner and the entry's kind, type and property (its marks and signatures left out)."""
    owner, info = found
    return owner, {k: v for k, v in info.items() if k in ("kind", "type", "accessor_of")}


def test_class_reference_walks_inheritance(ref):
    assert ref.member("Control", "queue_redraw")[0] == "CanvasItem"
    owner, info = ref.member("Node2D", "get_tree")
    assert (owner, info["kind"], info["type"]) == ("Node", "method", "SceneTree")
    assert ref.member("Viewport", "SCALING_3D_MODE_FSR")[1]["kind"] == "constant"
    assert not ref.exists("KinematicBody2D") and not ref.exists("deg2rad")
    assert ref.has_class("Viewport") and "CanvasItem.hide" in ref.where("hide")


def test_member_lookups_in_code_and_by_name_are_two_questions(ref):
    """`member` keeps its answers: as code reaches it (`code=True`, theme items hidden) and by name are asked apart,
    in either order, and an answer asked again is the one given first."""
    for first in (False, True):
        fresh = ClassReference(ref.to_dict())
        answers = {code: fresh.member("Button", "pressed", code=code) for code in (first, not first)}
        assert names_and_types(answers[False]) == ("Button", {"kind": "theme_property", "type": "StyleBox"})
        assert names_and_types(answers[True]) == ("BaseButton", {"kind": "signal", "type": ""})
        assert fresh.member("Button", "pressed", code=first) is answers[first]
        assert fresh.member("Button", "no_such_member") is None and fresh.member("NoSuchClass", "pressed") is None


def test_resolve_stage_examples_from_the_issue(ref):
    src = ("extends Control\nfunc _draw() -> void:\n\tqueue_redraw()\n\tget_tree().quit()\n"
           "\tRenderingServer.directional_soft_shadow_filter_set_quality(1)\n\tvar t := Timer.new()\n\tt.start(1.0)\n"
           "\tvar p: Node2D = null\n\tp.rotate(0.1)\n\tmy_helper()\n\tx.foo()\n")
    res = resolve_uses(parse_chunk(src), ref)
    apis = res.apis
    assert {"CanvasItem.queue_redraw", "Node.get_tree", "SceneTree.quit",
            "RenderingServer.directional_soft_shadow_filter_set_quality", "Timer.new", "Timer.start",
            "Node2D.rotate"} <= set(apis)
    quit = next(u for u in res.uses if u.api == "SceneTree.quit")
    assert quit.line == 4 and quit.via == "return_type"
    names = {u.name for u in res.unresolved}
    assert "my_helper" in names and "x.foo" in names  # listed, never guessed
    assert res.own_class == "Control" and res.own_class_from == "chunk"


def test_resolve_without_extends_uses_hint_or_deduction(ref):
    body = "func f():\n\tget_tree().quit()\n\thide()\n"
    plain = resolve_uses(parse_chunk(body), ref)
    assert "SceneTree.quit" in plain.apis  # `get_tree` is only ever Node.get_tree
    assert not any(u.member == "hide" for u in plain.uses)  # CanvasItem? Node3D? Window? unknown
    hinted = resolve_uses(parse_chunk(body), ref, extends_hint="Sprite2D")
    assert "CanvasItem.hide" in hinted.apis and hinted.own_class_from == "hint"


def test_missing_member_is_godot3_evidence(ref):
    res = resolve_uses(parse_chunk('func f():\n\tget_tree().change_scene("res://a.tscn")\n'), ref)
    missing = res.missing()
    assert missing and missing[0].missing_on == "SceneTree" and missing[0].name == "change_scene"


def test_a_dictionary_read_with_dot_syntax_is_a_key_not_a_missing_member(ref):
    res = resolve_uses(parse_chunk("func f(result: Dictionary):\n\tprint(result.response_code)\n\tresult.keys()\n"
                                   "\tresult.no_such_method()\n"), ref)
    key = next(u for u in res.unresolved if u.name == "response_code")
    assert key.missing_on is None and "key" in key.reason
    assert "Dictionary.keys" in res.apis
    assert [u.name for u in res.missing()] == ["no_such_method"]  # a call still needs a method


def test_a_local_has_the_type_of_the_call_that_gives_its_value(ref):
    """`var t := create_tween()`: `t` is what `create_tween()` documents it returns, and `$A as Label` is a Label.
    A value that goes on after the call (`get_tree().create_timer()`, beyond one hop) or ends in a subscript
    (`get_children()[0].foo()`) types nothing."""
    code = ("extends Node2D\n\nfunc _ready():\n\tvar tween := create_tween()\n"
            "\ttween.tween_property(self, \"modulate\", Color.RED, 1.0)\n"
            "\tvar tree = get_tree()\n\ttree.create_timer(1.0)\n\tvar label := $A as Label\n\tlabel.text = \"x\"\n"
            "\tvar timer := get_tree().create_timer(2.0)\n\ttimer.timeout.connect(queue_free)\n"
            "\tvar first = get_children()[0].foo()\n\tfirst.bar()\n")
    res = resolve_uses(parse_chunk(code), ref)
    via = {u.api: u.via for u in res.uses}
    assert via["Tween.tween_property"] == "value_type" and via["SceneTree.create_timer"] in ("value_type", "return_type")
    assert [u.line for u in res.uses if u.api == "SceneTree.create_timer"] == [7, 10]
    assert via["Label.text"] == "cast"
    assert not res.missing()  # neither `timer` (a SceneTreeTimer, two hops away) nor `first` is typed as the call before
    assert {u.name for u in res.unresolved} >= {"first.bar", "timer.timeout"}


def test_a_local_typed_by_its_value_is_the_one_a_use_sees_and_may_be_a_scripts_object(ref):
    """The local a use sees: not one of another function, nor one a parameter, a `for` variable or a new value
    (`x = ...`) shadows, nor one declared after the use. And `get_parent()` or `$A as Label` may be a project
    script's object, so a member its engine class lacks is not *missing* (no Godot 3 evidence), as after `is`."""
    def uses(code):
        res = resolve_uses(parse_chunk("extends Node\n" + code), ref)
        return {(u.api, u.line) for u in res.uses if u.via in ("value_type", "cast")}, res

    found, res = uses("func a():\n\tvar x = get_viewport()\n\tx.get_visible_rect()\nfunc b():\n\tvar x = get_tree()\n"
                      "\tx.quit()\n")
    assert found == {("Viewport.get_visible_rect", 4), ("SceneTree.quit", 7)} and not res.missing()
    for shadowed in ("func _ready():\n\tvar body = get_parent()\nfunc _on_body_entered(body):\n\tbody.take_damage(1)\n",
                     "func f():\n\tvar x = get_tree()\n\tx = get_viewport()\n\tx.get_visible_rect()\n",
                     "func a():\n\ttimer.timeout.connect(a)\nfunc b():\n\tvar timer = get_tree().create_timer(1)\n",
                     "func f():\n\tvar c = get_tree()\n\tfor c in get_children():\n\t\tc.quit()\n"):
        found, res = uses(shadowed)
        assert not found and not res.missing(), shadowed
    found, res = uses("func f():\n\tvar p = get_parent()\n\tp.jump()\n\tvar l = $A as Label\n\tl.custom_fn()\n")
    assert not found and not res.missing()
    assert [u.reason for u in res.unresolved if u.name == "jump"] == [
        "Node has no 'jump'; a call's value leaves room for a subclass that has"]


def _mapping(src, dst, change, terms=None):
    return {"source_api": src, "target_api": dst, "change_type": change, "match_terms": terms or [src],
            "negative_patterns": [], "confidence": 1.0}


def _classify(ref, src_code, mapping, renamed=None):
    facts = parse_chunk(src_code)
    res = resolve_uses(facts, ref)
    return [classify_occurrence(facts, res, ref, mapping, occ, renamed) for occ in facts.occurrences(mapping["source_api"])]


def test_version_decisions_per_occurrence(ref):
    viewport = _mapping("Viewport", "SubViewport", "class_rename")
    assert _classify(ref, "# a Viewport here\nvar v = 1", viewport)[0][0] == "ignored"
    assert _classify(ref, "var m = Viewport.SCALING_3D_MODE_FSR", viewport)[0][0] == "valid_godot4"
    assert _classify(ref, "var v: Viewport", viewport)[0][0] == "ambiguous"
    assert _classify(ref, "extends KinematicBody2D",
                     _mapping("KinematicBody2D", "CharacterBody2D", "class_rename"))[0][0] == "godot3"
    hide = _mapping("hide", "hidden", "signal_change", ["hide", "CanvasItem.hide"])
    assert _classify(ref, "extends Control\nfunc f():\n\thide()", hide)[0][0] == "ignored"
    # Godot 4 documents `hide` only as a method: a signal of that name is Godot 3's.
    assert _classify(ref, 'func f():\n\tconnect("hide", self, "_on_hide")', hide)[0][0] == "godot3"
    # Only where the call takes a signal name: the method name of a Godot 3 `connect` is not one.
    assert _classify(ref, 'func f():\n\tconnect("visibility_changed", self, "hide")', hide)[0][0] == "ignored"
    assert _classify(ref, 'func f():\n\tyield(self, "hide")', hide)[0][0] == "godot3"
    assert _classify(ref, 'func f():\n\tconnect("pressed", self, "_on_pressed")',
                     _mapping("pressed", "button_pressed", "signal_change",
                              ["pressed", "BaseButton.pressed"]))[0][0] == "ambiguous"
    rigid = _mapping("RigidBody", "RigidBody3D", "class_rename")
    assert _classify(ref, 'var n = "RigidBody".length()', rigid)[0][0] == "ignored"
    scene = _mapping("change_scene", "change_scene_to_file", "method_rename")
    assert _classify(ref, 'func f():\n\tget_tree().change_scene("x")', scene)[0][0] == "godot3"
    instance = _mapping("instance", "instantiate", "method_change")  # the page's change of no one class
    assert _classify(ref, 'func f():\n\tvar b = Bullet.instance()', instance)[0][0] == "godot3"


def test_property_accessors_are_godot4_api(ref):
    # The class pages list each property's setter and getter under its description: callable API.
    assert names_and_types(ref.member("Node2D", "get_global_position")) == (
        "Node2D", {"kind": "method", "type": "Vector2", "accessor_of": "global_position"})
    assert ref.member("SubViewport", "set_clear_mode")[1]["accessor_of"] == "render_target_clear_mode"
    # A subclass's getter that an ancestor documents as a method is that method.
    assert ref.member("InputEventKey", "is_pressed")[0] == "InputEvent"
    res = resolve_uses(parse_chunk("func f(n: Node2D):\n\tvar p = n.get_global_position()\n"), ref)
    assert "Node2D.get_global_position" in res.apis and not res.missing()
    # By name alone, a setter is no Godot 4 API: `set_one_shot()` on an unknown receiver is Godot 3's method.
    assert not ref.exists("set_one_shot") and ref.where("set_autowrap") == []
    renames = [_mapping("set_oneshot", "set_one_shot", "method_rename"),
               _mapping("KinematicBody", "CharacterBody3D", "class_rename")]
    assert version_names(renames, ref) == ({"set_oneshot", "KinematicBody"}, {"CharacterBody3D"})
    # One reading of the renames, viewed by each reader (the version rules, the validator, the guide fit).
    one = converter_renames(renames, ref)
    assert (one.old, one.new) == ({"set_oneshot", "KinematicBody"}, {"CharacterBody3D"})
    assert one.classes == {"KinematicBody": "CharacterBody3D"} and one.code["set_oneshot"] == {"set_one_shot"}
    assert ConverterRenames.from_plain(one.to_plain()) == one
    # A getter is no clue to the script's class: `get_world_3d` stays Node3D's for a bare call.
    assert "Node3D.get_world_3d" in resolve_uses(
        parse_chunk("func f():\n\tget_world_3d()\n\tglobal_translate(Vector3.UP)\n"), ref).apis


def test_a_renamed_constant_needs_its_new_name_on_the_receiver(ref):
    """The converter renames `ALIGN_CENTER` by name, so `Label.ALIGN_CENTER` would become
    `Label.ALIGNMENT_CENTER`, which Godot 4 does not have: not this use's migration."""
    align = _mapping("ALIGN_CENTER", "ALIGNMENT_CENTER", "enum_rename")
    status, why = _classify(ref, "func f(l):\n\tl.align = Label.ALIGN_CENTER", align)[0]
    assert status == "ignored" and "no 'ALIGNMENT_CENTER' on Label" in why
    assert _classify(ref, "extends Label\nfunc f():\n\talign = ALIGN_CENTER", align)[0][0] == "ignored"
    assert _classify(ref, "func f(b):\n\tb.alignment = BoxContainer.ALIGN_CENTER", align)[0][0] == "godot3"
    static = _mapping("MODE_STATIC", "FREEZE_MODE_STATIC", "enum_rename")
    assert _classify(ref, "func f(b):\n\tb.mode = RigidBody2D.MODE_STATIC", static)[0][0] == "godot3"
    # The receiver written with its Godot 3 name is read through the converter's class renames.
    assert _classify(ref, "extends RigidBody\nfunc f():\n\tif mode == MODE_STATIC: pass", static,
                     {"RigidBody": "RigidBody3D"})[0][0] == "godot3"
    # A target no Godot 4 page documents says the converter's table is out of date, not the receiver wrong.
    xbutton = _mapping("BUTTON_MASK_XBUTTON1", "MOUSE_BUTTON_MASK_XBUTTON1", "enum_rename")
    assert _classify(ref, "extends Node\nfunc f(m):\n\treturn m & BUTTON_MASK_XBUTTON1", xbutton)[0][0] == "godot3"
    # A change the migration page states for its class is not the converter's: it names the class itself.
    quit = _mapping("NOTIFICATION_WM_QUIT_REQUEST", "NOTIFICATION_WM_CLOSE_REQUEST", "constant_change",
                    ["NOTIFICATION_WM_QUIT_REQUEST", "MainLoop.NOTIFICATION_WM_QUIT_REQUEST"])
    assert _classify(ref, "func _notification(what):\n\tif what == MainLoop.NOTIFICATION_WM_QUIT_REQUEST: pass",
                     quit)[0][0] == "godot3"
    # Global constants keep no qualifier: `BUTTON_LEFT` is `MOUSE_BUTTON_LEFT` on any receiver.
    left = _mapping("BUTTON_LEFT", "MOUSE_BUTTON_LEFT", "enum_rename")
    assert _classify(ref, "extends Node2D\nfunc f(e):\n\tif e.button_index == BUTTON_LEFT: pass", left)[0][0] == "godot3"


def test_a_declared_godot3_virtual_of_the_scripts_class_is_godot3(ref):
    """Godot 4 calls EditorPlugin's `_make_visible`; `func make_visible(visible):` there is the Godot 3 override."""
    mv = _mapping("make_visible", "_make_visible", "method_rename")
    status, why = _classify(ref, "extends EditorPlugin\nfunc make_visible(visible):\n\tpass", mv)[0]
    assert status == "godot3" and "EditorPlugin._make_visible" in why
    assert _classify(ref, "extends Node\nfunc make_visible(visible):\n\tpass", mv)[0][0] == "ambiguous"
    assert _classify(ref, "func make_visible(visible):\n\tpass", mv)[0][0] == "ambiguous"  # whose virtual? unknown
    process = _mapping("process", "_process", "method_change", ["process", "AnimationNode.process"])
    assert _classify(ref, "extends Node\nfunc process(delta):\n\tpass", process)[0][0] != "godot3"  # not an AnimationNode
    assert _classify(ref, "extends AnimationNode\nfunc process(time, seek, seek_root):\n\tpass", process)[0][0] == "godot3"


def test_only_a_whole_node_name_is_named_after_a_class(ref):
    rigid = _mapping("RigidBody", "RigidBody3D", "class_rename")
    status, why = _classify(ref, 'func f(kind):\n\tvar n = $Shapes.find_node("RigidBody%s" % kind)', rigid)[0]
    assert status == "ignored" and "only part of a node name" in why
    assert _classify(ref, 'func f():\n\tvar n = get_node("Camera Rig")',
                     _mapping("Camera", "Camera3D", "class_rename"))[0][0] == "ignored"
    assert _classify(ref, 'func f(i):\n\tvar n = get_node("RigidBody" + str(i))', rigid)[0][0] == "ignored"
    # A whole node name is still a scene node's name: never evidence of engine API.
    for code in ("onready var r = $Top/RigidBody/Shape", "onready var r = $RigidBody.mode",
                 'func f():\n\tvar n = get_node("Top/RigidBody")'):
        status, why = _classify(ref, code, rigid)[0]
        assert status == "ignored" and "names a scene node" in why, code


def test_a_prose_change_of_one_class_needs_a_use_on_that_class(ref):
    """`PathFollow2D's rotate is now rotates`: `rotate` is still Godot 4 API on Node2D and Node3D, so
    only a use whose receiver is a PathFollow2D (or of its lineage) is evidence; the receiver's Godot 3
    class name is read through the converter's class renames."""
    renamed = {"Camera": "Camera3D", "Spatial": "Node3D", "ImmediateGeometry": "ImmediateMesh"}

    def classify(code, mapping):
        return _classify(ref, code, mapping, renamed)

    rotate = _mapping("rotate", "rotates", "property_change", ["rotate", "PathFollow2D.rotate"])
    status, why = classify("extends Camera\nfunc f():\n\trotate(Vector3.UP, 0.1)\n", rotate)[0]
    assert status == "ignored" and "Camera3D" in why and "PathFollow2D" in why
    assert classify("extends PathFollow2D\nfunc f():\n\trotate = false\n", rotate)[0][0] == "ambiguous"
    status, why = classify("func f(node):\n\tnode.rotate = false\n", rotate)[0]
    assert status == "ignored" and "only a use on PathFollow2D" in why
    load = _mapping("load", "_load", "method_change", ["load", "ResourceFormatLoader.load"])
    status, why = classify('func f():\n\tvar s = load("res://a.tscn")\n', load)[0]
    assert status == "ignored" and "global function" in why
    # The Godot 3 override itself: Godot 4's ResourceFormatLoader calls `_load` and has no `load`.
    assert classify("extends ResourceFormatLoader\nfunc load(path, original_path):\n\tpass\n", load)[0][0] == "godot3"
    assert classify("func load(path, original_path):\n\tpass\n", load)[0][0] == "ambiguous"  # whose? unknown
    pressed = _mapping("pressed", "button_pressed", "api_change", ["pressed", "BaseButton.pressed"])
    assert classify("func _input(event):\n\tif event.pressed:\n\t\tpass\n", pressed)[0][0] == "ignored"
    assert classify("func f(b: Button):\n\tb.pressed = true\n", pressed)[0][0] == "ambiguous"
    assert classify("func f(b: BaseButton):\n\tb.pressed = true\n", pressed)[0][0] == "ambiguous"
    # Used as the Godot 4 signal it is (Button's `pressed` theme item does not hide BaseButton's signal).
    assert classify("func f(b: Button):\n\tb.pressed.connect(_on)\n", pressed)[0][0] == "valid_godot4"
    assert classify("func f(b: Button):\n\tawait b.pressed\n", pressed)[0][0] == "valid_godot4"
    # A chain the parser cuts at a subscript is no member of the script itself.
    status, why = classify("extends PathFollow2D\nfunc f(a):\n\ta.b[0].rotate = false\n", rotate)[0]
    assert status == "ignored" and "expression" in why
    # A name Godot 4 dropped, on a receiver of another class: not this class's change.
    grid = _mapping("map_to_world", "map_to_local", "method_change", ["map_to_world", "GridMap.map_to_world"])
    status, why = classify("extends TileMap\nfunc f(c):\n\treturn map_to_world(c)\n", grid)[0]
    assert status == "ignored" and "TileMap" in why
    assert classify("func f(c):\n\treturn map_to_world(c)\n", grid)[0][0] == "godot3"
    # A class the reference does not know may be the user's own (a GridMap subclass) or an autoload.
    assert classify("func f(g: MyGrid, c):\n\treturn g.map_to_world(c)\n", grid)[0][0] == "godot3"
    status, why = classify("extends Camera\nvar Camera_rig: Camera\nfunc f():\n\tCamera_rig.rotate(Vector3.UP, 1)\n", rotate)[0]
    assert "'Camera_rig', of class Camera (Camera3D in Godot 4)" in why
    remove = _mapping("remove", "remove_at", "method_change", ["remove", "Array.remove"])
    assert classify("var seen = []\nfunc f():\n\tseen.remove(0)\n", remove)[0][0] == "ambiguous"  # an Array literal
    assert classify("func f(d):\n\td.remove(0)\n", remove)[0][0] == "ignored"
    color = _mapping("set_color", "surface_set_color", "method_change", ["set_color", "ImmediateMesh.set_color"])
    assert classify("func f():\n\tvar g = ImmediateGeometry.new()\n\tg.set_color(Color.red)\n", color)[0][0] == "ambiguous"


def test_a_comment_counts_only_where_it_writes_a_dropped_name_as_code(ref):
    f = parse_chunk("# call get_tree().get_rpc_sender_id() here\n# (get_handle_name(), commit_handle()...)\n"
                    "# Spawn RigidBody scenes. A RigidBody.\n# Use `SceneTree.change_scene` or load()\n")
    def as_code(name):
        return [f.written_as_code(o["start"], o["end"]) for o in f.occurrences(name)]
    assert as_code("get_rpc_sender_id") == [True] and as_code("get_handle_name") == [True]
    assert as_code("RigidBody") == [False, False] and as_code("change_scene") == [True]
    files = parse_chunk("# see res://player/KinematicBody.tscn and Spatial.gd\n")
    assert not any(files.written_as_code(o["start"], o["end"])
                   for n in ("KinematicBody", "Spatial") for o in files.occurrences(n))
    sender = _mapping("get_rpc_sender_id", "get_remote_sender_id", "method_rename")
    assert _classify(ref, "# The server can call get_tree().get_rpc_sender_id().\nvar a = 1", sender)[0][0] == "godot3_comment"
    assert _classify(ref, "# get_rpc_sender_id tells who\nvar a = 1", sender)[0][0] == "ignored"  # prose
    rigid = _mapping("RigidBody", "RigidBody3D", "class_rename")
    assert _classify(ref, "# Spawn RigidBody scenes.\nvar a = 1", rigid)[0][0] == "ignored"
    # A name Godot 4 still documents says nothing, even written as code: `ResourceLoader.load()`.
    assert _classify(ref, "# then `ResourceLoader.load()` returns it\nvar a = 1",
                     _mapping("load", "_load", "method_rename"))[0][0] == "ignored"
    # Signal names are strings in code, not names a comment writes as code.
    assert _classify(ref, "# emits about_to_show()\nvar a = 1",
                     _mapping("about_to_show", "about_to_popup", "signal_rename"))[0][0] == "ignored"
    # A comment is weak: only the chunk's Godot 3 code (or a hint of 3 where it says nothing) makes it count.
    assert comment_reference_overruled(VersionMarkers(godot3=["line 1: export var"])) is None
    assert comment_reference_overruled(VersionMarkers(hint="3")) is None
    assert "no Godot 3 markers" in comment_reference_overruled(VersionMarkers())
    assert "Godot 4 markers" in comment_reference_overruled(VersionMarkers(godot4=["line 2: await"]))
    assert "hint is 4" in comment_reference_overruled(VersionMarkers(hint="4", godot3=["line 1: export var"]))


def _validated(ref, chunk: str, payloads: list[tuple[str, dict]]) -> dict[str, Candidate]:
    facts = parse_chunk(chunk)
    res = resolve_uses(facts, ref)
    old, new = version_names([p for t, p in payloads if t == "api_mapping"], ref)
    cands = [Candidate(table=t, id=p.get("mapping_id") or p["prototype_id"], payload=p) for t, p in payloads]
    mappings = [c for c in cands if c.table == "api_mapping"]
    occurrences = decide_occurrences(ChunkScope(facts, res, ref, {}), mappings)  # the version stage's part
    version = version_context(facts, res, new, old, "auto")
    version.godot3 += mapping_markers(mappings, occurrences)
    v = ValidationScope(facts=facts, resolution=res, ref=ref, renamed_classes={}, version=version,
                          idf=lambda t: 6.0, class_of_page={})
    return {c.id: c for c in validate(v, cands, occurrences)}


def test_a_comment_reference_is_weak_mapping_evidence_and_never_a_finding(ref):
    handle = dict(_mapping("get_handle_name", "_get_handle_name", "method_rename"), mapping_id="m:get_handle_name")
    gizmo = dict(_mapping("EditorSpatialGizmoPlugin", "EditorNode3DGizmoPlugin", "class_rename"), mapping_id="m:gizmo")
    finding = {"prototype_id": "migration:godot3_method_name", "task_type": "migration",
               "evidence_mapping_ids": ["m:get_handle_name"],
               "validator_rules": {"must_match": [r"(?<![A-Za-z0-9_])get_handle_name(?![A-Za-z0-9_])"],
                                   "requires_accepted_mapping_type": "method_rename"}}
    body = ("func _init():\n\tcreate_material(\"main\", Color(1, 0, 0))\n\n"
            "# Implement the other callbacks (get_handle_name(), commit_handle()...).\n")
    tables = [("api_mapping", handle), ("api_mapping", gizmo), ("label_prototypes", finding)]
    godot3 = _validated(ref, "extends EditorSpatialGizmoPlugin\n" + body, tables)
    m = godot3["m:get_handle_name"]
    assert m.verdict == "accept" and m.info("validate").confidence == 0.5
    assert [(o.region, o.status) for o in m.info("validate").occurrences] == [("comment", "godot3_comment")]
    assert godot3["migration:godot3_method_name"].verdict == "reject"  # a finding never fires on a comment
    # The same comment in Godot 4 code is a stale comment, not a use.
    godot4 = _validated(ref, "extends EditorNode3DGizmoPlugin\n" + body, tables)
    assert godot4["m:get_handle_name"].verdict == "reject"
    assert "the chunk's code has Godot 4 markers" in godot4["m:get_handle_name"].reason
    # The evidence shown is the strongest use: the call in code, not the comment above it.
    scene = dict(_mapping("change_scene", "change_scene_to_file", "method_rename"), mapping_id="m:scene")
    both = _validated(ref, '# Call get_tree().change_scene() to go on.\nfunc f():\n\tget_tree().change_scene("res://b.tscn")\n',
                      [("api_mapping", scene)])["m:scene"].info("validate")
    assert (both.evidence[0].chunk_line, both.evidence[0].region, both.confidence) == (3, "code", 1.0)


def test_a_class_read_through_the_renames_is_no_godot4_marker(ref):
    # Bare calls in `extends EditorSpatialGizmoPlugin` resolve on EditorNode3DGizmoPlugin; the chunk never
    # writes that Godot 4 name, so it says nothing of the chunk's version.
    new = {"EditorNode3DGizmoPlugin"}
    facts = parse_chunk('extends EditorSpatialGizmoPlugin\nfunc _init():\n\tcreate_material("main", Color(1, 0, 0))\n')
    res = resolve_uses(facts, ref)
    assert "EditorNode3DGizmoPlugin" in res.classes
    assert version_context(facts, res, new, set(), "auto").godot4 == []
    facts = parse_chunk('extends EditorNode3DGizmoPlugin\nfunc _init():\n\tcreate_material("main", Color(1, 0, 0))\n')
    assert version_context(facts, resolve_uses(facts, ref), new, set(), "auto").lean() == "4"
    # The file's own `extends`, passed as the hint (the scan does), is written by the script: it counts.
    body = parse_chunk("func _physics_process(delta):\n\tmove_and_slide()\n")
    hinted = resolve_uses(body, ref, extends_hint="CharacterBody3D")
    assert version_context(body, hinted, {"CharacterBody3D"}, set(), "auto").lean() == "4"


def test_ambiguous_cases_follow_markers_and_hint():
    assert decide_ambiguous(VersionMarkers(hint="auto"))[0] is False
    assert decide_ambiguous(VersionMarkers(hint="3"))[0] is True
    assert decide_ambiguous(VersionMarkers(godot3=["line 1: export var"]))[0] is True
    assert decide_ambiguous(VersionMarkers(hint="3", godot4=["line 2: await"]))[0] is False
    assert decide_ambiguous(VersionMarkers(hint="4", godot3=["line 1: yield()"]))[0] is False


def test_version_context_counts_renamed_godot4_names(ref):
    facts = parse_chunk("extends CharacterBody2D\nfunc f():\n\tmove_and_slide()\n")
    res = resolve_uses(facts, ref)
    ctx = version_context(facts, res, {"CharacterBody2D", "move_and_slide"}, set(), "auto")
    assert ctx.lean() == "4"


def test_an_upper_case_colour_is_godot4_code(ref):
    """Godot 3's Color constants were lower case: `Color.WHITE` marks the chunk as Godot 4, and a scene
    node named after a Godot 3 class in it (`$CollisionShape`) is then no Godot 3 evidence."""
    mappings = [{"source_api": "white", "target_api": "WHITE", "change_type": "color_rename"},
                {"source_api": "CollisionShape", "target_api": "CollisionShape3D", "change_type": "class_rename"}]
    old, new = version_names(mappings, ref)
    assert "Color.WHITE" in new and "WHITE" not in new
    facts = parse_chunk("func _process(_delta):\n\t$CollisionShape.debug_color = Color.WHITE\n")
    ctx = version_context(facts, resolve_uses(facts, ref), new, old, "auto")
    assert ctx.lean() == "4" and "Color.WHITE" in ctx.godot4[0]
    lower = parse_chunk("func _process(_delta):\n\t$CollisionShape.modulate = Color.white\n")
    assert version_context(lower, resolve_uses(lower, ref), new, old, "auto").godot4 == []


def test_clone_match_renames_only_the_chunks_own_names(ref):
    reference_vs_3d = ("func _physics_process(delta):\n    var direction = Vector3.ZERO\n"
                       "    if Input.is_action_pressed(\"move_right\"):\n        direction.x += 1\n")
    facts = parse_chunk(REFERENCE_CHUNK)
    ratio, lines = clone_match(REFERENCE_CHUNK, reference_vs_3d, renameable_names(facts, ref))
    # `func _process(delta):` (an engine callback is no name of the author's) and
    # `var velocity = Vector2.ZERO` (Vector2 is not Vector3) do not match; `velocity.x += 1` does.
    assert 1 not in lines and 2 not in lines and 4 in lines
    assert ratio < 0.3


def test_prose_migration_mappings_are_parsed_by_kind_and_direction(ref):
    from godot_rag.ingest.chunker import chunk_page
    from godot_rag.ingest.mappings import prose_mappings
    from godot_rag.ingest.markdown import parse_page
    from godot_rag.ingest.symbols import build_vocabulary

    page_file = next((SHARED / "godot_docs" / "pages").glob("tutorials__migrating__upgrading_to_godot_4__*.md"))
    page = parse_page(page_file.name, page_file.read_text(encoding="utf-8"))
    chunks = chunk_page(page, build_vocabulary([page]), source_file=page_file.name, source_sha256="x")
    for i, c in enumerate(chunks):
        c["chunk_id"] = f"{page.path}#{i:03d}"
    records, warnings = prose_mappings(chunks, set(), ref)
    by_id = {r["mapping_id"]: r for r in records}
    assert by_id["migration_guide:CanvasItem.hide->hidden"]["change_type"] == "signal_change"
    assert "migration_guide:FileSystemDock.instance->instantiate" in by_id  # the page has it reversed
    assert "migration_guide:FileSystemDock.instantiate->instance" not in by_id
    assert by_id["migration_guide:Camera3D.zfar->far"]["change_type"] == "property_change"
    assert by_id["migration_guide:SceneTree.change_scene->change_scene_to_file"]["change_type"] == "method_change"
    assert "godot4_still_valid" in by_id["migration_guide:CanvasItem.hide->hidden"]["notes"]
    # `[BaseButton](...)'s signals are now ... The `pressed` property is now `button_pressed`.`: the
    # bullet's linked subject is the class of its later sentence.
    assert "migration_guide:BaseButton.pressed->button_pressed" in by_id
    assert "migration_guide:pressed->button_pressed" not in by_id
    # "You may have to replace some `instance()` calls with `instantiate()`.": a method change of no one class.
    instance = by_id["migration_guide:instance->instantiate"]
    assert instance["change_type"] == "method_change" and instance["match_terms"] == ["instance"]
    # "replace `call_group(...)` with `call_group_flags(SceneTree.GROUP_CALL_DEFERRED, ...)`" changes arguments, not a name.
    assert not any(r["source_api"] == "call_group" for r in records)
    assert any("reversed" in w for w in warnings)


def test_resolution_matches_the_real_code_api_gold(ref):
    """Resolution with the file's own `extends` agrees with the set's API gold (a floor, not a tuned number)."""
    import re

    with open(SHARED / "eval" / "realcode_godot4.dev.jsonl", encoding="utf-8") as lines:
        rows = [json.loads(l) for l in lines][:300]
    root = SHARED / "realcode" / "godot-demo-projects" / "godot4"
    tp = fp = fn = 0
    for q in rows:
        path = root / q["id"].split(":", 1)[1].rsplit("#", 1)[0]
        m = re.search(r"(?m)^extends\s+(\w+)", path.read_text(encoding="utf-8")) if path.exists() else None
        res = resolve_uses(parse_chunk(q["chunk_text"]), ref, m.group(1) if m else None)
        # The gold resolves calls, chains and typed locals, not bare names of the own class's members
        # (`velocity = ...`), what follows their type, nor a name an `is` test narrows: those uses are outside its scope.
        # A local typed by its value's call (`var t := create_tween()`) is outside its scope too.
        got = {u.api for u in res.uses if u.via not in ("own_class_property", "property_type", "narrowed", "value_type")}
        gold = set(q["relevant_api"])
        tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
    assert tp / (tp + fp) > 0.9 and tp / (tp + fn) > 0.9


def test_the_version_rules_are_one_ordered_table_of_named_rules():
    names = [r.name for r in VERSION_RULES + OCCURRENCE_RULES + GODOT3_OVERRULES] + [w.name for w in WEAK_OVERRULES.values()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert len(OCCURRENCE_RULES) >= 30  # every decision of the chunk alone is a rule of its own
    assert {r.outcome for r in OCCURRENCE_RULES} == {"godot3", "godot3_comment", "valid_godot4", "ambiguous", "ignored"}
    # Each place ends on a rule that always fires there; the last one ends the table.
    assert OCCURRENCE_RULES[-1].name == "still_godot4_api" and OCCURRENCE_RULES[1].name == "in_comment"


# Real occurrences (the demos' Godot 3 scripts in ../shared/eval) and the rule that decides each.
REAL_OCCURRENCES = [
    ("rc3:2d/bullet_shower/bullets.gd#2", ("Physics2DServer", "PhysicsServer2D", "class_rename"), "godot3", "class_dropped"),
    ("rc3:2d/bullet_shower/bullets.gd#2", ("rand_range", "randf_range", "method_rename"), "godot3", "name_dropped"),
    ("rc3:2d/bullet_shower/player.gd#0", ("AnimatedSprite", "AnimatedSprite2D", "class_rename"), "ignored",
     "node_path_is_no_api"),
    ("rc3:2d/finite_state_machine/player/player_controller.gd#0", ("KinematicBody2D", "CharacterBody2D", "class_rename"),
     "ignored", "in_comment"),
    ("rc3:misc/2.5d/addons/node25d/node25d_plugin.gd#1", ("KinematicBody", "CharacterBody3D", "class_rename"), "godot3",
     "string_names_dropped_class"),
    ("rc3:3d/waypoints/waypoint.gd#2", ("get_size_override", "get_size_2d_override", "method_rename"), "godot3_comment",
     "comment_writes_dropped_name"),
]


@pytest.mark.parametrize("query,mapping,status,rule", REAL_OCCURRENCES)
def test_a_real_occurrence_names_the_rule_that_decided_it(ref, query, mapping, status, rule):
    with open(SHARED / "eval" / "realcode_godot3.dev.jsonl", encoding="utf-8") as lines:
        chunk = next(q["chunk_text"] for q in map(json.loads, lines) if q["id"] == query)
    facts = parse_chunk(chunk)
    res, m = resolve_uses(facts, ref), _mapping(*mapping)
    decided = [classify_in_context(ChunkScope(facts, res, ref), m, occ) for occ in facts.occurrences(m["source_api"])]
    assert (status, rule) in [(s, r) for s, _, r in decided], decided
    assert all(r in {x.name for x in OCCURRENCE_RULES} for _, _, r in decided)
    # The reason stays the rule's own text; the chunk-only wrapper decides the same.
    assert [d[:2] for d in decided] == [classify_occurrence(facts, res, ref, m, occ)
                                        for occ in facts.occurrences(m["source_api"])]


OWN_PROPERTY_CHUNK = ("extends CharacterBody2D\nfunc _physics_process(delta):\n\tvelocity = Vector2.ZERO\n"
                      "\tvelocity.x = move_toward(velocity.x, 0, delta)\n\tif visible:\n\t\tmodulate.a = 0.5\n")


def test_bare_names_of_the_own_class_resolve_as_its_members(ref):
    res = resolve_uses(parse_chunk(OWN_PROPERTY_CHUNK), ref)
    by_api = {(u.api, u.via) for u in res.uses}
    assert ("CharacterBody2D.velocity", "own_class_property") in by_api  # `velocity = ...`: the property of `extends`
    assert ("CanvasItem.visible", "own_class_property") in by_api  # an ancestor's property, read bare
    # A chain rooted at the property goes on through its documented type.
    assert ("Vector2.x", "property_type") in by_api and ("Color.a", "property_type") in by_api
    assert "CharacterBody2D.delta" not in res.apis  # a parameter is the chunk's own name
    # Without `extends`, a bare name resolves only where the inferred classes agree on its owner.
    bare = resolve_uses(parse_chunk("func f():\n\tname = 'x'\n\tposition.x = 1\n\tget_tree().quit()\n"), ref)
    assert "Node.name" in bare.apis and not any(a.endswith(".position") for a in bare.apis)
    # `move_and_slide()` leaves CharacterBody2D and CharacterBody3D: `velocity` stays unresolved.
    split = resolve_uses(parse_chunk("func f():\n\tvelocity = Vector2.ZERO\n\tmove_and_slide()\n"), ref)
    assert not any(u.member == "velocity" for u in split.uses)


def test_a_declared_name_is_no_member_of_the_own_class(ref):
    declared = OWN_PROPERTY_CHUNK.replace("func _physics_process", "var velocity := Vector2.ZERO\nfunc _physics_process")
    res = resolve_uses(parse_chunk(declared), ref)
    assert not any(u.member == "velocity" for u in res.uses)
    assert "CanvasItem.visible" in res.apis


def test_a_name_the_project_declares_is_no_engine_property(ref, tmp_path):
    from godot_rag.gdscript.project import RequestContext
    from godot_rag.gdscript.resolve import extends_hint
    from godot_rag.scan.project import read_project
    from godot_rag.scan.symbols import build_project_symbols, file_context

    (tmp_path / "project.godot").write_text('config_version=5\n\n[application]\n\nconfig/name="P"\n')
    (tmp_path / "player.gd").write_text("extends CharacterBody2D\n\nvar velocity := Vector2.ZERO\n")
    table = build_project_symbols(read_project(tmp_path, "."))
    ctx = RequestContext.parse(file_context(table, "player.gd"))
    facts = parse_chunk("func _physics_process(delta):\n\tvelocity = Vector2.ZERO\n\tvisible = false\n")
    res = resolve_uses(facts, ref, extends_hint(facts, None, ctx), project=ctx.index(), own_scope=ctx.own_scope())
    assert res.own_class == "CharacterBody2D" and "CanvasItem.visible" in res.apis
    assert not any(u.member == "velocity" for u in res.uses)
    assert any(u.name == "velocity" and "declared by the project" in u.reason for u in res.unresolved)


def test_an_is_test_narrows_a_name_where_it_holds(ref):
    """`if body is RigidBody3D:` (or `elif`, or the left end of an `and` chain): the name is that class from the
    test to the end of the clause's body, and only there. A member the narrowed class lacks is no missing member:
    the value may be a project subclass's. A typed `for` variable is a typed local."""
    chunk = ("func init_body(event) -> void:\n"
             "\tif _current_body is CharacterBody3D and _current_body.is_on_floor():\n"
             "\t\t_current_body._stop_on_slopes = true\n"
             "\telif _current_body is RigidBody3D:\n"
             "\t\t_current_body.sleeping = false\n"
             "\t_current_body.freeze = true\n"
             "\tfor label: Label in labels:\n"
             "\t\tlabel.text = \"\"\n")
    facts = parse_chunk(chunk)
    res = resolve_uses(facts, ref)
    uses = {(u.api, u.line, u.via) for u in res.uses}
    assert {("CharacterBody3D.is_on_floor", 2, "narrowed"), ("RigidBody3D.sleeping", 5, "narrowed"),
            ("Label.text", 8, "local_type")} <= uses
    assert not any(u.line == 6 for u in res.uses)  # after the `if`, the test no longer holds
    slopes = next(u for u in res.unresolved if u.name == "_stop_on_slopes")
    assert slopes.missing_on is None and "subclass" in slopes.reason
    assert not res.missing()
