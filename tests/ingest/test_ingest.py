import json
import os
import shutil

import pytest

from conftest import FIXTURES, SHARED
from godot_rag.ingest.pipeline import IngestError, run_ingest


def read(path):
    return [json.loads(l) for l in open(path)]


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("ingest")
    run_ingest(FIXTURES / "pages", FIXTURES / "renames.jsonl", out, quiet=True)
    return out


def test_docs_chunks_fields_and_rules(out):
    from godot_rag.records import SCHEMA

    chunks = read(out / "docs_chunks.jsonl")
    names = [f for f, _ in SCHEMA["docs_chunks"]["fields"]]
    assert all(list(c) == names for c in chunks)
    player = [c for c in chunks if c["metadata"]["page_path"] == "getting_started/demo/coding_the_player"]
    process = next(c for c in player if "func _process" in c["content"])
    # C# stays in code_blocks, tagged, but out of content
    assert "IsActionPressed" not in process["content"]
    assert any(b["language"] == "csharp" for c in player for b in c["code_blocks"])
    assert {"Input.is_action_pressed", "Vector2.ZERO", "AnimatedSprite2D", "AnimatedSprite2D.play"} <= set(process["api_symbols"])
    clamp = next(c for c in player if "position.clamp" in c["content"])
    assert {"position.clamp", "Vector2.ZERO"} <= set(clamp["api_symbols"])
    assert clamp["section_path"] == ["Coding the player", "Keeping the player on screen"]
    assert process["doc_type"] == "tutorial"
    assert process["source_url"] == "https://docs.godotengine.org/en/latest/getting_started/demo/coding_the_player.html"
    # class reference: symbol names the class, and the member where one chunk documents one member
    input_chunks = [c for c in chunks if c["metadata"]["page_path"] == "classes/class_input"]
    assert all(c["doc_type"] == "class_reference" and c["symbol"].startswith("Input") for c in input_chunks)


