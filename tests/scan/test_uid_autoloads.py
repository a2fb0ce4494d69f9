"""Autoloads declared by `uid://` (Godot 4.4+): resolved through the `.uid` file beside a script or a scene's
header; without either, the name is still the project's own symbol. `GGT.change_scene(...)` on such an autoload is
no migration mapping and no API finding. A small project written here."""
from __future__ import annotations

import pytest

from godot_rag.gdscript.api_check import check_api
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.project import RequestContext
from godot_rag.gdscript.resolve import extends_hint, resolve_uses
from godot_rag.retrieve.engine.types import Candidate
from godot_rag.retrieve.evidence.validate import ValidationScope, validate
from godot_rag.retrieve.migration.version import effective_hint, version_context, version_names
from godot_rag.retrieve.migration.version_stage import decide_occurrences
from godot_rag.scan.project import read_project
from godot_rag.scan.symbols import build_project_symbols, file_context

PROJECT = {
    "project.godot": 'config_version=5\n\n[application]\n\nconfig/features=PackedStringArray("4.4")\n\n[autoload]\n\n'
                     'GGT="*uid://cg0wu8g5j7s4w"\nMenus="*uid://d1scenemenus"\nHud="*uid://b2nothere"\n',
    "autoloads/ggt.gd": "extends Node\n\nfunc change_scene(path: String, params = {}) -> void:\n"
                        "\tget_tree().change_scene_to_file(path)\n",
    "autoloads/ggt.gd.uid": "uid://cg0wu8g5j7s4w\n",
    "menus/menus.tscn": '[gd_scene load_steps=2 format=3 uid="uid://d1scenemenus"]\n\n'
                        '[ext_resource type="Script" path="res://menus/menus.gd" id="1"]\n\n'
                        '[node name="Menus" type="CanvasLayer"]\nscript = ExtResource("1")\n',
    "menus/menus.gd": "extends CanvasLayer\n\nfunc open(name: String) -> void:\n\tpass\n",
}
CHUNK = ('func _on_play_pressed():\n\tGGT.change_scene("res://levels/level_1.tscn", {"bar": true})\n'
         '\tHud.change_scene_to(preload("res://menu.tscn"))\n\tMenus.open("pause")\n')


def _rename(src: str, dst: str) -> dict:
    return {"mapping_id": f"gdscript_function_renames:{src}->{dst}", "source_api": src, "target_api": dst,
            "change_type": "method_rename", "match_terms": [src], "negative_patterns": [], "confidence": 1.0}


MAPPINGS = [_rename("change_scene", "change_scene_to_file"), _rename("change_scene_to", "change_scene_to_packed")]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("uid-project")
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return build_project_symbols(read_project(root, "."))


def test_uid_autoloads_resolve_through_uid_files_and_scene_headers(table):
    loads = {s.name: s for s in table.symbols if s.kind == "autoload"}
    assert (loads["GGT"].file, loads["GGT"].scope) == ("autoloads/ggt.gd", "res://autoloads/ggt.gd")
    assert loads["Menus"].file == "menus/menus.gd"  # the scene's root script
    assert loads["Hud"].scope == "uid://b2nothere"  # no .uid file: still the project's name
    index = RequestContext(project_symbols=table.symbols).index()
    assert index.engine_class("GGT") == "Node" and index.engine_class("Menus") == "CanvasLayer"
    assert index.unread("Hud") and not index.unread("GGT") and index.engine_class("Hud") is None


@pytest.mark.parametrize("version", ["4.4", None])
def test_a_uid_autoloads_member_is_no_mapping_and_no_finding(ref, table, version):
    context = file_context(table, "ui/menu.gd").model_copy(update={"godot_version": version})
    facts = parse_chunk(CHUNK)
    res = resolve_uses(facts, ref, extends_hint(facts, None, context), project=context.index(),
                       own_scope=context.own_scope())
    old, new = version_names(MAPPINGS, ref)
    v = ValidationScope(facts=facts, resolution=res, ref=ref, idf=lambda t: 6.0, class_of_page={}, context=context,
                        version=version_context(facts, res, new, old, effective_hint("auto", context)))
    cands = [Candidate(table="api_mapping", id=m["mapping_id"], payload=m) for m in MAPPINGS]
    declared, unread = validate(v, cands, decide_occurrences(v, cands))
    assert declared.verdict == unread.verdict == "reject", (declared.reason, unread.reason)
    # GGT's script declares change_scene; Hud's script is unknown: all its members are the project's.
    assert [o.rule for o in declared.info("validate").occurrences] == ["declared_by_project"]
    assert [o.rule for o in unread.info("validate").occurrences] == ["unread_autoload_receiver"]
    assert check_api(facts, res, ref).findings == []
