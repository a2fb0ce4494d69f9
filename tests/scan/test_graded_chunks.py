"""A scan's graded chunks, as `godot-rag fit-ranker --scan PREFIX=SCAN_DIR` reruns them."""
import json

import pytest

from godot_rag.scan.graded_chunks import ScanChunksError, scan_queries


def test_a_scans_graded_chunks_come_back_with_their_projects_context(tmp_path):
    root = tmp_path / "game"
    root.mkdir()
    (root / "project.godot").write_text("config_version=5\n")
    (root / "player.gd").write_text("class_name Player\nextends Node2D\n\nfunc hit():\n    pass\n")
    out = tmp_path / "scan-out"
    out.mkdir()
    (out / "scan.json").write_text(json.dumps({"root": str(root)}))
    rows = [{"file": "player.gd", "project": ".", "chunk": n, "chunkText": text,
             "context": {"file_path": "player.gd", "extends": "Node2D", "godot_version": "4"}}
            for n, text in enumerate(["class_name Player\nextends Node2D", "func hit():\n    pass"])]
    (out / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = scan_queries("game", out, {"game:player.gd#1"})
    assert [(qid, text) for qid, text, _ in got] == [("game:player.gd#1", "func hit():\n    pass")]
    context = got[0][2]
    assert context is not None and context.extends == "Node2D" and context.file_path == "player.gd"
    assert any(s.name == "Player" for s in context.project_symbols or [])


def test_a_scan_without_its_scan_json_or_project_is_named(tmp_path):
    with pytest.raises(ScanChunksError, match=r"scan\.json"):
        scan_queries("x", tmp_path, set())
    (tmp_path / "scan.json").write_text(json.dumps({"root": str(tmp_path / "gone")}))
    with pytest.raises(ScanChunksError, match="gone"):
        scan_queries("x", tmp_path, set())