def test_code_block_is_never_cut_unless_too_long(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    body = "\n".join(f"    var v{i} = Vector2({i}, {i})" for i in range(60))
    (pages / "tutorials__long__aaaaaaaa.md").write_text(
        "# Long\n\n" + "Intro text.\n\n" * 3 + f"```gdscript\nfunc f():\n{body}\n```\n\n```gdscript\n"
        + "x = 1\n" * 400 + "```\n")
    run_ingest(pages, None, tmp_path / "out", quiet=True, target_chars=1800)
    chunks = read(tmp_path / "out" / "docs_chunks.jsonl")
    whole = [c for c in chunks if "func f():" in c["content"]]
    assert len(whole) == 1 and "v59" in whole[0]["content"]  # the 1,700-char block stays whole
    long_parts = [c for c in chunks if "x = 1" in c["content"]]
    assert len(long_parts) >= 2 and all(len(c["content"]) <= 1900 for c in long_parts)


def test_ids_are_stable(tmp_path, out):
    run_ingest(FIXTURES / "pages", FIXTURES / "renames.jsonl", tmp_path, quiet=True)
    assert [c["chunk_id"] for c in read(tmp_path / "docs_chunks.jsonl")] == \
        [c["chunk_id"] for c in read(out / "docs_chunks.jsonl")]


def test_api_mapping_from_renames_and_migration_page(out):
    maps = {m["mapping_id"]: m for m in read(out / "api_mapping.jsonl")}
    m = maps["class_renames:AnimatedSprite->AnimatedSprite2D"]
    assert m["change_type"] == "class_rename" and m["target_api"] == "AnimatedSprite2D"
    assert "classes/class_animatedsprite2d#000" in m["evidence_chunk_ids"]
    assert any(e.startswith("tutorials/migrating/") for e in m["evidence_chunk_ids"])
    assert any("AnimatedSprite2D" in p for p in m["negative_patterns"])
    prose = maps["migration_guide:Array.remove->remove_at"]
    assert prose["evidence_chunk_ids"] and prose["evidence_chunk_ids"][0].startswith("tutorials/migrating/")
    assert "gdscript_syntax:yield->await" in maps and "gdscript_syntax:tool->@tool" in maps


def test_label_prototypes_cite_evidence(out):
    protos = {p["label"]: p for p in read(out / "label_prototypes.jsonl")}
    cls = protos["godot3_class_name"]
    assert "class_renames:AnimatedSprite->AnimatedSprite2D" in cls["evidence_mapping_ids"]
    assert cls["validator_rules"]["must_match"]
    assert protos["yield_instead_of_await"]["evidence_mapping_ids"] == ["gdscript_syntax:yield->await"]


def test_report_warnings_and_bad_pages(tmp_path):
    pages = tmp_path / "pages"
    shutil.copytree(FIXTURES / "pages", pages)
    (pages / "manual__latin1__ffffffff.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    (pages / "manual__nul__fefefefe.md").write_bytes(b"# Title\n\nSome text\x00 with a NUL byte.\n")
    run_ingest(pages, None, tmp_path / "out", quiet=True)
    report = read(tmp_path / "out" / "ingest_report.jsonl")
    by = {r.get("source_file"): r for r in report}
    assert by["pages/manual__latin1__ffffffff.md"]["status"] == "error"
    assert "UTF-8" in by["pages/manual__latin1__ffffffff.md"]["error"]
    assert any("unclosed code fence" in w for w in by["pages/manual__broken__d0e1f2a3.md"]["warnings"])
    assert "empty page" in by["pages/manual__empty__e1f2a3b4.md"]["warnings"]
    assert report[-1]["summary"] is True and report[-1]["pages_error"] == 1
    # a NUL byte (which PostgreSQL text cannot hold) is removed, said in the report, and never reaches the JSONL
    assert any("NUL byte(s) removed" in w for w in by["pages/manual__nul__fefefefe.md"]["warnings"])
    assert "\\u0000" not in (tmp_path / "out" / "docs_chunks.jsonl").read_text()


def test_empty_pages_dir_is_a_clear_error(tmp_path):
    with pytest.raises(IngestError, match="no Markdown pages"):
        run_ingest(tmp_path, None, tmp_path / "out", quiet=True)


@pytest.mark.slow
def test_full_pages_end_to_end(tmp_path):
    """All of ../shared/godot_docs/pages: the real chunks the user's notes talk about."""
    out = tmp_path / "jsonl"
    run_ingest(SHARED / "godot_docs" / "pages", SHARED / "godot_docs" / "renames_3_to_4.jsonl", out, quiet=True)
    chunks = read(out / "docs_chunks.jsonl")
    assert len(chunks) > 10000
    page = [c for c in chunks if c["metadata"]["page_path"] == "getting_started/first_2d_game/03.coding_the_player"]
    clamp = next(c for c in page if "position = position.clamp(Vector2.ZERO, screen_size)" in c["content"])
    assert {"position.clamp", "Vector2.ZERO", "AnimatedSprite2D"} <= set(clamp["api_symbols"])
    process = next(c for c in page if "func _process(delta):" in c["content"])
    assert {"Input.is_action_pressed", "Vector2.ZERO", "AnimatedSprite2D"} <= set(process["api_symbols"])
    # the two neighbours together carry the whole _process function's API
    together = set(process["api_symbols"]) | set(clamp["api_symbols"])
    assert {"Input.is_action_pressed", "Vector2.ZERO", "AnimatedSprite2D", "position.clamp"} <= together
    assert max(len(c["content"]) for c in chunks) <= 1900
    # A Constants section has no rule between its entries: a chunk of it names every constant it holds, and only
    # those (`Vector2.ONE` is documented, not only the section's first constant); an enum's entry names its constants.
    vector2 = next(c for c in chunks if c["metadata"]["page_path"] == "classes/class_vector2" and "**ONE** =" in c["content"])
    assert {"ZERO", "ONE", "LEFT", "RIGHT", "UP", "DOWN"} <= set(vector2["metadata"]["members"])
    assert "Vector2.ONE" in vector2["api_symbols"] and vector2["symbol"] == "Vector2"
    colors = [c for c in chunks if c["metadata"]["page_path"] == "classes/class_color" and c["section_path"][-1] == "Constants"]
    white = next(c for c in colors if "**WHITE** =" in c["content"])
    assert "WHITE" in white["metadata"]["members"] and "Color.WHITE" in white["api_symbols"]
    assert all(f"**{m}** =" in c["content"] for c in colors for m in c["metadata"]["members"])
    tween = next(c for c in chunks
                 if c["metadata"]["page_path"] == "classes/class_tween" and "enum **TransitionType**" in c["content"])
    assert {"TransitionType", "TRANS_LINEAR", "TRANS_SINE"} <= set(tween["metadata"]["members"])
    maps = read(out / "api_mapping.jsonl")
    assert sum(1 for m in maps if not m["mapping_id"].startswith(("migration_guide", "gdscript_syntax"))) == 1599
    report = read(out / "ingest_report.jsonl")
    assert report[-1]["pages"] == 1592 and report[-1]["pages_error"] == 0


def test_prototype_patterns_do_not_depend_on_the_hash_seed():
    """The same pages give the same records in every process, so a second `load` changes nothing."""
    import subprocess
    import sys

    code = ("from godot_rag.ingest.prototypes import _alternation; "
            "print(_alternation(['Area', 'Path', 'Tabs', 'YSort', 'AStar', 'Light', 'Joint', 'Shape', 'Spatial']))")
    out = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                          capture_output=True, text=True, check=True).stdout for seed in range(6)}
    assert len(out) == 1 and out.pop().startswith("(?<![A-Za-z0-9_])(?:Spatial|AStar|Joint|Light|Shape|YSort|Area|Path|Tabs)")


