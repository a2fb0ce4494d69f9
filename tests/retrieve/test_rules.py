"""Every named rule of the validator, one row each: the version and occurrence rules (which decide whether an
occurrence of an api_mapping record's Godot 3 name is Godot 3 use), and the docs-evidence, reject and guide rules
(which decide whether a docs record is direct evidence for the chunk). Each row is a small, realistic GDScript chunk
against a real record (the converter's renames, the migration page's changes and the syntax changes for the
mappings; the real Godot 4 class pages and guides for the docs), driven through the real code path, and the
expected outcome is what Godot 3 -> 4 says is right. The completeness tests read the tables at test time: a rule
added to a table without a row here fails the suite."""
from __future__ import annotations

import copy
import re
from collections.abc import Callable

import pytest

from conftest import SHARED
from godot_rag.examples import REFERENCE_CHUNK
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.project import RequestContext
from godot_rag.gdscript.record_api import add_record_api
from godot_rag.gdscript.resolve import extends_hint, resolve_uses
from godot_rag.retrieve.engine.trace import Occurrence
from godot_rag.retrieve.engine.types import Candidate

# isort: split
# -- the rule tables, each imported in this one place (a module that moves is one line to change) ----------------
from godot_rag.retrieve.evidence.docs_evidence import EVIDENCE_RULES, FACT_RULES, REJECT_RULES
from godot_rag.retrieve.evidence.guide_decision import GUIDE_SHARE_RULES
from godot_rag.retrieve.migration.version import WEAK_OVERRULES
from godot_rag.retrieve.migration.version_rules import GODOT3_OVERRULES, OCCURRENCE_RULES, VERSION_RULES

# isort: split
# -- the code paths the rows drive ---------------------------------------------------------------------------------
from godot_rag.retrieve.evidence.docs_features import FEATURES
from godot_rag.retrieve.evidence.docs_stats import DocsApiStats
from godot_rag.retrieve.evidence.guide_model import GuideModel
from godot_rag.retrieve.evidence.validate import ValidationScope, mapping_evidence, validate
from godot_rag.retrieve.migration.occurrences import mapping_occurrences
from godot_rag.retrieve.migration.version import converter_renames, effective_hint, version_context
from godot_rag.retrieve.migration.version_occurrence import ChunkScope
from godot_rag.retrieve.migration.version_stage import mapping_markers
from godot_rag.retrieve.recall.codematch import renameable_names

PAGES = SHARED / "godot_docs" / "pages"

# Rule names the code sets as strings, outside the tables (the trace's `rule` / `rules` fields).
OCCURRENCE_RULES_IN_CODE = {
    "engine_api_missing",  # version_rules.classify_in_context: a godot3 decision in a Godot 4 project that would not compile
    "godot3_syntax",  # occurrences.mapping_occurrences: a syntax change's pattern matched in code
    "negative_pattern",  # occurrences.mapping_occurrences: a record's negative pattern claims the occurrence
    "declared_by_chunk",  # occurrences.mapping_occurrences: the chunk declares the name itself
}
DOCS_RULES_IN_CODE = {
    "guide_model",  # guide_decision.guide_rule: the fitted model's P(direct) rejected the guide
    "copied_page",  # docs_overrules.copied_page_overrules
    "same_evidence",  # docs_overrules.same_evidence_overrules
    "other_members",  # docs_overrules.other_members_overruled
}
# The other rules a record's Decision names (engine/decision.py): the accept and reject rules of a mapping and of a
# finding, a guide accepted as a copy, and the overrules after the validator.
DECISION_RULES_IN_CODE = {
    "godot3_use", "source_absent", "no_godot3_use", "csharp_only",  # validate.mapping_evidence
    "must_match", "must_match_fails", "must_not_match", "no_accepted_mapping", "not_at_mapping",  # validate.prototype_evidence
    "copied_code",  # guide_decision.guide_overrule: the chunk copies the guide's code, whatever P says
    "judge",  # judge.judge_overrule: the Qwen judge keeps an accept or rejects it
    "follows_mapping",  # validate.follow_mappings: a finding decided again on the mappings the judge left accepted
    "reference_finding",  # validate.prototype_evidence: a reference-derived finding BM25 brought in (the check decides it)
}


