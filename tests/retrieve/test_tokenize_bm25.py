import math

import numpy as np

from godot_rag.gdscript.tokenize import TokenizerConfig, identifier_parts, local_names, tokenize
from godot_rag.retrieve.recall import bm25


def test_identifiers_kept_whole_and_strings_tokenized():
    toks = tokenize('if Input.is_action_pressed(&"move_right"):\n\t$AnimatedSprite2D.play()  # x = 1')
    assert "is_action_pressed" in toks and "animatedsprite2d" in toks and "move_right" in toks
    assert "x" not in toks and "1" not in toks  # one-letter identifiers and numbers are dropped


def test_optional_parts_and_dotted():
    cfg = TokenizerConfig(parts=True, dotted=True)
    toks = tokenize("position.clamp(Vector2.ZERO, screen_size) AnimatedSprite2D", cfg)
    assert {"position.clamp", "vector2.zero", "screen", "size", "animated", "sprite"} <= set(toks)
    assert identifier_parts("isActionPressed") == ["is", "action", "pressed"]


def test_local_names_are_the_chunks_own_spellings_only():
    """Tokens are lowercased: `var sprite = $Top/Sprite` must not silence the class `Sprite`."""
    chunk = "onready var sprite = $Top/Area/Sprite\nfunc f(v1, delta):\n\tvar timer = Timer.new()\n\tsprite.x = v1 * delta\n"
    assert local_names(chunk) == {"v1", "delta"}
    assert local_names("var my_timer = 1\nfor item in items:\n\tpass\n") == {"my_timer", "item"}


def test_bm25_matches_hand_computed_values():
    docs = [["godot", "node", "node"], ["godot", "scene"], ["vector2", "clamp", "node", "scene", "tree"]]
    index = bm25.build_index(["a", "b", "c"], docs, bm25.BM25Params(k1=1.2, b=0.75))
    avgdl = (3 + 2 + 5) / 3
    # term "node": df=2, N=3 -> idf = ln(1 + (3-2+0.5)/(2+0.5))
    idf_node = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    tfn_a = 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 3 / avgdl))
    idf_clamp = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    tfn_c_node = 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 5 / avgdl))
    tfn_c_clamp = tfn_c_node
    scores = bm25.score(index, ["node", "clamp", "node", "missing"])
    assert np.allclose(scores, [idf_node * tfn_a, 0.0, idf_node * tfn_c_node + idf_clamp * tfn_c_clamp])
    exp = bm25.explain(index, ["node", "clamp"], 2)
    terms = {t["term"]: t for t in exp["matched_terms"]}
    assert terms["clamp"]["df"] == 1 and terms["node"]["df"] == 2 and terms["node"]["tf"] == 1
    assert math.isclose(exp["score"], scores[2], rel_tol=1e-3)
    assert exp["dl"] == 5 and math.isclose(exp["avgdl"], round(avgdl, 2))
    assert bm25.top_k(scores, 2) == [2, 0]


def test_all_query_texts_scored_in_one_product_match_one_by_one():
    docs = [["move_and_slide", "velocity", "velocity"], ["queue_free", "timer"], ["velocity", "timer", "timer", "x"],
            ["input", "is_action_pressed"]]
    index = bm25.build_index(["a", "b", "c", "d"], docs)
    queries = [["velocity", "timer"], ["timer", "unknown"], ["nothing"], ["is_action_pressed", "velocity", "velocity"]]
    weights = {"timer": 0.5}
    together = bm25.score_many(index, queries, weights)
    assert together.shape == (4, 4)
    for i, q in enumerate(queries):
        assert np.allclose(together[:, i], bm25.score(index, q, weights))
    assert together[:, 0].max() > 0 and not together[:, 2].any()
    assert index.position == {"a": 0, "b": 1, "c": 2, "d": 3}


def test_a_chain_starts_where_a_name_starts():
    """CHAIN_RE finds what `Name(.Name)+` finds scanning from every position (a name after digits included),
    but tries a chain only where a name starts (the look-behind that keeps it linear in a long name)."""
    import re

    from godot_rag.gdscript.lexicon import CHAIN_RE, IDENT

    every_position = re.compile(rf"{IDENT}(?:\.{IDENT})+")
    for text in ["Vector2.ZERO.x", "9abc.def", "x9abc.def", "_a.b", "12_x.y", "a.b c", "name_without_dot " * 3 + "p.q",
                 "a..b", "$Sprite2D.play()", "self.position.x = Input.get_axis()"]:
        assert [m.span() for m in CHAIN_RE.finditer(text)] == [m.span() for m in every_position.finditer(text)]
    assert CHAIN_RE.pattern.startswith("(?<![A-Za-z_])")