def test_records_resolve_their_code_like_a_chunk(out):
    """Each docs record stores what its code uses (resolved through the class reference), what it declares,
    and what its prose names; metadata.links does not survive into the file."""
    from godot_rag.gdscript.classref import ClassReference
    from godot_rag.gdscript.record_api import code_api, prose_mentions

    chunks = read(out / "docs_chunks.jsonl")
    rec = next(c for c in chunks
               if c["metadata"]["page_path"] == "tutorials/demo3d/player_movement" and "move_and_slide" in c["content"])
    meta = rec["metadata"]
    assert {"Input.is_action_pressed", "Vector3.ZERO"} <= set(meta["code_uses"])  # CharacterBody3D has no page here
    assert {"Input", "Vector3"} <= set(meta["code_classes"])
    assert {"speed", "direction", "delta"} <= set(meta["code_declares"])
    assert "Input.is_action_pressed" in meta["mentions"] and "Input" in meta["mentions"]
    assert all("links" not in c["metadata"] for c in chunks)
    ref = ClassReference(json.loads((out / "class_reference.json").read_text()))
    page_class = {i["page"]: c for c, i in ref.classes.items()}
    assert prose_mentions("Use a `Vector2.ZERO` here.", ["classes__class_input__d4e5f6a7.md", "https://x.org/a.html"],
                          ref, page_class) == ["Input", "Vector2", "Vector2.ZERO"]
    # A function that overrides a documented method is a callback, not a name the record chose.
    node = ClassReference({"classes": {"Node": {"inherits": None, "page": "classes/class_node",
                                                "members": {"_ready": {"kind": "method", "type": "void"}}}}})
    api = code_api("extends Node\n\nfunc _ready():\n    pass\n\nfunc _on_hit(body):\n    pass\n", node)
    assert api["code_callbacks"] == ["_ready"] and api["code_declares"] == ["_on_hit", "body"]
    assert api["code_classes"] == ["Node"]
    # Global functions and annotations are API no class owns.
    scopes = ClassReference({"classes": {"@GDScript": {"inherits": None, "page": "classes/class_@gdscript",
                                                       "members": {"@rpc": {"kind": "annotation", "type": ""}}},
                                         "@GlobalScope": {"inherits": None, "page": "classes/class_@globalscope",
                                                          "members": {"randf": {"kind": "method", "type": "float"}}}}})
    api = code_api("@rpc(\"call_local\")\nfunc roll():\n    return randf()\n", scopes)
    assert api["code_globals"] == ["@GDScript.@rpc", "@GlobalScope.randf"]