# -- fixtures: the real Godot 4 class reference, the real api_mapping records, the real docs records -------------
def _chunked(stem: str) -> list[dict]:
    from godot_rag.ingest.chunker import chunk_page
    from godot_rag.ingest.markdown import parse_page
    from godot_rag.ingest.symbols import build_vocabulary

    f = next(PAGES.glob(f"{stem}__*.md"))
    page = parse_page(f.name, f.read_text(encoding="utf-8"))
    return chunk_page(page, build_vocabulary([page]), source_file=f.name, source_sha256="x")


@pytest.fixture(scope="module")
def mappings(ref) -> dict[str, dict]:
    """The api_mapping records as ingest builds them: the converter's renames, the migration page's prose changes and
    the GDScript syntax changes, by mapping_id."""
    from godot_rag.ingest.mappings import EvidenceIndex, prose_mappings, read_renames, rename_mappings, syntax_mappings

    renames = read_renames(SHARED / "godot_docs" / "renames_3_to_4.jsonl")
    renamed, _ = rename_mappings(renames, ref, EvidenceIndex([]))
    chunks = _chunked("tutorials__migrating__upgrading_to_godot_4")
    prose, _ = prose_mappings(chunks, {(r["from"], r["to"]) for r in renames}, ref)
    syntax, _ = syntax_mappings(EvidenceIndex([]))
    return {m["mapping_id"]: m for m in renamed + prose + syntax}


@pytest.fixture(scope="module")
def renames(mappings, ref):
    return converter_renames(mappings.values(), ref)


@pytest.fixture(scope="module")
def records(ref) -> Callable[[str], Candidate]:
    """A docs record by chunk id (`classes/class_timer#008`), chunked from the real page with its derived API fields."""
    pages: dict[str, dict[str, dict]] = {}
    as_dict = ref.to_dict()

    def record(chunk_id: str) -> Candidate:
        page = chunk_id.split("#", 1)[0]
        if page not in pages:
            chunks = _chunked(page.replace("/", "__"))
            add_record_api(chunks, as_dict)
            pages[page] = {c["chunk_id"]: c for c in chunks}
        return Candidate(table="docs_chunks", id=chunk_id, payload=pages[page][chunk_id])

    return record


# -- the version and occurrence rules ----------------------------------------------------------------------------
def _decisions(ref, renames, mapping: dict, chunk: str, hint: str = "auto", context: dict | None = None):
    """(pass 1, validated): the version stage's decision for each occurrence of the mapping's source in the chunk
    (`mapping_occurrences`, as `version_stage.run_version` runs it), and the validator's (`mapping_evidence`)."""
    facts = parse_chunk(chunk)
    ctx = RequestContext.parse(context)
    res = resolve_uses(facts, ref, extends_hint(facts, None, ctx), project=ctx.index() if ctx else None,
                       own_scope=ctx.own_scope() if ctx else None).chunk_alone()
    version = version_context(facts, res, renames.new, renames.old, effective_hint(hint, ctx))
    scope = ChunkScope(facts, res, ref, renames.classes, version=version, context=ctx)
    cand = Candidate(table="api_mapping", id=mapping["mapping_id"], payload=mapping)
    pass1 = mapping_occurrences(scope, cand)["occurrences"]
    version.godot3 += mapping_markers([cand], {cand.id: [Occurrence(**d) for d in pass1]})
    v = ValidationScope(facts=facts, resolution=res, ref=ref, renamed_classes=renames.classes, version=version,
                          idf=lambda t: 6.0, class_of_page={}, context=ctx)
    validated = [o.model_dump() for o in mapping_evidence(v, cand, {"occurrences": copy.deepcopy(pass1)}).occurrences or ()]
    return pass1, validated


GODOT4_PROJECT = {"godot_version": "4.2"}
# A project whose autoload is declared by uid (`GGT="*uid://cg0wu8g5j7s4w"`) and no `.uid` file resolves it.
UID_AUTOLOAD_PROJECT = {"file_path": "ui/menu.gd", "project_symbols": [
    {"name": "GGT", "kind": "autoload", "file": "uid://cg0wu8g5j7s4w", "scope": "uid://cg0wu8g5j7s4w"}]}
