"""`label_prototypes` derived from the class reference (`ingest --reference-findings`), on the real pages of
../shared/godot_docs: one finding per Deprecated or Experimental mark, in the user's schema, each citing the
record that holds the entry; on by default (`ingest --no-reference-findings` leaves them out)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURES, SHARED
from godot_rag.ingest.pipeline import run_ingest
from godot_rag.ingest.state import inputs_unchanged, save_state
from godot_rag.records import SCHEMA

PAGES = SHARED / "godot_docs" / "pages"


def read(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    """The class pages and the two GDScript pages the generic findings cite, ingested with the option: (prototypes
    by id, records by id, class reference)."""
    pages = tmp_path_factory.mktemp("class-pages")
    cited = ("tutorials__scripting__gdscript__static_typing__*.md", "tutorials__scripting__gdscript__gdscript_basics__*.md")
    for page in [*PAGES.glob("classes__*.md"), *(p for pattern in cited for p in PAGES.glob(pattern))]:
        shutil.copy(page, pages / page.name)
    out = tmp_path_factory.mktemp("derived")
    run_ingest(pages, None, out, quiet=True, reference_findings=True)
    prototypes = {p["prototype_id"]: p for p in read(out / "label_prototypes.jsonl")}
    records = {r["chunk_id"]: r for r in read(out / "docs_chunks.jsonl")}
    return prototypes, records, json.loads((out / "class_reference.json").read_text(encoding="utf-8"))


def test_on_by_default_and_left_out_on_request(tmp_path):
    run_ingest(FIXTURES / "pages", FIXTURES / "renames.jsonl", tmp_path, quiet=True)
    assert [p for p in read(tmp_path / "label_prototypes.jsonl") if p["prototype_id"].startswith("api:")]
    run_ingest(FIXTURES / "pages", FIXTURES / "renames.jsonl", tmp_path, quiet=True, reference_findings=False)
    assert not [p for p in read(tmp_path / "label_prototypes.jsonl") if p["prototype_id"].startswith("api:")]


def test_one_finding_per_mark_in_the_users_schema(derived):
    prototypes, records, _ = derived
    api = [p for p in prototypes.values() if p["prototype_id"].startswith("api:")]
    labels = [p["label"] for p in api]
    assert (labels.count("deprecated_api"), labels.count("experimental_api")) == (490, 171)
    assert labels.count("missing_engine_member") == labels.count("wrong_argument_count") == 1
    names = [f for f, _ in SCHEMA["label_prototypes"]["fields"]]
    for p in api:
        assert list(p) == names
        assert p["severity"] == {"deprecated_api": "warning", "experimental_api": "info"}.get(p["label"], "error")
        assert p["evidence_chunk_ids"] and all(c in records for c in p["evidence_chunk_ids"])
        for rx in p["validator_rules"]["must_match"]:
            re.compile(rx)


def test_a_deprecated_member_cites_its_entry_and_names_the_replacement(derived):
    prototypes, records, _ = derived
    force = prototypes["api:deprecated_api:TileMap.force_update"]
    (record,) = force["evidence_chunk_ids"]
    assert "**force_update**" in records[record]["content"] and "Deprecated" in records[record]["content"]
    assert "`update_internals()`" in force["recommended_action"]
    rules = force["validator_rules"]
    assert rules["requires_resolved_api"] == "TileMap.force_update" and rules["requires_reference_mark"] == "deprecated"
    assert re.search(rules["must_match"][0], "\tmap.force_update(0)")
    tilemap = prototypes["api:deprecated_api:TileMap"]
    assert "`TileMapLayer`" in tilemap["recommended_action"]
    pattern = tilemap["validator_rules"]["must_match"][0]
    assert re.search(pattern, "extends TileMap") and not re.search(pattern, "$TileMap.clear()")
    assert not re.search(pattern, "var layer: TileMapLayer")
    constant = prototypes["api:deprecated_api:AnimationPlayer.ANIMATION_PROCESS_IDLE"]
    assert "AnimationMixer.ANIMATION_CALLBACK_MODE_PROCESS_IDLE" in constant["recommended_action"]
    assert prototypes["api:experimental_api:FBXDocument"]["severity"] == "info"


def test_every_entry_knows_its_record(derived):
    _, records, class_reference = derived
    classes = class_reference["classes"]
    assert classes["TileMap"]["record"] == 0  # the record's index on its page: `classes/class_tilemap#000`
    for cls in ("TileMap", "Sprite2D", "Node"):
        for name, member in classes[cls]["members"].items():
            if "record" in member:
                holder = records[f"{classes[cls]['page']}#{member['record']:03d}"]
                assert name in holder["metadata"]["members"] or holder["symbol"] == f"{cls}.{name}"


def test_the_option_is_part_of_the_skip_fingerprint(tmp_path):
    run_ingest(FIXTURES / "pages", None, tmp_path, quiet=True)
    save_state(FIXTURES / "pages", None, tmp_path, 1800)
    assert inputs_unchanged(FIXTURES / "pages", None, tmp_path, 1800)
    assert not inputs_unchanged(FIXTURES / "pages", None, tmp_path, 1800, "reference_findings")


def test_the_cli_option_adds_them(tmp_path):
    from click.testing import CliRunner

    from godot_rag.cli import main

    args = ["ingest", "--pages", str(FIXTURES / "pages"), "--out", str(tmp_path), "--quiet"]
    assert CliRunner().invoke(main, [*args, "--no-reference-findings"]).exit_code == 0
    plain = {p["prototype_id"] for p in read(tmp_path / "label_prototypes.jsonl")}
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and '"ingest": "done"' in result.output  # not skipped as unchanged
    derived = {p["prototype_id"] for p in read(tmp_path / "label_prototypes.jsonl")}
    assert {"api:missing_engine_member", "api:wrong_argument_count"} <= derived - plain


def test_an_api_finding_cites_the_record_of_its_entry(derived):
    from godot_rag.gdscript.api_check import check_api
    from godot_rag.gdscript.classref import ClassReference
    from godot_rag.gdscript.facts import parse_chunk
    from godot_rag.gdscript.resolve import resolve_uses

    _, records, class_reference = derived
    ref = ClassReference(class_reference)
    facts = parse_chunk("extends TileMap\n\nfunc _ready() -> void:\n\tforce_update(0)\n")
    tilemap, force = check_api(facts, resolve_uses(facts, ref), ref).findings
    assert tilemap.reference.record_id == "classes/class_tilemap#000"
    assert "**force_update**" in records[force.reference.record_id]["content"]
