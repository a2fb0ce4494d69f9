"""The guide features (retrieve/docs_features.py), the model's arithmetic, its fit, and the judged metrics."""
import numpy as np

from godot_rag.eval.guide_fit import choose_threshold, curve, fit_logistic, fit_signed
from godot_rag.eval.judged import judged_metrics
from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.resolve import resolve_uses
from godot_rag.retrieve.evidence.chunk_side import chunk_side
from godot_rag.retrieve.evidence.docs_features import FEATURES, GuideRecord, contradictions, guide_features
from godot_rag.retrieve.evidence.docs_stats import DocsApiStats, untyped_members
from godot_rag.retrieve.evidence.guide_copy import CopyNames, copied_share, copied_shares
from godot_rag.retrieve.evidence.guide_model import GuideModel
from godot_rag.retrieve.recall.codematch import clone_match


def method(t="void"):
    return {"kind": "method", "type": t}


def reference() -> ClassReference:
    classes = {
        "Object": {"inherits": None, "page": "classes/class_object", "members": {"connect": method()}},
        "Node": {"inherits": "Object", "page": "classes/class_node",
                 "members": {"get_node": method("Node"), "_ready": method(), "_unhandled_input": method()}},
        "Vector2": {"inherits": None, "page": "classes/class_vector2", "members": {"distance_to": method("float")}},
        "Plane": {"inherits": None, "page": "classes/class_plane", "members": {"distance_to": method("float")}},
        "NavigationAgent2D": {"inherits": "Node", "page": "classes/class_navigationagent2d",
                              "members": {"get_next_path_position": method("Vector2")}},
        "NavigationServer3D": {"inherits": "Object", "page": "classes/class_navigationserver3d",
                               "members": {"map_get_path": method()}},
        "PhysicsBody2D": {"inherits": "Node", "page": "classes/class_physicsbody2d", "members": {}},
        "CharacterBody2D": {"inherits": "PhysicsBody2D", "page": "classes/class_characterbody2d",
                            "members": {"move_and_slide": method("bool")}},
        "RigidBody2D": {"inherits": "PhysicsBody2D", "page": "classes/class_rigidbody2d", "members": {}},
    }
    # Node is a hub of the hierarchy: many classes under it.
    for i in range(25):
        classes[f"Widget{i}"] = {"inherits": "Node", "page": f"classes/class_widget{i}", "members": {}}
    return ClassReference({"classes": classes})


def record(uses=(), classes=(), declares=(), mentions=(), callbacks=()):
    return {"metadata": {"code_uses": list(uses), "code_classes": list(classes), "code_callbacks": list(callbacks),
                         "code_declares": list(declares), "mentions": list(mentions)}}


def features(stats, code, rec, **kw):
    facts = parse_chunk(code)
    res = resolve_uses(facts, stats.ref)
    args = {"clone": 0.0, "bm25_rank": 1, "cosine": 0.5, "hub_rate": 0.0} | kw
    return guide_features(stats, res, facts, GuideRecord(rec, **args))


def stats_with(docs, ref=None, share=None):
    return DocsApiStats.build(docs, ref or reference(), share)


def test_shared_api_is_weighted_by_how_rare_it_is_and_declared_names_never_count():
    ref = reference()
    # get_node is in every record; move_and_slide in one.
    docs = {f"r{i}": record(uses=["Node.get_node"]) for i in range(50)}
    docs["slide"] = record(uses=["CharacterBody2D.move_and_slide", "Node.get_node"])
    stats = stats_with(docs, ref, {"Node.get_node": 0.6})
    assert stats.member_specificity("Node.get_node") == 0.0  # a quarter of real chunks use it: nothing
    assert stats.member_specificity("CharacterBody2D.move_and_slide") > 0.7
    code = "extends CharacterBody2D\n\nfunc _physics_process(delta):\n    get_node(\"A\")\n    move_and_slide()\n"
    values, basis = features(stats, code, docs["slide"])
    assert [x["api"] for x in basis["shared_api"]] == ["CharacterBody2D.move_and_slide", "Node.get_node"]
    assert values["api_code"] == stats.member_specificity("CharacterBody2D.move_and_slide")
    # A function both sides declare (`update_camera`) is no shared API, whatever the record calls it.
    values, basis = features(stats, "func update_camera():\n    pass\n", record(declares=["update_camera"]))
    assert values["api_code"] == 0 and not basis["shared_api"]


def test_a_coordinate_of_a_value_type_is_no_evidence():
    ref = reference()
    ref.classes["Basis"] = {"inherits": None, "page": "classes/class_basis",
                            "members": {"x": {"kind": "property", "type": "Vector3"}, "rotated": method("Basis"),
                                        "looking_at": method("Basis")}}
    ref.classes["SegmentShape2D"] = {"inherits": "Node", "page": "classes/class_segmentshape2d",
                                     "members": {"a": {"kind": "property", "type": "Vector2"}}}
    assert ref.coordinate("Basis.x")
    # A method, a class with a parent, and a name the class lacks are no coordinates.
    assert not ref.coordinate("Basis.rotated") and not ref.coordinate("SegmentShape2D.a") and not ref.coordinate("Basis.q")
    # Resolved uses of `.x` are rare in the docs (most are untyped), which would make it look specific: as a guide's
    # evidence it weighs nothing; a class page's entry of it keeps its specificity (the entry does document it).
    docs = {"looking": record(uses=["Basis.x", "Basis.looking_at"])} | {f"r{i}": record() for i in range(50)}
    stats = stats_with(docs, ref)
    assert stats.evidence_specificity("Basis.x") == 0.0 < stats.member_specificity("Basis.x")
    assert stats.evidence_specificity("Basis.looking_at") == stats.member_specificity("Basis.looking_at") > 0.7
    code = "func rotate_by(b: Basis, v: float) -> Basis:\n    var r := Basis()\n    return r.rotated(b.x, v)\n"
    values, basis = features(stats, code, docs["looking"])
    assert values["api_code"] == 0.0  # the gyro's `rotated` and a player's `looking_at` share only `Basis.x`
    assert basis["shared_api"] == [{"api": "Basis.x", "specificity": 0.0, "from": "code", "coordinate": True}]


def test_a_shared_callback_weighs_its_specificity_and_shared_api_counts_in_a_matching_context():
    ref = reference()
    docs = {f"r{i}": record(uses=["Node.get_node"], callbacks=["_ready"]) for i in range(50)}
    docs["input"] = record(callbacks=["_ready", "_unhandled_input"])
    stats = stats_with(docs, ref)
    assert stats.member_specificity("Node.get_node") < 0.01
    code = "func _ready():\n    pass\n\nfunc _unhandled_input(event):\n    pass\n\nfunc _my_helper():\n    pass\n"
    values, basis = features(stats, code, docs["input"])
    assert [x["api"] for x in basis["shared_callbacks"]] == ["_ready()", "_unhandled_input()"]
    assert values["shared_callback"] > 0.7 and stats.member_specificity("_ready()") < 0.1
    # A function the class reference does not document is the author's own name, never a shared callback.
    values, basis = features(stats, code, record(callbacks=["_my_helper"]))
    assert values["shared_callback"] == 0 and not basis["shared_callbacks"]
    # The same API in a foreign context (a 3D navigation page for a 2D agent) counts only in api_code.
    code = "func f(agent: NavigationAgent2D):\n    return agent.get_next_path_position()\n"
    same = record(uses=["NavigationAgent2D.get_next_path_position"], classes=["NavigationAgent2D"])
    foreign = record(uses=["NavigationAgent2D.get_next_path_position"], classes=["NavigationAgent2D", "NavigationServer3D"])
    v_same, _ = features(stats, code, same)
    v_foreign, _ = features(stats, code, foreign)
    assert v_same["api_code"] == v_foreign["api_code"] > 0 and v_same["api_in_context"] == v_same["api_code"]
    assert v_foreign["incompatible"] == 0.5 and v_foreign["api_in_context"] == round(v_foreign["api_code"] * 0.5, 4)