# A project whose autoload `Game` declares its own `change_scene` (a scene manager), as `godot-rag scan` lists it.
SCENE_MANAGER_PROJECT = {"file_path": "ui/menu.gd", "project_symbols": [
    {"name": "Game", "kind": "autoload", "file": "autoload/game.gd", "scope": "res://autoload/game.gd"},
    {"name": "res://autoload/game.gd", "kind": "script", "file": "autoload/game.gd", "scope": "res://autoload/game.gd",
     "extends": "Node"},
    {"name": "change_scene", "kind": "func", "file": "autoload/game.gd", "line": 5, "scope": "res://autoload/game.gd"}]}

CHANGE_SCENE = "gdscript_function_renames:change_scene->change_scene_to_file"
MAKE_VISIBLE = "gdscript_function_renames:make_visible->_make_visible"
PLUGIN_NAME = "gdscript_function_renames:get_plugin_name->_get_plugin_name"
GET_SPEED = "gdscript_function_renames:get_speed->get_velocity"
RIGID_BODY = "class_renames:RigidBody->RigidBody3D"
VIEWPORT = "class_renames:Viewport->SubViewport"  # Viewport is still a Godot 4 class (SubViewport's base)
HIDE = "migration_guide:CanvasItem.hide->hidden"  # the signal; `hide()` is still CanvasItem's method
RED = "color_renames:red->RED"
ROTATE = "migration_guide:PathFollow2D.rotate->rotates"
GRID_MAP_TO_WORLD = "migration_guide:GridMap.map_to_world->map_to_local"

