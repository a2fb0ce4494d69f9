"""End to end on the real pages: all of ../shared/godot_docs/pages through ingest and load, the
reference chunk through B, D and F. To keep the suite short, only the tutorials under
getting_started/ are embedded (the dense side of D/F searches those); BM25 covers every chunk."""

import pytest

from conftest import SHARED
from godot_rag.examples import REFERENCE_CHUNK
from godot_rag.ingest.pipeline import run_ingest
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.embed import embed_rows
from godot_rag.store.load import load_jsonl

pytestmark = pytest.mark.slow
CODING = "getting_started/first_2d_game/03.coding_the_player#"
MOVEMENT_3D = "getting_started/first_3d_game/03.player_movement_code"


@pytest.fixture(scope="module")
def full(make_database, embedder, tmp_path_factory):
    out = tmp_path_factory.mktemp("full-jsonl")
    run_ingest(SHARED / "godot_docs" / "pages", SHARED / "godot_docs" / "renames_3_to_4.jsonl", out, quiet=True)
    db = make_database("full")
    load_jsonl(db, out, quiet=True)
    embed_rows(db, embedder, quiet=True, only="getting_started/")
    return Retriever(db, embedder=embedder, cache_dir=tmp_path_factory.mktemp("full-cache"))


def test_reference_chunk_on_the_full_pages(full):
    b = full.retrieve(REFERENCE_CHUNK, "B", RetrieveConfig(k=5))
    assert b.by_table("docs_chunks")[0].id.startswith(CODING)
    d = full.retrieve(REFERENCE_CHUNK, "D", RetrieveConfig(k=5))
    top = [c.id for c in d.by_table("docs_chunks")]
    assert top[0].startswith(CODING) and top[1].startswith(CODING)
    assert all(not t.startswith(MOVEMENT_3D) for t in top[:2])
    f = full.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5))
    accepted = [c for c in f.by_table("docs_chunks")]
    assert accepted[0].id.startswith(CODING) and accepted[0].verdict == "accept"
    lits = {e.literal for e in accepted[0].info("validate").evidence}
    assert {"Input.is_action_pressed", "AnimatedSprite2D.play", "AnimatedSprite2D.stop"} <= lits
    coding_conf = min(c.info("validate").confidence for c in accepted if c.id.startswith(CODING))
    movement = [c for c in f.results + f.rejected + f.cut if c.id.startswith(MOVEMENT_3D)]
    assert movement, "the 3D page must reach the validator for this test to mean anything"
    assert all(c.verdict == "reject" or (c.info("validate").confidence < coding_conf and (c.rank or 99) > 2)
               for c in movement)
    # The chunk copies coding_the_player: the other guides that show nothing more are rejected, and say so.
    assert all(c.id.startswith(CODING) for c in accepted if not c.id.startswith("classes/"))
    # F's rules accept the entries of Input and Vector2 the chunk calls; the learned ranker holds them to its
    # api_reference threshold (P 0.57-0.85 here, below the 0.90 chosen for the precision targets).
    rules = full.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5, learned_ranker=False)).by_table("docs_chunks")
    assert {"Input", "Vector2"} <= {c.info("validate").page_class for c in rules if c.id.startswith("classes/")}
    copies = [c for c in f.rejected + f.cut if c.table == "docs_chunks" and c.info("validate").copied_from]
    assert copies and all(c.info("validate").copied_from == CODING.rstrip("#") and "the chunk copies" in c.reason
                          for c in copies)
    assert f.by_table("api_mapping") == []
    assert not [p for p in f.by_table("label_prototypes") if p.payload["task_type"] == "migration"]
    a = full.retrieve(REFERENCE_CHUNK, "A", RetrieveConfig(k=5))
    assert a.results == [] and a.trace.tables["docs_chunks"]["zero_hit_diagnosis"]["best_row"].startswith(CODING)