def test_same_member_on_an_unrelated_class_is_a_contradiction():
    stats = stats_with({"plane": record(uses=["Plane.distance_to"])})
    code = "func f(a: Vector2, b: Vector2):\n    return a.distance_to(b)\n"
    _values, basis = features(stats, code, record(uses=["Plane.distance_to"]))
    assert basis["clashes"] == [{"record": "Plane.distance_to", "chunk": "Vector2.distance_to"}]
    assert contradictions(basis)[0].startswith("contradiction: the record uses Plane.distance_to")
    _, basis = features(stats, code, record(uses=["Vector2.distance_to", "Plane.distance_to"]))
    assert not basis["clashes"]  # the record shows the chunk's own member too


def test_a_shared_class_weighs_how_few_records_and_real_chunks_use_it():
    """A class most real scripts use (`SceneTree` behind every get_tree()) says little that a chunk and a guide share."""
    from godot_rag.eval.guide_fit import chunk_shares
    from godot_rag.eval.queries import Query

    ref = reference()
    docs = ({"a": record(classes=["RigidBody2D"]), "b": record(classes=["CharacterBody2D"])}
            | {f"r{i}": record() for i in range(20)})
    q = [Query(id=f"q{i}", chunk_text="extends RigidBody2D\n" if i < 1 else "extends CharacterBody2D\n",
               relevant_pages={}, relevant_mappings=[]) for i in range(10)]
    share = chunk_shares(q, ref)
    assert share["RigidBody2D"] == 0.1 and share["CharacterBody2D"] == 0.9
    stats = stats_with(docs, ref, share)
    assert stats.class_specificity("CharacterBody2D") == 0.0  # most real chunks use it
    assert stats.class_specificity("RigidBody2D") == round(stats._idf(1) * (1 - 0.1 / 0.25), 4) > 0
    rare = stats_with(docs, ref, {"RigidBody2D": 0.05})
    assert rare.class_specificity("RigidBody2D") == round(rare._idf(1) * 0.8, 4) > 0


def test_class_compatibility_comes_from_the_inheritance():
    stats = stats_with({})
    assert stats.compatible("CharacterBody2D", "RigidBody2D")  # siblings under PhysicsBody2D
    assert stats.compatible("CharacterBody2D", "PhysicsBody2D")  # an ancestor
    assert not stats.compatible("NavigationAgent2D", "Widget3")  # only Node in common: a hub, no family
    assert stats.generic("Node") and not stats.generic("PhysicsBody2D")
    code = "func f(agent: NavigationAgent2D):\n    return agent.get_next_path_position()\n"
    values, basis = features(stats, code, record(uses=["NavigationServer3D.map_get_path"], classes=["NavigationServer3D"]))
    assert values["incompatible"] == 1.0
    assert basis["rivals"] == ["NavigationServer3D vs NavigationAgent2D"] and not contradictions(basis)
    values, basis = features(stats, code, record(classes=["NavigationAgent2D"]))
    assert values["incompatible"] == 0.0 and not contradictions(basis)


def prop(t):
    return {"kind": "property", "type": t}


def worlds_reference() -> ClassReference:
    classes = {
        "Object": {"inherits": None, "page": "classes/class_object", "members": {}},
        "Node": {"inherits": "Object", "page": "classes/class_node", "members": {}},
        "Input": {"inherits": "Object", "page": "classes/class_input", "members": {"is_action_pressed": method("bool")}},
        "Node2D": {"inherits": "Node", "page": "classes/class_node2d",
                   "members": {"position": prop("Vector2"), "scale": prop("Vector2"), "visible": prop("bool")}},
        "Sprite2D": {"inherits": "Node2D", "page": "classes/class_sprite2d",
                     "members": {"offset": prop("Vector2"), "flip_h": prop("bool")}},
        "Node3D": {"inherits": "Node", "page": "classes/class_node3d",
                   "members": {"position": prop("Vector3"), "scale": prop("Vector3"), "visible": prop("bool")}},
        "CharacterBody3D": {"inherits": "Node3D", "page": "classes/class_characterbody3d",
                            "members": {"velocity": prop("Vector3"), "is_on_floor": method("bool")}},
        "Camera3D": {"inherits": "Node3D", "page": "classes/class_camera3d", "members": {"project_position": method("Vector3")}},
        "Vector2": {"inherits": None, "page": "classes/class_vector2", "members": {"x": prop("float")}},
        "Vector3": {"inherits": None, "page": "classes/class_vector3", "members": {"x": prop("float")}},
        "bool": {"inherits": None, "page": "classes/class_bool", "members": {}},
    }
    return ClassReference({"classes": classes})


def test_the_2d_and_3d_worlds_come_from_the_hierarchy_and_contradict():
    ref = worlds_reference()
    page3d = {"metadata": {"page_path": "tutorials/3d/using_transforms", "code_classes": ["CharacterBody3D"]}}
    docs = {"a": page3d, "b": {"metadata": {"page_path": "tutorials/3d/using_transforms", "code_classes": ["Input"]}}}
    stats = DocsApiStats.build(docs, ref)
    # Nodes by their family; a value type by the family whose members it types (bool types both: no world).
    assert stats.worlds["Sprite2D"] == "2D" and stats.worlds["CharacterBody3D"] == "3D"
    assert stats.worlds["Vector2"] == "2D" and stats.worlds["Vector3"] == "3D" and "bool" not in stats.worlds
    code2d = ("extends Sprite2D\n\nfunc _process(delta):\n"
              "    if Input.is_action_pressed(\"left\"):\n        position += Vector2.LEFT\n")
    _, basis = features(stats, code2d, record(classes=["CharacterBody3D", "Input"]))
    assert basis["worlds"]["chunk"] == "2D" and basis["worlds"]["record"] == "3D"
    assert contradictions(basis)[0].startswith("contradiction: the record is 3D (CharacterBody3D) where the chunk is 2D")
    # A chunk copied from the record is of the record's world, whatever its value types say.
    assert not contradictions(basis, copied=True)
    # A record that shows both worlds, or writes a Vector3 without a 3D node, is of no one world.
    _, basis = features(stats, code2d, record(classes=["CharacterBody3D", "Sprite2D"]))
    assert basis["worlds"] is None and not contradictions(basis)
    _, basis = features(stats, code2d, record(classes=["Vector3"]))
    assert basis["worlds"] is None
    # A record that names no node at all is of its page's world (`# On CharacterBody3D.` above its code).
    _, basis = features(stats, code2d, docs["b"])
    assert basis["worlds"]["record"] == "3D" and basis["worlds"]["record_classes"] == ["CharacterBody3D"]
    # The chunk's nodes decide its world: a 3D script that reads a mouse Vector2 stays 3D.
    code3d = "extends Camera3D\n\nfunc f(p: Vector2):\n    return project_position(p, 1.0)\n"
    _, basis = features(stats, code3d, record(classes=["Sprite2D"]))
    assert basis["worlds"]["chunk"] == "3D" and basis["worlds"]["record"] == "2D"


def test_a_copy_uses_each_record_line_once():
    """Four chunk lines of one shape are not four lines copied from one such line of a record."""
    chunk = "\n".join(f"var _flag_{i} : bool = false" for i in range(6))
    code = "var _enabled : bool = false\nfunc f():\n    pass\n"
    names = frozenset(f"_flag_{i}" for i in range(6))
    assert clone_match(chunk, code, names)[0] == 1.0
    assert abs(clone_match(chunk, code, names, one_to_one=True)[0] - 1 / 6) < 1e-9
    assert copied_share(chunk, code, CopyNames(names)) == 0.0  # one line that keeps only the API (`bool`) is no copy
    three = code + code.replace("_enabled", "_other") + code.replace("_enabled", "_third")
    assert copied_share(chunk, three, CopyNames(names)) == 0.5