# (rule, chunk, mapping_id, status the rule decides, options: hint, context, line of the occurrence when the
# chunk has more than one). The status is the rule's outcome for that occurrence; for a weak overrule, the validator's.
VERSION_ROWS = [
    # VERSION_RULES: the project around the chunk and the Godot 4-only syntax, before the chunk-only rules.
    ("godot4_signal_syntax", "func _on_cancel_button_pressed():\n\tcancelled.emit()\n",
     "gdscript_signals_renames:cancelled->canceled", "valid_godot4", {}),  # a Signal object: Godot 3 wrote emit_signal
    ("static_method_declaration", '@tool\nextends EditorPlugin\n\nstatic func get_plugin_name() -> String:\n\treturn "Terrain"\n',
     PLUGIN_NAME, "ignored", {}),  # a static function overrides no virtual
    ("typed_declaration_in_godot4", '@tool\nextends EditorPlugin\n\nfunc get_plugin_name() -> String:\n\treturn "Terrain"\n',
     PLUGIN_NAME, "ignored", {}),  # `@tool`: Godot 4 code, so its own typed method, not a Godot 3 override
    ("unread_autoload_receiver", 'func _on_play_pressed():\n\tGGT.change_scene("res://levels/level_1.tscn", {})\n',
     CHANGE_SCENE, "ignored", {"context": UID_AUTOLOAD_PROJECT}),  # the autoload's name is the project's own
    ("declared_by_project", 'func _on_start_pressed():\n\tGame.change_scene("res://levels/level_1.tscn")\n',
     CHANGE_SCENE, "ignored", {"context": SCENE_MANAGER_PROJECT}),  # the project's autoload's method, not SceneTree's
    # GODOT3_OVERRULES, and the Godot 4 project's note on a godot3 decision that stands.
    ("godot4_project_compiles", "func _on_body_entered(body):\n\tbody.set_speed(0.0)\n",
     "gdscript_function_renames:set_speed->set_velocity", "ignored", {"context": GODOT4_PROJECT}),  # a dynamic call in
    # a Godot 4 project: the body's own script's method (Godot 4 has no set_speed, and the call compiles)
    ("engine_api_missing", 'func _on_start_pressed():\n\tget_tree().change_scene("res://levels/level_1.tscn")\n',
     CHANGE_SCENE, "godot3", {"context": GODOT4_PROJECT}),  # SceneTree has no change_scene: Godot 4 would not compile it
    # OCCURRENCE_RULES: the chunk alone, in order. Comments.
    ("comment_writes_dropped_name", "extends Node\n\nonready var lobby = $Lobby\n\nremote func register_player(info):\n"
     "\t# The server can call get_tree().get_rpc_sender_id() to know who sent it.\n\tlobby.add_player(info)\n",
     "gdscript_function_renames:get_rpc_sender_id->get_remote_sender_id", "godot3_comment", {}),
    ("in_comment", "extends Spatial\n\n# Spawn RigidBody scenes at random points.\nexport(PackedScene) var ball_scene\n",
     RIGID_BODY, "ignored", {}),  # a word of prose
    # Node paths.
    ("node_path_not_class", "func _on_red_key_collected():\n\t$Doors/red.queue_free()\n", RED, "ignored", {}),
    ("part_of_node_name", 'func shape_for(kind):\n\treturn $Shapes.find_node("RigidBody%s" % kind)\n', RIGID_BODY, "ignored", {}),
    ("node_path_is_no_api", "extends Spatial\n\nfunc _process(delta):\n\t$Light/TimeOfDay/Value.text = str(delta)\n",
     "class_renames:Light->Light3D", "ignored", {}),  # a scene node's name, even in Godot 3 code: no engine API
    # Strings.
    ("string_names_dropped_class", 'tool\nextends EditorPlugin\n\nfunc _enter_tree():\n'
     '\tadd_custom_type("Mover", "KinematicBody", preload("mover.gd"), preload("icon.png"))\n',
     "class_renames:KinematicBody->CharacterBody3D", "godot3", {}),
    ("string_names_class", 'func find_viewports(node):\n\tif node.is_class("Viewport"):\n\t\tfound.append(node)\n',
     VIEWPORT, "ambiguous", {}),
    ("string_not_string_api", 'func _on_start_pressed():\n\tpush_warning("change_scene failed")\n', CHANGE_SCENE, "ignored", {}),
    ("string_not_signal_argument", 'extends Control\n\nfunc _ready():\n\tconnect("visibility_changed", self, "hide")\n',
     HIDE, "ignored", {}),  # the method connected to, not the signal
    ("string_names_dropped", 'func _ready():\n\tvar width = ProjectSettings.get_setting("display/window/size/width")\n',
     "project_settings_renames:display/window/size/width->display/window/size/viewport_width", "godot3", {}),
    ("signal_name_not_a_signal", 'extends Control\n\nfunc _ready():\n\tconnect("hide", self, "_on_hide")\n',
     HIDE, "godot3", {}),  # Godot 4's `hide` is only a method: the signal is `hidden`
    ("signal_name_exists", 'func _ready():\n\tskeleton.connect("skeleton_updated", self, "_on_skeleton_updated")\n',
     "gdscript_signals_renames:skeleton_updated->pose_updated", "ambiguous", {}),  # Skeleton3D still has the signal
    # Code.
    # the project's palette
    ("not_color_constant", "func flash_damage():\n\t$Sprite.modulate = Palette.red\n", RED, "ignored", {}),
    ("signal_not_used_as_signal", "extends Control\n\nfunc _on_close_pressed():\n\thide()\n", HIDE, "ignored", {}),
    ("method_not_called", 'func _ready():\n\t$Button.pressed.connect(change_scene.bind("res://level_2.tscn"))\n',
     CHANGE_SCENE, "ignored", {}),  # a Callable of the script's own method
    ("godot3_virtual_override", "tool\nextends EditorPlugin\n\nfunc make_visible(visible):\n\tdock.visible = visible\n",
     MAKE_VISIBLE, "godot3", {}),  # Godot 4's EditorPlugin calls `_make_visible`
    ("resolves_off_class", "func load_level(path):\n\tvar scene = ResourceLoader.load(path)\n\tadd_child(scene.instance())\n",
     "migration_guide:ResourceFormatLoader.load->_load", "ignored", {}),  # ResourceLoader's load, not the format loader's
    ("godot4_signal_as_value", "extends Control\n\nonready var sound_toggle: Button = $SoundToggle\n\n"
     "func _ready():\n\tsound_toggle.pressed = true\n", "migration_guide:BaseButton.pressed->button_pressed", "ambiguous", {}),
    ("resolves_in_godot4", "func _process(_delta):\n\tvar draw_calls = get_viewport().get_render_info("
     "Viewport.RENDER_INFO_TYPE_VISIBLE, Viewport.RENDER_INFO_DRAW_CALLS_IN_FRAME)\n",
     "gdscript_function_renames:get_render_info->get_rendering_info", "valid_godot4", {}),  # Viewport's, still Godot 4
    ("enum_target_absent", "func _ready():\n\t$Title.align = Label.ALIGN_CENTER\n",
     "enum_renames:ALIGN_CENTER->ALIGNMENT_CENTER", "ignored", {}),  # Label has no ALIGNMENT_CENTER: another migration
    ("missing_on_other_class", "func cell_center(tiles: TileMap, cell):\n\treturn tiles.map_to_world(cell)\n",
     GRID_MAP_TO_WORLD, "ignored", {}),  # TileMap's own change, not GridMap's
    ("missing_on_receiver", 'func _on_start_pressed():\n\tget_tree().change_scene("res://levels/level_1.tscn")\n',
     CHANGE_SCENE, "godot3", {}),
    ("class_member_resolves", "func _ready():\n\tget_viewport().scaling_3d_mode = Viewport.SCALING_3D_MODE_FSR\n",
     VIEWPORT, "valid_godot4", {}),
    ("class_dropped", "extends KinematicBody2D\n\nvar velocity = Vector2()\n",
     "class_renames:KinematicBody2D->CharacterBody2D", "godot3", {}),
    ("class_still_exists", "func _ready():\n\tvar vp: Viewport = get_viewport()\n\tvp.transparent_bg = true\n",
     VIEWPORT, "ambiguous", {}),
    ("known_receiver_off_class", "extends TileMap\n\nfunc cell_center(cell):\n\treturn map_to_world(cell) + cell_size / 2\n",
     GRID_MAP_TO_WORLD, "ignored", {}),
    ("short_prose_name", "func _on_switch_flipped(lamp):\n\tlamp.on = true\n",
     "migration_guide:Theme.on->checked", "ignored", {}),  # Theme's `on` icon is no `lamp.on`
    ("name_dropped", "func _ready():\n\tvar speed = rand_range(100.0, 200.0)\n",
     "gdscript_function_renames:rand_range->randf_range", "godot3", {}),
    ("receiver_off_class", "func _process(delta):\n\t$Pivot.rotate(Vector3.UP, delta)\n", ROTATE, "ignored", {}),
    ("still_godot4_api", 'func style(control):\n\tif control.has_color("font_color", "Label"):\n'
     '\t\tmodulate = control.get_color("font_color", "Label")\n',
     "gdscript_function_renames:has_color->has_theme_color", "ambiguous", {}),  # Theme.has_color is still Godot 4 API
    # Set in occurrences.mapping_occurrences.
    ("godot3_syntax", 'func _on_hit():\n\tyield(get_tree().create_timer(0.2), "timeout")\n',
     "gdscript_syntax:yield->await", "godot3", {}),
    ("negative_pattern", "var speed = 200.0\n\nfunc get_speed():\n\treturn speed\n", GET_SPEED, "ignored", {}),
    ("declared_by_chunk", "var speed = 200.0\n\nfunc get_speed():\n\treturn speed\n\nfunc _physics_process(delta):\n"
     "\tposition.x += get_speed() * delta\n", GET_SPEED, "ignored", {"line": 7}),  # the script's own getter, called
    # WEAK_OVERRULES: the validator's, over weak evidence, on the chunk's Godot 4 markers.
    ("comment_reference_overruled", "func _on_start_pressed():\n\t# get_tree().change_scene() used to load it here\n"
     "\tawait get_tree().create_timer(0.5).timeout\n", CHANGE_SCENE, "ignored", {}),  # a stale comment in Godot 4 code
]