def test_each_gdscript_block_of_a_record_resolves_on_its_own():
    """A record's GDScript blocks resolve one by one (a shell or C++ block beside them no longer breaks their
    parse), a later block against the page's `extends`, bare names of the own class as its members; an
    unlabelled block counts only where it parses as GDScript."""
    from godot_rag.gdscript.record_api import add_record_api

    classes = {"Node": {"inherits": None, "page": "classes/class_node", "members": {}},
               "CharacterBody2D": {"inherits": "Node", "page": "classes/class_characterbody2d",
                                   "members": {"velocity": {"kind": "property", "type": "Vector2"},
                                               "move_and_slide": {"kind": "method", "type": "bool"}}},
               "Vector2": {"inherits": None, "page": "classes/class_vector2",
                           "members": {"x": {"kind": "property", "type": "float"}}}}
    blocks = [{"language": "gdscript", "code": "extends CharacterBody2D\n"},
              {"language": "shell", "code": "scons platform=linux target=editor -j$(nproc) ]]\n"},
              {"language": "gdscript", "code": "func _physics_process(delta):\n    velocity.x = 3\n    move_and_slide()\n"},
              {"language": "text", "code": "=====\nhandle_crash: Program crashed with signal 4\n"}]
    rec = {"content": "", "code_blocks": blocks, "metadata": {"page_path": "tutorials/p"}}
    add_record_api([rec], {"classes": classes})
    assert rec["metadata"]["code_uses"] == ["CharacterBody2D.move_and_slide", "CharacterBody2D.velocity", "Vector2.x"]
    assert "handle_crash" not in rec["metadata"]["code_declares"]


def test_a_link_to_a_class_page_names_the_member_its_text_names():
    """`[ResourceLoader.load_threaded_request](classes__class_resourceloader__d2a76b2f.md)`: the chunker keeps each
    link's text with its target, and the record's `mentions` get the member the text names on the linked class
    (`Class.member`, `member` or `member()`); the class's own name, another class's member or a link elsewhere
    names no member."""
    from godot_rag.gdscript.classref import ClassReference
    from godot_rag.gdscript.record_api import prose_mentions
    from godot_rag.ingest.markdown import strip_links_with_text

    text, links = strip_links_with_text(
        "Queue it with [ResourceLoader.load_threaded_request](classes__class_resourceloader__d2a76b2f.md).")
    assert text == "Queue it with ResourceLoader.load_threaded_request."
    assert links == [("ResourceLoader.load_threaded_request", "classes__class_resourceloader__d2a76b2f.md")]
    m = {"kind": "method", "type": "void"}
    ref = ClassReference({"classes": {
        "Object": {"inherits": None, "page": "classes/class_object", "members": {"connect": m}},
        "ResourceLoader": {"inherits": "Object", "page": "classes/class_resourceloader",
                           "members": {"load_threaded_request": m, "load_threaded_get": m}},
        "Timer": {"inherits": "Object", "page": "classes/class_timer", "members": {"start": m, "Timer": m}}}})
    page_class = {i["page"]: c for c, i in ref.classes.items()}
    res, timer = "classes__class_resourceloader__d2a76b2f.md", "../classes/class_timer.html"
    links = [["ResourceLoader.load_threaded_request", res], ["load_threaded_get()", res], ["Timer", timer],
             ["Object.connect", timer], ["start", "https://x.org/timer.html"], ["a timer", timer]]
    assert prose_mentions("", links, ref, page_class) == [
        "ResourceLoader", "ResourceLoader.load_threaded_request", "ResourceLoader.load_threaded_get", "Timer"]
    assert prose_mentions("", [res], ref, page_class) == ["ResourceLoader"]  # a bare target, as before


def test_an_ingest_reruns_when_the_code_that_resolves_a_records_code_changes():
    """A record's `code_uses` come from the GDScript parser and the resolver: a change to either must re-run an
    ingest whose pages did not change, not only a change under `ingest/`."""
    from godot_rag.ingest.state import code_files

    names = {p.as_posix().split("godot_rag/", 1)[1] for p in code_files()}
    assert {"gdscript/facts.py", "gdscript/resolve.py", "gdscript/classref.py", "gdscript/record_api.py"} <= names