def test_a_short_copy_keeps_the_authors_names():
    """A handler's signature and one call of the API match any page's function that makes the same call on a
    name of its own: fewer than three lines are a copy only when they keep the author's names or a string."""
    chunk = "func _on_text_edit_text_changed() -> void:\n\tresults.clear()\n"
    page = "func parse_source_geometry() -> void:\n    source_geometry.clear()\n    var root_node: Node3D = self\n"
    names = frozenset({"_on_text_edit_text_changed", "results"})
    assert clone_match(chunk, page, names, one_to_one=True)[0] == 1.0
    assert copied_shares(chunk, page, CopyNames(names)) == (0.0, 1.0)
    longer = chunk + "\tresults.append(1)\n"
    longer_page = page.replace("var root_node: Node3D = self", "source_geometry.append(1)")
    assert copied_share(longer, longer_page, CopyNames(names)) == 1.0
    exported = "@export var min_speed = 10.0\n@export var max_speed = 18.0\n"
    page = "extends CharacterBody3D\n\n" + exported + "\nfunc _ready():\n    pass\n"
    assert copied_share(exported, page, CopyNames(frozenset({"min_speed", "max_speed"}))) == 1.0


def test_a_name_only_hub_classes_have_anchors_no_copy():
    """`if x:` / `x.free()` four times is the frame of any cleanup: an XR manager's as much as a physics test's.
    `free` (Object's) and `get_node` (Node's) are every script's, so a copy that keeps only them keeps nothing of its
    own; a name a class outside the hubs has (`move_and_slide`) still anchors one."""
    ref = reference()
    ref.classes["Object"]["members"]["free"] = method()
    stats = stats_with({}, ref)
    assert {"free", "get_node", "connect"} <= stats.hub_names
    assert not {"move_and_slide", "distance_to", "Node"} & stats.hub_names
    chunk = "".join(f"\tif _template_{i}:\n\t\t_template_{i}.free()\n" for i in range(4))
    page = ("func _remove(tracker):\n\tif spatial_anchor_scene:\n\t\tnew_scene.free()\n\tif plane_scene:\n\t\t"
            "plane_node.free()\n\tif marker_scene:\n\t\tmarker_node.free()\n\tif other_scene:\n\t\tother_node.free()\n")
    names = frozenset(f"_template_{i}" for i in range(4))
    assert copied_share(chunk, page, CopyNames(names)) == 1.0  # by its frame and `free` alone, it looked like a copy
    assert copied_share(chunk, page, CopyNames(names, hub_names=stats.hub_names)) == 0.0
    moved = chunk.replace(".free()", ".move_and_slide()")
    assert copied_share(moved, page.replace(".free()", ".move_and_slide()"), CopyNames(names, hub_names=stats.hub_names)) == 1.0


def test_a_copy_keeps_the_records_api():
    """A chunk name renamed to a name of the Godot API the record calls is no copy: the lines differ in the API
    they use. A record's own names (what its code declares) rename as the chunk's do."""
    stats = stats_with({})
    chunk = "func _ready():\n    menu.add_item(OPTION_A)\n    menu.add_item(OPTION_B)\n"
    names = frozenset({"menu", "add_item", "OPTION_A", "OPTION_B"})
    calls_api = "func _ready():\n    body.move_and_slide(speed)\n    body.get_node(path)\n"
    api = stats.code_api_names(calls_api, frozenset())
    assert api == {"_ready", "move_and_slide", "get_node"}
    def share(chunk, code, names, **kw):
        return clone_match(chunk, code, names, one_to_one=True, **kw)[0]

    assert share(chunk, calls_api, names) == 1.0  # by shape alone, `menu.add_item(A)` is `body.get_node(path)`
    assert abs(share(chunk, calls_api, names, record_api=api) - 5 / 17) < 1e-9  # only `func _ready ( ) :` is copied
    assert copied_share(chunk, calls_api, CopyNames(names)) == 0.0  # and a copy of a signature and renamed names keeps nothing
    # Godot 3 code copies a page that writes the Godot 4 name the converter gives its class.
    godot3 = "func _ready():\n    var b = KinematicBody2D.new()\n    b.move_and_slide()\n"
    page = "func _ready():\n    var b = CharacterBody2D.new()\n    b.move_and_slide()\n"
    api = stats.code_api_names(page, frozenset({"b"}))
    assert "CharacterBody2D" in api and copied_share(godot3, page, CopyNames(frozenset({"KinematicBody2D"}), api_names=api)) < 0.6
    assert copied_share(godot3, page, CopyNames(frozenset({"KinematicBody2D"}), api_names=api,
                                              renames={"KinematicBody2D": frozenset({"CharacterBody2D"})})) == 1.0
    own = "func _ready():\n    items.push_entry(FIRST)\n    items.push_entry(SECOND)\n"
    declared = frozenset({"items", "push_entry", "FIRST", "SECOND"})
    assert share(chunk, own, names, record_api=stats.code_api_names(own, declared)) == 1.0


def test_a_copy_keeps_something_of_the_chunk_as_it_is():
    """Lines that match only through their frame (a signature, keywords, the author's names renamed) are no copy:
    `func _ready() -> void:` calling a function of the author's own matches the `_ready` of any page whose code
    calls one of its own. A copy keeps a name of the API, or a string, as it is."""
    stats = stats_with({})
    chunk = "func _ready() -> void:\n\t_tween()\n\t_fade()\n"
    page = "func _ready() -> void:\n\tactor_setup()\n\tactor_show()\n"
    api = stats.code_api_names(page, frozenset({"actor_setup", "actor_show"}))
    assert clone_match(chunk, page, frozenset({"_tween", "_fade"}), one_to_one=True, record_api=api)[0] == 1.0
    assert copied_shares(chunk, page, CopyNames(frozenset({"_tween", "_fade"}), api_names=api)) == (0.0, 1.0)
    assert copied_share(chunk, page, CopyNames(frozenset({"_tween", "_fade"}), api_names=api)) == 0.0
    # The same frame with the API kept: `hit.emit()` and `queue_free()` are what the chunk copies.
    died = "signal hit\n\nfunc die():\n\thit.emit()\n\tqueue_free()\n"
    page = "signal died\n\nfunc kill():\n\tdied.emit()\n\tqueue_free()\n"
    assert copied_share(died, page, CopyNames(frozenset({"hit", "die"}))) == 1.0
    # A string kept as it is anchors a copy too.
    logged = "func _on_crash():\n\t_log(\"Program crashed with signal\")\n\t_log(\"Exit\")\n"
    page = "func _check():\n\tprint_it(\"Program crashed with signal\")\n\tprint_it(\"Exit\")\n"
    assert copied_share(logged, page, CopyNames(frozenset({"_on_crash", "_log"}))) > 0
    # The author's names kept as they are anchor a copy of the page's own function; renamed, they do not.
    own = "func _find_other(path):\n\tfor p in peers:\n\t\tif p != path:\n\t\t\treturn p\n"
    names = frozenset({"_find_other", "path", "p", "peers"})
    assert copied_share(own, own, CopyNames(names)) == 1.0
    renamed = own.replace("peers", "others").replace("path", "mine").replace("p ", "q ").replace("p:", "q:")
    assert copied_shares(own, renamed, CopyNames(names)) == (0.0, 1.0)