WEAK_RULES = {w.name for w in WEAK_OVERRULES.values()}
OUTCOMES = {r.name: r.outcome for r in VERSION_RULES + OCCURRENCE_RULES + GODOT3_OVERRULES}


@pytest.mark.parametrize("rule,chunk,mapping_id,status,options", [pytest.param(*row, id=row[0]) for row in VERSION_ROWS])
def test_each_version_rule_decides_its_occurrence(ref, mappings, renames, rule, chunk, mapping_id, status, options):
    mapping = mappings[mapping_id]
    assert parse_chunk(chunk).parse_errors == [], "each row's chunk is valid GDScript"
    pass1, validated = _decisions(ref, renames, mapping, chunk, options.get("hint", "auto"), options.get("context"))
    at = [i for i, d in enumerate(pass1) if options.get("line") in (None, d["line"])]
    assert len(at) == 1, f"one occurrence of {mapping['source_api']!r} is the row's: {pass1}"
    i = at[0]
    decided = validated[i] if rule in WEAK_RULES else pass1[i]
    assert (decided["status"], decided["rule"]) == (status, rule), decided["why"]
    assert validated[i]["rule"] == rule  # the validator's trace names the rule that decided
    assert OUTCOMES.get(rule, status) == status  # a table's rule decides its own outcome