def test_a_copy_of_the_frame_alone_is_left_to_the_model():
    """The verdict on a guide: a page whose code matches the chunk's lines only through their frame is not accepted
    by fact; its trace says so (`copy_unanchored`) and the model decides. The same page's own code, copied with
    its names, is accepted by fact."""
    from godot_rag.retrieve.engine.types import Candidate
    from godot_rag.retrieve.evidence.guide_decision import GuideInput, decide_guide
    from godot_rag.retrieve.recall.codematch import renameable_names

    stats = stats_with({})
    never = GuideModel.from_dict({"weights": {f: 0.0 for f in FEATURES}, "bias": -10.0, "threshold": 0.5})
    code = "func _ready() -> void:\n\tactor_setup()\n\tactor_show()\n"
    page = (record(declares=["actor_setup", "actor_show"], callbacks=["_ready"])
            | {"code_blocks": [{"language": "gdscript", "code": code}]})
    c = Candidate.of_record("docs_chunks", "tutorials/nav#1", page, 1.0, 1, "bm25")

    def verdict(chunk):
        facts = parse_chunk(chunk)
        res = resolve_uses(facts, stats.ref)
        return decide_guide(never, stats, GuideInput(res, facts, c, 0.0, 0.5, renameable_names(facts, stats.ref)))

    out, reasons = verdict("func _ready() -> void:\n\t_tween()\n\t_fade()\n")
    assert not out["accepted"] and out.get("copy_unanchored") and not out.get("copied_code") and reasons
    out, reasons = verdict(code)
    assert out["accepted"] and out.get("copied_code") and not reasons


def test_a_list_of_classes_shares_none_of_them():
    """The class index names every node, and a build-size page lists the 30 GUI classes a build flag disables: a
    chunk that uses several of them shares no class with such a list. A record whose prose names a topic's few
    classes (up to the 15 of "Packed arrays") shares those."""
    stats = stats_with({f"r{i}": record() for i in range(3)})
    code = "extends CharacterBody2D\n\nfunc _physics_process(delta):\n    move_and_slide()\n"
    listed = ["CharacterBody2D", "RigidBody2D", "PhysicsBody2D", *[f"Widget{i}" for i in range(24)],
              "Plane", "Vector2", "NavigationAgent2D"]
    assert len(listed) == 30
    for names in (listed, listed[:16]):
        values, basis = features(stats, code, record(mentions=names))
        assert basis["shared_classes"] == [] and values["shared_class"] == 0.0
    for names in (listed[:3], listed[:15]):
        values, basis = features(stats, code, record(mentions=names))
        assert basis["shared_classes"] == ["CharacterBody2D"] and values["shared_class"] > 0


def test_a_page_of_a_feature_the_chunk_does_not_use_is_a_contradiction():
    """A docs section with classes of its own (the records that name them are nearly all there: XR's) is a
    feature; its pages are no evidence for a chunk that uses none of those classes, whatever API they share."""
    ref = reference()
    xr = ["XRServer", "XROrigin3D", "XRCamera3D", "XRController3D", "XRInterface"]
    for c in xr:
        ref.classes[c] = {"inherits": "Object", "page": f"classes/class_{c.lower()}", "members": {}}

    def on(page, classes):
        rec = record(classes=classes)
        rec["metadata"]["page_path"] = page
        return rec

    docs = {f"xr{i}": on("tutorials/xr/room_scale", xr) for i in range(6)}
    docs["phys"] = on("tutorials/physics/bodies", ["RigidBody2D", "XRServer"])
    docs |= {f"body{i}": on(f"tutorials/{s}/bodies", ["RigidBody2D"]) for i, s in enumerate(["2d", "physics", "math"] * 2)}
    stats = stats_with(docs, ref)
    # XRServer, named once on a physics page too, is still XR's (6 of 7), and the most named comes first;
    # RigidBody2D is named across sections.
    assert stats.section_classes == {"tutorials/xr": ["XRServer", *sorted(c for c in xr if c != "XRServer")]}
    platformer = "extends RigidBody2D\n\nfunc _integrate_forces(state):\n    pass\n"
    _, basis = features(stats, platformer, docs["xr0"])
    assert basis["foreign_section"]["section"] == "tutorials/xr"
    assert contradictions(basis)[0].startswith("contradiction: the record is of tutorials/xr, a feature whose own classes")
    assert not contradictions(basis, copied=True)  # the chunk copies the page's code: that settles it
    _, basis = features(stats, "extends XROrigin3D\n\nfunc _ready():\n    pass\n", docs["xr0"])
    assert basis["foreign_section"] is None and not contradictions(basis)
    _, basis = features(stats, platformer, docs["body0"])
    assert basis["foreign_section"] is None
    # The chunk of an XR project's script that names no XR class itself: its project says what it is.
    facts = parse_chunk(platformer)
    res = resolve_uses(facts, stats.ref)
    side = chunk_side(stats, res, facts, project=frozenset({"XROrigin3D", "Node3D"}))
    _, basis = guide_features(stats, res, facts, GuideRecord(docs["xr0"], clone=0.0, bm25_rank=1, cosine=0.5, hub_rate=0.0),
                              side=side)
    assert basis["foreign_section"] is None


def test_a_member_of_the_codes_own_class_is_no_untyped_use():
    """`.new()` on a capitalised name that no Godot class has is the project's own constructor: it says nothing
    of which Godot class an untyped receiver is (`PandoraNanoIDGenerator.new()` is no `OpenXR...List.new`)."""
    code = ("var a := MyGenerator.new(10)\nvar b := Vector2.ZERO.x\n$Player.jump()\n%Menu.show()\n"
            "if event.button_index:\n\tpass\nvar u := SpeedUnit.FAST\n")
    assert untyped_members(code, reference()) == {"ZERO", "x", "jump", "show", "button_index"}


def test_the_most_specific_foreign_class_is_a_feature():
    """A record about a class that fits none of the chunk's counts by how specific that class is, not only by
    the share of such classes (one stray `Vector2` and one `XRCamera3D` are not the same)."""
    docs = {f"r{i}": record(classes=["NavigationAgent2D"]) for i in range(10)} | {"nav3d": record(classes=["NavigationServer3D"])}
    stats = stats_with(docs)
    code = "func f(agent: NavigationAgent2D):\n    return agent.get_next_path_position()\n"
    values, basis = features(stats, code, record(classes=["NavigationAgent2D", "NavigationServer3D"]))
    assert basis["foreign_class"] == {"class": "NavigationServer3D", "specificity": stats.class_specificity("NavigationServer3D")}
    assert values["foreign_class"] == stats.class_specificity("NavigationServer3D") > 0
    values, basis = features(stats, code, record(classes=["NavigationAgent2D"]))
    assert values["foreign_class"] == 0.0 and basis["foreign_class"] is None
    from godot_rag.eval.guide_fit import SIGNS
    assert SIGNS["foreign_class"] == -1  # fitted only against a guide


def test_a_godot3_class_the_chunk_writes_stands_for_its_godot4_name():
    """Godot 3 code (`KinematicBody2D`) is about the class Godot 4 renamed it to: a guide on `CharacterBody2D`
    is not foreign to it (the converter's class renames, as the validator reads them)."""
    from godot_rag.retrieve.evidence.chunk_side import chunk_side

    docs = {f"r{i}": record(classes=["NavigationAgent2D"]) for i in range(5)} | {"body": record(classes=["CharacterBody2D"])}
    stats = stats_with(docs)
    code = "func f(agent: NavigationAgent2D):\n    var body = KinematicBody2D.new()\n    return agent.get_next_path_position()\n"
    facts = parse_chunk(code)
    res = resolve_uses(facts, stats.ref)
    args = {"clone": 0.0, "bm25_rank": 1, "cosine": 0.5, "hub_rate": 0.0}
    values, _ = guide_features(stats, res, facts, GuideRecord(docs["body"], **args), side=chunk_side(stats, res, facts))
    assert values["foreign_class"] > 0 and values["incompatible"] == 1.0
    side = chunk_side(stats, res, facts, {"KinematicBody2D": "CharacterBody2D", "Spatial": "Node3D"})
    assert "CharacterBody2D" in side.classes and "Node3D" not in side.classes  # only what the chunk writes
    values, _ = guide_features(stats, res, facts, GuideRecord(docs["body"], **args), side=side)
    assert values["foreign_class"] == 0.0 and values["incompatible"] == 0.0


def test_a_guide_whose_code_is_cpp_is_a_contradiction():
    """C++ (the engine's `BIND_CONSTANT(MODE_FIRST);`, a GDExtension's node) shares names with GDScript, not its
    meaning: for a script, a C++ record is no evidence."""
    stats = stats_with({})
    code = "enum {MODE_FIRST, MODE_SECOND}\n"
    cpp = record() | {"code_blocks": [{"language": "cpp", "code": "BIND_CONSTANT(MODE_FIRST);"}]}
    _, basis = features(stats, code, cpp)
    assert basis["native_code"] == ["cpp"]
    assert contradictions(basis) == ["contradiction: the record's code is cpp (the engine's or a GDExtension's), not a script"]
    both = record() | {"code_blocks": [{"language": "cpp", "code": "x"}, {"language": "gdscript", "code": "y"}]}
    _, basis = features(stats, code, both)
    assert basis["native_code"] is None and basis["native_page"] is None and not contradictions(basis)


def test_a_guide_of_a_page_whose_code_is_c_is_a_contradiction():
    """A page whose program code is C or C++ (a GDExtension in C, a module in C++) is about the engine's or an
    extension's code; its one GDScript block, a script calling what the page builds, is no evidence for a
    script either. A page that shows C++ beside its GDScript stays a script's page."""
    def rec(page, lang):
        return record() | {"metadata": record()["metadata"] | {"page_path": page},
                           "code_blocks": [{"language": lang, "code": "x"}]}

    docs = {f"c{i}": rec("engine/gdextension_c_example", "c") for i in range(9)}
    docs["gd"] = rec("engine/gdextension_c_example", "gdscript")
    docs |= {f"t{i}": rec("tutorials/threads", "cpp" if i < 7 else "gdscript") for i in range(10)}
    docs["text"] = rec("engine/gdextension_c_example", "shell")  # neither a script nor native: not counted
    stats = stats_with(docs)
    assert stats.native_pages == {"engine/gdextension_c_example": ["c"]}
    code = "func _ready():\n    var x = ExampleClass.new()\n"
    _, basis = features(stats, code, docs["gd"])
    assert basis["native_page"] == {"page": "engine/gdextension_c_example", "languages": ["c"]}
    assert contradictions(basis) == ["contradiction: the record is of engine/gdextension_c_example, whose code is c "
                                     "(the engine's or a GDExtension's), not a script's"]
    assert contradictions(basis, copied=True) == []
    _, basis = features(stats, code, docs["t9"])
    assert basis["native_page"] is None and not contradictions(basis)


def test_model_decision_is_readable_arithmetic():
    model = GuideModel.from_dict({"weights": {f: 1.0 for f in FEATURES} | {"hub_rate": -4.0}, "bias": -2.0, "threshold": 0.5})
    values = {f: 0.0 for f in FEATURES} | {"api_code": 3.0, "hub_rate": 0.5}
    out = model.decide(values)
    assert out["contributions"]["api_code"] == 3.0 and out["contributions"]["hub_rate"] == -2.0
    assert out["logit"] == round(-2.0 + 3.0 - 2.0, 4) and not out["accepted"]
    assert model.decide(values | {"hub_rate": 0.0})["accepted"]


def test_logistic_fit_and_threshold_for_precision():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] + 0.2 * rng.normal(size=400) > 0.5).astype(float)
    w, b = fit_logistic(x, y, l2=0.1)
    assert w[0] > 2 and w[0] > 5 * abs(w[1]) and b < 0
    p = 1 / (1 + np.exp(-(x @ w + b)))
    grades = np.where(y == 1, 2, 0)
    points = curve(p, grades)
    chosen = choose_threshold(points, 0.9, 0.1)
    assert chosen["precision"] >= 0.9 and chosen["share0"] <= 0.1
    assert all(c["precision"] < 0.9 or c["threshold"] >= chosen["threshold"]
               for c in points if c["share0"] <= 0.1 and c["accepted"] >= 5)


def test_the_shipped_guide_model_names_its_data_and_fit_guides_reads_it_by_default():
    """store/guide_model.json records the files it was fitted on (the shipped pool, then data/grades/ files) and their
    digest: `fit-guides` without --judged reads exactly those, in that order, and they still hash to the digest."""
    import json

    from godot_rag.eval.guide_fit import GRADES_DIR, SHIPPED_POOL, data_digest, shipped_judged, shown_path
    from godot_rag.eval.judged import is_judged_file, read_judged
    from godot_rag.store import guide_model

    model = json.loads(guide_model.SHIPPED.read_text())
    default = shipped_judged()
    assert model["fitted_on"]["judged"] == ", ".join(shown_path(p) for p in default)
    assert all(p.parent == GRADES_DIR for p in default[1:]) and all(p.is_file() for p in default[1:])
    grades = sorted(GRADES_DIR.glob("docs.*.jsonl"))  # the docs grade files (findings.* grade the API check)
    assert len(grades) >= 40 and all(is_judged_file(p) and read_judged(p) for p in grades)
    provenance = (GRADES_DIR / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in grades if f"`{p.name}`" not in provenance] == []  # every grade file has its provenance row
    if SHIPPED_POOL.is_file():  # ../shared beside the checkout
        assert data_digest(default) == model["data_digest"]


def test_evidence_features_never_count_against_a_guide():
    """A near-copy below the copy share must not weigh against a record: `clone`, like the shared API, the
    BM25 rank and the cosine, is fitted with a weight >= 0 (a negative fit is dropped and the rest refitted)."""
    rng = np.random.default_rng(1)
    X = np.zeros((300, len(FEATURES)))
    X[:, FEATURES.index("cosine")] = rng.uniform(0, 1, 300)
    X[:, FEATURES.index("clone")] = rng.uniform(0, 1, 300)
    y = (X[:, FEATURES.index("cosine")] - X[:, FEATURES.index("clone")] + 0.1 * rng.normal(size=300) > 0).astype(float)
    w, _ = fit_logistic(X, y, 0.1)
    assert w[FEATURES.index("clone")] < 0  # unconstrained, the noise fits against the evidence
    w, _ = fit_signed(X, y, 0.1)
    assert w[FEATURES.index("clone")] == 0 and w[FEATURES.index("cosine")] > 0


def test_judged_metrics_per_group():
    grades = {("q1", "a"): 2, ("q1", "b"): 0, ("q1", "c"): 2, ("q2", "d"): 1, ("q2", "e"): 2}
    m = judged_metrics({"q1": {"guides": ["a", "b", "x"], "api_reference": ["c"]}, "q2": {"guides": ["d"]}}, grades)
    assert m["guides"] == {"accepted": 4, "graded": 3, "ungraded": 1, "share2": round(1 / 3, 4), "share0": round(1 / 3, 4)}
    assert m["api_reference"]["share2"] == 1.0
    assert m["chunks_with_grade2"] == 0.5
    assert m["pool_grade2_recall"] == 0.5  # q1: both of its grade-2 records; q2: none of one


def test_a_docs_record_only_bm25_found_gets_its_cosine_read(retriever):
    """The guide model reads every docs candidate's cosine: one the embedding list did not bring gets its
    cosine read from the database (not a 0 that weighs against it)."""
    from conftest import REFERENCE_CHUNK
    from godot_rag.retrieve.engine.config import RetrieveConfig
    from godot_rag.store import queries

    res = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10, candidates=2))
    seen = [c for c in res.results + res.rejected + res.cut if c.table == "docs_chunks" and c.info("validate") is not None]
    unlisted = [c for c in seen if c.info("embedding") is None]
    assert unlisted, "with 2 embedding candidates, BM25 brings records the embedding list did not"
    vector = retriever.embedder.encode([REFERENCE_CHUNK])[0]
    want = queries.cosines(retriever.conn(), "docs_chunks", vector, [c.id for c in unlisted])
    for c in unlisted:
        assert abs(c.info("validate").cosine - want[c.id]) < 1e-4
        m = c.info("validate").model
        if m is not None:
            assert abs(m["features"]["cosine"] - round(want[c.id], 4)) < 1e-3
    for c in seen:
        if (emb := c.info("embedding")) is not None:
            assert c.info("validate").cosine == emb.cosine