def test_every_version_rule_has_a_row():
    names = [r.name for r in VERSION_RULES + OCCURRENCE_RULES + GODOT3_OVERRULES] + sorted(WEAK_RULES)
    rows = [row[0] for row in VERSION_ROWS]
    assert len(rows) == len(set(rows)) and len(names) == len(set(names))
    assert set(rows) == set(names) | OCCURRENCE_RULES_IN_CODE


def _retrieve_sources() -> str:
    """The retrieve package's source, however its modules are split."""
    from pathlib import Path

    import godot_rag.retrieve

    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(Path(godot_rag.retrieve.__file__).parent.rglob("*.py")))


def test_rule_names_set_in_code_have_rows():
    """The rule names the code writes as strings into a decision's `rule` (`rules`) field are the ones listed here."""
    src = _retrieve_sources()
    occurrence = (set(re.findall(r'"rule":\s*"(\w+)"', src)) | set(re.findall(r'\["rule"\]\s*=[^\n]*,\s*"(\w+)"\s*$', src, re.M))
                  | set(re.findall(r"\[rule (\w+)\]", src)))
    docs = set(re.findall(r'\.overruled\("(\w+)"', src)) | set(re.findall(r'GUIDE_MODEL, \w+ = "(\w+)"', src))
    # The strings of the module-level constants (`FOLLOWS_MAPPING = "follows_mapping"`).
    values = re.findall(r'^[A-Z][A-Z_0-9, ]* = (\([^)]*\)|"[^"\n]*"(?:, "[^"\n]*")*)', src, re.M)
    named = set(re.findall(r'"(\w+)"', " ".join(values)))
    assert occurrence == OCCURRENCE_RULES_IN_CODE
    assert docs == DOCS_RULES_IN_CODE
    assert named >= DECISION_RULES_IN_CODE, DECISION_RULES_IN_CODE - named  # each a named constant of the code


# -- the docs-evidence, reject and guide rules ---------------------------------------------------------------------
# The docs' idf, as BM25 over the docs gives it: words every page writes weigh little, the rest are rare (min_idf 5).
COMMON_WORDS = {"func", "var", "if", "else", "elif", "return", "pass", "self", "true", "false", "delta", "event", "new",
                "size", "start", "stop", "play", "x", "y", "position", "velocity", "speed", "direction", "zero",
                "vector2", "input", "_ready", "_process"}


def docs_idf(term: str) -> float:
    return 2.0 if term.lower() in COMMON_WORDS else 6.0


def _guide_model(bias: float) -> GuideModel:
    """A model whose P(direct) is the same for every guide: accepting all (bias 10) leaves the rules over what a guide
    shares to decide, rejecting all (bias -10) is the model's own verdict."""
    return GuideModel.from_dict({"weights": {f: 0.0 for f in FEATURES}, "bias": bias, "threshold": 0.5})


@pytest.fixture(scope="module")
def guide_stats(ref, records) -> DocsApiStats:
    """Use counts over the first 2D game's pages; `_ready` is overridden by a fifth of real chunks: generic."""
    stems = sorted({f.name.rsplit("__", 1)[0] for f in PAGES.glob("getting_started__first_2d_game__*.md")})
    docs = {c["chunk_id"]: c for stem in stems for c in _chunked(stem)}
    add_record_api(list(docs.values()), ref.to_dict())
    return DocsApiStats.build(docs, ref, {"_ready()": 0.2})


@pytest.fixture(scope="module")
def generic_stats(ref) -> DocsApiStats:
    """`Node.add_child` in 300 of 1000 records and a fifth of real chunks: generic; `PackedScene.instantiate` is not."""
    return DocsApiStats(ref, 1000, {"Node.add_child": 300, "PackedScene.instantiate": 40}, {}, {"Node.add_child": 0.2})