def test_a_guide_that_shares_nothing_with_a_chunk_that_uses_api_is_rejected():
    """The model may rate a guide high on its text's likeness alone (a BM25 rank 1, a close vector). For a chunk
    that uses API, a guide sharing none of it, nor a class or a callback, is about something else: rejected
    (`nothing_shared`) whatever P says. A chunk that uses no API (`#region`, its own names), and Godot 3 code
    (whose API the page that ports it writes under Godot 4 names), are left to the model."""
    from godot_rag.retrieve.engine.types import Candidate
    from godot_rag.retrieve.evidence.guide_decision import GuideInput, decide_guide
    from godot_rag.retrieve.recall.codematch import renameable_names

    stats = stats_with({f"r{i}": record() for i in range(3)})
    always = GuideModel.from_dict({"weights": {f: 0.0 for f in FEATURES}, "bias": 10.0, "threshold": 0.5})
    page = record(uses=["NavigationServer3D.map_get_path"]) | {"code_blocks": [{"language": "gdscript", "code": "x = 1\n"}]}
    c = Candidate.of_record("docs_chunks", "tutorials/page#1", page, 1.0, 1, "bm25")

    def verdict(chunk, **kw):
        facts = parse_chunk(chunk)
        res = resolve_uses(facts, stats.ref)
        return decide_guide(always, stats, GuideInput(res, facts, c, 0.0, 0.5, renameable_names(facts, stats.ref), **kw))

    uses_api = "func _physics_process(delta):\n\tvar body: CharacterBody2D = get_parent()\n\tbody.move_and_slide()\n"
    out, reasons = verdict(uses_api)
    assert not out["accepted"] and out["nothing_shared"] and out["p"] > 0.99
    assert reasons and reasons[-1].startswith("nothing shared")
    out, reasons = verdict(uses_api, godot3=True)
    assert out["accepted"] and not reasons
    out, reasons = verdict("#region Totals\nvar total := 0\n#endregion\n")
    assert out["accepted"] and not out.get("nothing_shared")
    shares = record(uses=["CharacterBody2D.move_and_slide"]) | {"code_blocks": page["code_blocks"]}
    c = Candidate.of_record("docs_chunks", "tutorials/page#2", shares, 1.0, 1, "bm25")
    out, reasons = verdict(uses_api)
    assert out["accepted"] and not out.get("nothing_shared")


def test_a_guide_that_shares_only_generic_api_is_rejected():
    """What a guide shares is weighed by how specific it is. When even the most specific thing it shares (`_ready`,
    overridden by most scripts) weighs less than `min_specificity`, it shares only generic API: rejected
    (`generic_only`, naming that thing) whatever P says. A guide sharing a specific member stays, and 0 turns it off."""
    from godot_rag.retrieve.engine.types import Candidate
    from godot_rag.retrieve.evidence.guide_decision import GuideInput, decide_guide
    from godot_rag.retrieve.recall.codematch import renameable_names

    stats = stats_with({f"r{i}": record() for i in range(3)}, share={"_ready()": 0.2})
    always = GuideModel.from_dict({"weights": {f: 0.0 for f in FEATURES}, "bias": 10.0, "threshold": 0.5})
    chunk = "func _ready():\n\tvar body: CharacterBody2D = get_parent()\n\tbody.move_and_slide()\n"
    facts = parse_chunk(chunk)
    res = resolve_uses(facts, stats.ref)
    blocks = {"code_blocks": [{"language": "gdscript", "code": "x = 1\n"}]}

    def verdict(rec, **kw):
        c = Candidate.of_record("docs_chunks", "tutorials/page#1", rec | blocks, 1.0, 1, "bm25")
        return decide_guide(always, stats, GuideInput(res, facts, c, 0.0, 0.5, renameable_names(facts, stats.ref), **kw))

    ready_only = record(callbacks=["_ready"])
    assert stats.member_specificity("_ready()") < 0.5
    out, reasons = verdict(ready_only, min_specificity=0.5)
    assert not out["accepted"] and out["generic_only"] == {"most_specific": "_ready()",
                                                           "specificity": stats.member_specificity("_ready()")}
    assert reasons == [reasons[-1]] and reasons[-1].startswith("generic only") and "_ready()" in reasons[-1]
    assert verdict(ready_only)[0]["accepted"]  # 0: off
    assert verdict(ready_only, min_specificity=0.5, godot3=True)[0]["accepted"]
    out, reasons = verdict(record(uses=["CharacterBody2D.move_and_slide"], callbacks=["_ready"]), min_specificity=0.5)
    assert out["accepted"] and not reasons


def test_the_validator_rejects_a_guide_that_repeats_one_retrieved_before_it(retriever, monkeypatch):
    """`same_evidence` runs in F's validator on Godot 4 code: with a model lenient enough to accept both records of
    the tutorial's page, the one that shows nothing the first does not show is rejected. Godot 3 code keeps both,
    and `--set same_evidence=false` turns it off."""
    import dataclasses

    from conftest import REFERENCE_CHUNK
    from godot_rag.retrieve.engine.config import RetrieveConfig

    model, stats = retriever.guide_model()
    lenient = dataclasses.replace(model, threshold=0.2)
    monkeypatch.setattr(retriever, "guide_model", lambda: (lenient, stats))
    first, second = "getting_started/demo/coding_the_player#000", "getting_started/demo/coding_the_player#001"

    def guides(chunk, **settings):
        res = retriever.retrieve(chunk, "F", RetrieveConfig(copy_source_share=0.0, learned_ranker=False, **settings))
        return ([c.id for c in res.by_table("docs_chunks") if c.group == "guides"],
                {c.id: c.info("validate") for c in res.rejected if c.table == "docs_chunks"})

    # Without the clamp line the second record shows only `Vector2.ZERO`, which the first shows too.
    head = REFERENCE_CHUNK.split("\n\tposition")[0] + "\n"
    assert guides(head, same_evidence=False)[0] == [first, second]
    kept, rejected = guides(head)
    assert kept == [first] and rejected[second].rules == ["same_evidence"] and rejected[second].repeats == first
    assert rejected[second].reasons == [f"shows nothing of the chunk that the record of its page {first}, retrieved "
                                        "before it, does not show too: the same evidence again"]
    # Godot 3 code (`yield` is gone in Godot 4): the pages are not compared.
    assert guides(head + "\tyield(get_tree(), \"idle_frame\")\n")[0] == [first, second]


def test_codematch_ranks_by_the_clone_bonus_and_shows_the_lines_it_matched():
    """The code-clone stage's info (built only when read) shows the chunk lines a record's code matches up to
    renaming, the share of the chunk's tokens they hold, and the score before and after the bonus."""
    from godot_rag.retrieve.engine.types import Candidate
    from godot_rag.retrieve.recall.codematch import apply_codematch

    chunk = "func _ready():\n\tvar timer := Timer.new()\n\ttimer.autostart = true\n\tadd_child(timer)\n"
    copy = {"content": "", "code_blocks": [{"language": "gdscript", "code": "var t = Timer.new()\nt.autostart = true\n"}]}
    other = {"content": "", "code_blocks": [{"language": "gdscript", "code": "print(1)\n"}]}
    out, matching = apply_codematch(chunk, [Candidate.of_record("docs_chunks", "other#000", other, 1.0, 1, "bm25"),
                                            Candidate.of_record("docs_chunks", "copy#000", copy, 0.9, 2, "bm25")], 0.5)
    assert [c.id for c in out] == ["copy#000", "other#000"] and matching == 1
    info = out[0].info("codematch")
    # 5 of the chunk's 22 tokens (lines of 3 tokens or more) sit in the one matching line.
    assert info.ratio == 0.2273 and info.matched_lines == ["timer . autostart = true"] and info.rank == 1
    assert info.score_before == 0.9 and info.score == round(out[0].score, 6) == round(0.9 * (1 + 0.5 * 5 / 22), 6)
    assert out[1].info("codematch").model_dump() == {"ratio": 0.0, "alpha": 0.5, "score_before": 1.0, "score": 1.0, "rank": 2,
                                                     "matched_lines": []}