def _validated_docs(ref, renames, chunk: str, cands: list[Candidate], **settings) -> dict[str, dict]:
    """Each docs record's validate info, through the validator (`validate`: the evidence and reject rules, the guide
    model, then the overrules over the list), with the chunk's own version markers and the docs' class pages."""
    facts = parse_chunk(chunk)
    res = resolve_uses(facts, ref)
    v = ValidationScope(facts=facts, resolution=res, ref=ref, renamed_classes=renames.classes, code_renames=renames.code,
                          version=version_context(facts, res, renames.new, renames.old, "auto"), idf=docs_idf,
                          class_of_page={info["page"]: cls for cls, info in ref.classes.items() if info.get("page")},
                          renameable=renameable_names(facts, ref), **settings)
    return {c.id: c.info("validate").model_dump() for c in validate(v, cands, {})}


TIMER = "classes/class_timer"  # #000 description, #002 properties table, #004 signals, #008 method descriptions
PLAYER_2D = "getting_started/first_2d_game/03.coding_the_player"
PLAYER_3D = "getting_started/first_3d_game/03.player_movement_code"
ENEMY_2D = "getting_started/first_2d_game/04.creating_the_enemy"
TIMER_START = "func arm(cooldown: Timer):\n\tcooldown.start(1.5)\n"
NEW_TIMER = "func _ready():\n\tvar cooldown := Timer.new()\n\tadd_child(cooldown)\n"
MOVE_RIGHT = 'func _unhandled_input(event):\n\tif event.is_action_pressed("move_right"):\n\t\tturn(1)\n'
RESIZED = "func _on_window_resized(new_size):\n\tscreen_size = new_size\n"

# (rule, chunk, the records retrieved in order, the record the rule decides, settings: "model" always | never |
# generic, and ValidationScope settings). An evidence rule adds an item of its kind; a reject rule rejects the record.
DOCS_ROWS = [
    # EVIDENCE_RULES, by the kind of item each adds.
    ("resolved_api", TIMER_START, [f"{TIMER}#008"], f"{TIMER}#008", {}),  # Timer.start's entry
    ("api_symbol", NEW_TIMER, [f"{TIMER}#000"], f"{TIMER}#000", {}),  # the class the chunk names
    ("call", "func _process(delta):\n\tposition += velocity * delta\n\tposition = position.clamp(Vector2.ZERO, screen_size)\n",
     [f"{PLAYER_2D}#003"], f"{PLAYER_2D}#003", {}),  # position.clamp()
    ("method_call", 'func _unhandled_input(event):\n\tif event.is_action_pressed("jump"):\n\t\tjump()\n',
     [f"{PLAYER_2D}#002"], f"{PLAYER_2D}#002", {}),  # .is_action_pressed()
    ("code_line", "func _ready():\n\tscreen_size = get_viewport_rect().size\n\thide()\n",
     [f"{PLAYER_2D}#001"], f"{PLAYER_2D}#001", {}),
    ("string", MOVE_RIGHT, [f"{PLAYER_2D}#002"], f"{PLAYER_2D}#002", {}),  # "move_right"
    ("identifier", RESIZED, [f"{PLAYER_2D}#001"], f"{PLAYER_2D}#001", {}),  # screen_size
    # REJECT_RULES.
    ("no_evidence", "func _on_hit():\n\t$HitSound.play()\n", [f"{TIMER}#004"], f"{TIMER}#004", {}),
    ("weak_only", RESIZED, [f"{PLAYER_2D}#001"], f"{PLAYER_2D}#001", {}),  # only the author's own name in common
    ("api_contradiction", 'func _physics_process(delta):\n\tvar direction = Vector2.ZERO\n'
     '\tif Input.is_action_pressed("move_right"):\n\t\tdirection.x += 1\n\tvelocity = direction * speed\n\tmove_and_slide()\n',
     [f"{PLAYER_3D}#001"], f"{PLAYER_3D}#001", {}),  # the 3D game's Vector3 code for 2D code
    ("unused_class_page", "func _on_game_over():\n\tvar music := AudioStreamPlayer.new()\n\tmusic.stop()\n",
     [f"{TIMER}#008"], f"{TIMER}#008", {}),  # Timer.stop is not AudioStreamPlayer's
    ("class_name_only", NEW_TIMER, [f"{TIMER}#002"], f"{TIMER}#002", {}),  # the properties table: nothing the chunk uses
    ("generic_api", "extends Node\n\nfunc spawn(enemy_scene: PackedScene):\n\tadd_child(enemy_scene.instantiate())\n",
     ["classes/class_node#039"], "classes/class_node#039", {"model": "generic", "min_api_specificity": 0.16}),
    ("low_confidence", "func _on_mob_timer_timeout():\n\tvar mob = mob_scene.instantiate()\n\tadd_child(mob)\n",
     [f"{PLAYER_2D}#001"], f"{PLAYER_2D}#001", {}),  # only a function's header line in common, renamed
    # GUIDE_SHARE_RULES and the model's own verdict, over a guide.
    ("nothing_shared", TIMER_START, [f"{PLAYER_2D}#006"], f"{PLAYER_2D}#006", {"model": "always"}),  # `signal hit`
    ("generic_only", "func _ready():\n\tscore = 0\n\tnew_game()\n", [f"{PLAYER_2D}#001"], f"{PLAYER_2D}#001",
     {"model": "always", "min_guide_specificity": 0.5}),  # only `_ready` in common
    ("guide_model", "func _on_game_over():\n\t$Music.stop()\n\thide()\n", [f"{PLAYER_2D}#007"], f"{PLAYER_2D}#007",
     {"model": "never"}),  # the player hiding when hit: only `hide()` in common
    # Set in the overrules over the list of records (docs_evidence).
    ("copied_page", REFERENCE_CHUNK, [f"{PLAYER_2D}#002", f"{PLAYER_2D}#003", f"{ENEMY_2D}#002"], f"{ENEMY_2D}#002", {}),
    ("same_evidence", REFERENCE_CHUNK, [f"{PLAYER_2D}#002", f"{PLAYER_2D}#003", f"{ENEMY_2D}#002"], f"{ENEMY_2D}#002",
     {"model": "always", "copy_source_share": 0.0}),  # the enemy's page shows one of the player page's lines again
    ("other_members", "@onready var cooldown: Timer = $Cooldown\n\nfunc _ready():\n"
     "\tcooldown.timeout.connect(_on_cooldown_timeout)\n", [f"{TIMER}#004", f"{TIMER}#008"], f"{TIMER}#008", {}),
]
EVIDENCE_KINDS = {r.kind for r in EVIDENCE_RULES}