def test_godot3_code_shares_with_a_guide_the_api_its_names_become():
    """`migrated_api`: each Godot 3 use an accepted api_mapping stands on becomes the Godot 4 member it was renamed
    to, resolved like a use: on the receiver's class, as a global, on the own class, or on the one class that has it.
    A guide that writes that member shares it with the Godot 3 chunk (traced as `migrated`); without the renames it
    shares nothing."""
    from godot_rag.retrieve.evidence.chunk_side import migrated_api

    ref = ClassReference({"classes": {
        "Object": {"inherits": None, "page": "classes/class_object", "members": {}},
        "Node": {"inherits": "Object", "page": "classes/class_node",
                 "members": {"NOTIFICATION_APPLICATION_FOCUS_IN": {"kind": "constant", "type": "int"}}},
        "ResourceLoader": {"inherits": "Object", "page": "classes/class_resourceloader",
                           "members": {"load_threaded_request": method("int")}},
        "SceneTree": {"inherits": "Object", "page": "classes/class_scenetree",
                      "members": {"change_scene_to_file": method("int")}},
        "@GlobalScope": {"inherits": None, "page": "classes/class_@globalscope", "members": {"deg_to_rad": method("float")}},
        "PackedVector2Array": {"inherits": None, "page": "classes/class_packedvector2array", "members": {}},
    }})
    chunk = ("extends Node\n\nfunc go(path, tree):\n\tvar loader = ResourceLoader.load_interactive(path)\n"
             "\tvar points = PoolVector2Array()\n"
             "\tvar a = deg2rad(90)\n\ttree.change_scene(path)\n\tif what == NOTIFICATION_WM_FOCUS_IN:\n\t\tpass\n")
    facts = parse_chunk(chunk)
    res = resolve_uses(facts, ref)

    def at(name):
        off = facts.text.index(name)
        return facts.line_of_offset(off), facts.col_of_offset(off)

    renames = [(s, t, *at(s)) for s, t in [("load_interactive", "load_threaded_request"), ("deg2rad", "deg_to_rad"),
                                            ("change_scene", "change_scene_to_file"),
                                            ("NOTIFICATION_WM_FOCUS_IN", "NOTIFICATION_APPLICATION_FOCUS_IN"),
                                            ("PoolVector2Array", "PackedVector2Array")]]
    assert migrated_api(ref, res, renames) == {
        "ResourceLoader.load_threaded_request": "load_interactive", "@GlobalScope.deg_to_rad": "deg2rad",
        "SceneTree.change_scene_to_file": "change_scene", "Node.NOTIFICATION_APPLICATION_FOCUS_IN": "NOTIFICATION_WM_FOCUS_IN"}
    stats = stats_with({f"r{i}": record() for i in range(20)} | {"a": record(uses=["ResourceLoader.load_threaded_request"])},
                       ref=ref)
    guide = record(uses=["ResourceLoader.load_threaded_request"], classes=["ResourceLoader"])
    side = chunk_side(stats, res, facts, migrated=migrated_api(ref, res, renames))
    assert "@GlobalScope.deg_to_rad" in side.globals and "@GlobalScope.deg_to_rad" in side.migrated
    values, basis = guide_features(stats, res, facts, GuideRecord(guide, clone=0.0, bm25_rank=1, cosine=0.5, hub_rate=0.0),
                                   side=side)
    assert values["api_code"] > 0 and basis["migrated"] == [
        {"api": "ResourceLoader.load_threaded_request", "written": "load_interactive"}]
    values, basis = guide_features(stats, res, facts, GuideRecord(guide, clone=0.0, bm25_rank=1, cosine=0.5, hub_rate=0.0))
    assert values["api_code"] == 0 and basis["migrated"] == []



def test_a_use_an_is_test_narrows_is_no_guide_evidence():
    """The resolver types a name where an `is` test holds (`narrowed`), which finds class-reference entries; the guide
    features leave such uses out on both sides (`if event is X:` is any input handler's frame): a record that writes
    `timer.start()` about Timer shares nothing with `if t is Timer: t.start()` through it, and a record's stored
    `code_uses` hold no narrowed use."""
    from godot_rag.gdscript.record_api import code_api

    ref = ClassReference({"classes": {
        "Object": {"inherits": None, "page": "classes/class_object", "members": {}},
        "Node": {"inherits": "Object", "page": "classes/class_node", "members": {}},
        "Timer": {"inherits": "Node", "page": "classes/class_timer", "members": {"start": method()}}}})
    narrowed = "func f(t):\n\tif t is Timer:\n\t\tt.start()\n"
    assert [(u.api, u.via) for u in resolve_uses(parse_chunk(narrowed), ref).uses] == [("Timer.start", "narrowed")]
    assert code_api(narrowed, ref)["code_uses"] == []
    assert code_api("func f(t: Timer):\n\tt.start()\n", ref)["code_uses"] == ["Timer.start"]
    stats = stats_with({f"r{i}": record() for i in range(20)} | {"a": record(uses=["Timer.start"])}, ref=ref)
    guide = record(classes=["Timer"]) | {"code_blocks": [{"language": "gdscript", "code": "func go(timer):\n\ttimer.start()\n"}]}
    values, basis = features(stats, narrowed, guide)
    assert values["api_code"] == 0 and basis["shared_api"] == []
    values, basis = features(stats, "func f(t: Timer):\n\tt.start()\n", guide)
    assert [e["api"] for e in basis["shared_api"]] == ["Timer.start"]


def test_a_construct_the_chunk_uses_that_a_guide_teaches_is_shared():
    """The GDScript reference is the language's class reference: its section on a construct the chunk uses
    (`enum` for "Constants / Enums", a variadic parameter for "Variadic functions") shares that construct, weighed
    by how few records hold it and how few real chunks use it. A page whose code merely holds an `enum` under a
    heading about something else teaches no enums; a construct most chunks use (`function_definition`) weighs 0."""
    from godot_rag.eval.guide_fit import chunk_shares
    from godot_rag.eval.queries import Query
    from godot_rag.gdscript.record_api import code_api
    from godot_rag.retrieve.evidence.docs_features import taught_constructs
    from godot_rag.retrieve.evidence.docs_stats import construct_key
    from godot_rag.retrieve.evidence.guide_decision import share_rule

    ref = reference()
    chunk = "enum State {IDLE, RUN}\nconst SPEED = 3\n\nfunc run(...args: Array) -> void:\n\tpass\n"
    facts = parse_chunk(chunk)
    assert {"enum_definition", "const_statement", "variadic_parameter", "function_definition"} <= facts.constructs
    enums_code = "enum Named {THING_1, THING_2}\nconst ANSWER = 42\n\nfunc f():\n\tpass\n"
    held = code_api(enums_code, ref)["code_constructs"]
    assert {"enum_definition", "const_statement", "function_definition"} <= set(held)

    def rec(path):
        return record() | {"section_path": path, "metadata": record()["metadata"] | {"code_constructs": held}}

    teaches, holds = rec(["GDScript reference", "Constants", "Enums"]), rec(["Your first game", "The player"])
    assert taught_constructs(teaches, {"code_constructs": held}) == {"enum_definition", "const_statement"}
    assert taught_constructs(holds, {"code_constructs": held}) == set()
    queries = [Query(id=f"q{i}", chunk_text="func f():\n\tpass\n" if i else chunk, relevant_pages={}, relevant_mappings=[])
               for i in range(40)]
    share = chunk_shares(queries, ref)
    assert share[construct_key("function_definition")] == 1.0 and share[construct_key("enum_definition")] == 0.025
    docs = {"teaches": teaches, "holds": holds} | {f"r{i}": record() for i in range(60)}
    stats = stats_with(docs, ref, share)
    assert stats.construct_specificity("function_definition") == 0.0
    assert stats.construct_specificity("enum_definition") == round(stats._idf(2) * (1 - 0.025 / 0.25), 4) > 0.5
    values, basis = features(stats, chunk, teaches)
    assert [e["construct"] for e in basis["shared_constructs"]] == ["const_statement", "enum_definition"]
    assert values["shared_construct"] == round(sum(e["specificity"] for e in basis["shared_constructs"]), 4) > 0
    res = resolve_uses(facts, ref)
    assert share_rule(stats, values, basis, chunk_side(stats, res, facts), res, 0.5) is None  # a specific construct is shared
    values, basis = features(stats, chunk, holds)
    assert values["shared_construct"] == 0.0 and basis["shared_constructs"] == []