@pytest.mark.parametrize("rule,chunk,retrieved,target,settings", [pytest.param(*row, id=row[0]) for row in DOCS_ROWS])
def test_each_docs_rule_fires(ref, renames, records, guide_stats, generic_stats, rule, chunk, retrieved, target, settings):
    assert parse_chunk(chunk).parse_errors == [], "each row's chunk is valid GDScript"
    settings = dict(settings)
    models = {"always": (_guide_model(10.0), guide_stats), "never": (_guide_model(-10.0), guide_stats),
              "generic": (_guide_model(10.0), generic_stats)}
    if (model := settings.pop("model", None)) is not None:
        settings["guide_model"] = models[model]
    cands = [records(i) for i in retrieved]
    info = _validated_docs(ref, renames, chunk, cands, **settings)[target]
    if rule in EVIDENCE_KINDS:
        assert rule in {i["kind"] for i in info["evidence"]}, info["evidence"]
        return
    assert not info["accepted"] and rule in info["rules"], (info["rules"], info["reasons"])
    assert len(info["rules"]) == len(info["reasons"])  # each rule that fired gives its reason
    if rule in GUIDE_SHARE_RULES:
        assert info["model"][rule]  # the model's trace names it too
    if rule in FACT_RULES:  # a fact holds for a guide whatever the fitted model says
        kept = _validated_docs(ref, renames, chunk, cands, guide_model=models["always"], **settings)[target]
        assert not kept["accepted"] and rule in kept["rules"]


def test_every_docs_rule_has_a_row():
    rows = [row[0] for row in DOCS_ROWS]
    assert len(rows) == len(set(rows))
    assert {r.name for r in REJECT_RULES} >= FACT_RULES
    assert set(rows) == EVIDENCE_KINDS | {r.name for r in REJECT_RULES} | set(GUIDE_SHARE_RULES) | DOCS_RULES_IN_CODE