def test_a_keyword_construct_is_named_with_what_it_modifies():
    """`static` on a function and on a variable are two constructs: "Static functions" teaches the one a static
    function uses, and "Static variables" (whose code holds a function too) does not."""
    from godot_rag.gdscript.record_api import code_api
    from godot_rag.retrieve.evidence.docs_features import construct_head, taught_constructs

    ref = reference()
    facts = parse_chunk("static func lookup(name: String) -> int:\n\tvar n := name.length()\n\treturn n\n")
    assert "function_definition/static_keyword" in facts.constructs and "static_keyword" not in facts.constructs
    assert construct_head("function_definition/static_keyword") == "static"
    # The static variables' section's code has a static function too: only the static variable is what it teaches.
    variables = code_api("static var count := 0\n\nstatic func add():\n\tcount += 1\n", ref)
    functions = code_api("static func add(a, b):\n\treturn a + b\n", ref)
    assert "variable_statement/static_keyword" in variables["code_constructs"]
    on_vars = record() | {"section_path": ["GDScript reference", "Variables", "Static variables"]}
    on_funcs = record() | {"section_path": ["GDScript reference", "Functions", "Static functions"]}
    def static(shared):
        return {c for c in shared if c.endswith("static_keyword")}

    assert static(taught_constructs(on_vars, variables)) == {"variable_statement/static_keyword"}

    assert static(facts.constructs & taught_constructs(on_vars, variables)) == set()
    assert static(facts.constructs & taught_constructs(on_funcs, functions)) == {"function_definition/static_keyword"}


def test_a_guide_the_model_accepts_on_a_construct_or_global_names_it_in_its_reason():
    """A guide shared through a construct or an annotation has no literal of the chunk's to quote: its reason names
    what it shares and the model's P, never an empty "direct evidence = "."""
    from godot_rag.retrieve.engine.decision import Decision
    from godot_rag.retrieve.evidence.decision import reason_of

    model = {"p": 0.65, "threshold": 0.4, "shared_api": [], "shared_globals": [{"api": "@GDScript.@tool", "specificity": 0.54}],
             "shared_callbacks": [], "shared_classes": [],
             "shared_constructs": [{"construct": "function_definition/static_keyword", "specificity": 0.76}]}
    decision = Decision(accepted=True, rule="guide_model", confidence=0.0, model=model)
    assert reason_of(decision) == ("guide model: P(direct) 0.65 >= 0.40, shared = @GDScript.@tool, "
                                   "function_definition/static_keyword")
    copied = decision.model_copy(update={"rule": "copied_code",
                                         "model": model | {"p": 0.2, "copied_code": True, "shared_api": None}})
    assert reason_of(copied) == ("the chunk copies the record's code; shared = @GDScript.@tool, "
                                 "function_definition/static_keyword")


def test_a_section_about_an_annotation_teaches_its_constructs_with_it():
    """"Abstract classes and methods" shows `class_name` under `@abstract`: a plain named class shares none of its
    constructs, an abstract one does, and "Registering named classes" (no annotation in its heading) teaches it to both."""
    from godot_rag.gdscript.record_api import code_api
    from godot_rag.retrieve.evidence.docs_features import heading_annotations

    annotation = {"kind": "annotation", "type": ""}
    ref = ClassReference({"classes": reference().classes | {
        "@GDScript": {"inherits": None, "page": "classes/class_@gdscript", "members": {"@abstract": annotation}},
        "RefCounted": {"inherits": "Object", "page": "classes/class_refcounted", "members": {}}}})
    code = "@abstract\nclass_name Shape\nextends RefCounted\n\n@abstract func area() -> float\n"
    api = code_api(code, ref)
    assert "@GDScript.@abstract" in api["code_globals"] and "class_name_statement" in api["code_constructs"]
    abstract = record() | {"section_path": ["GDScript reference", "Classes", "Abstract classes and methods"],
                           "content": f"```gdscript\n{code}```", "metadata": record()["metadata"] | api}
    assert heading_annotations(abstract, api) == {"abstract"}
    named = record() | {"section_path": ["GDScript reference", "Classes", "Registering named classes"],
                        "content": f"```gdscript\n{code}```", "metadata": record()["metadata"] | api}
    assert heading_annotations(named, api) == set()
    docs = {"abstract": abstract, "named": named} | {f"r{i}": record() for i in range(60)}
    stats = stats_with(docs, ref, {})
    plain = "class_name Square\nextends RefCounted\n\nvar side := 1.0\n"
    _, basis = features(stats, plain, abstract)
    assert basis["shared_constructs"] == []
    _, basis = features(stats, "@abstract\n" + plain, abstract)
    assert "class_name_statement" in [e["construct"] for e in basis["shared_constructs"]]
    _, basis = features(stats, plain, named)
    assert "class_name_statement" in [e["construct"] for e in basis["shared_constructs"]]


def test_an_untyped_use_is_not_the_same_api_as_a_name_the_other_side_resolves_on_another_lineage():
    """A chunk that reads `.get_ready_state()` on a typed `WebSocketPeer` and on an untyped name shares nothing with
    a WebRTC record that calls `get_ready_state()` on a `WebRTCDataChannel`: the same name on two classes of the
    `PacketPeer` family. The same record shares the member with a chunk that types nothing else."""
    ref = reference()
    ref.classes["PacketPeer"] = {"inherits": "Object", "page": "classes/class_packetpeer", "members": {}}
    for cls in ("WebSocketPeer", "WebRTCDataChannel"):
        ref.classes[cls] = {"inherits": "PacketPeer", "page": f"classes/class_{cls.lower()}",
                            "members": {"get_ready_state": method("int"), "poll": method()}}
    rec = record(uses=["WebRTCDataChannel.get_ready_state"], classes=["WebRTCDataChannel", "PacketPeer"])
    rec["code_blocks"] = [{"code": "var channel: WebRTCDataChannel\nchannel.get_ready_state()\n", "language": "gdscript"}]
    stats = stats_with({"webrtc": rec, "other": record()}, ref)
    typed = ("func poll(peers, sock: WebSocketPeer, p: PacketPeer):\n\tsock.get_ready_state()\n"
             "\tfor q in peers:\n\t\tq.get_ready_state()\n")
    _, basis = features(stats, typed, rec)
    assert basis["shared_api"] == []
    untyped = "func poll(peers, p: PacketPeer):\n\tfor q in peers:\n\t\tq.get_ready_state()\n"
    _, basis = features(stats, untyped, rec)
    assert [x["api"] for x in basis["shared_api"]] == ["WebRTCDataChannel.get_ready_state"]
