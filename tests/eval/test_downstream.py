"""The evidence rendered for a model's prompt, and the downstream bench's scoring of a model's answers,
on the real fixture database and class reference."""
from godot_rag.eval.downstream import bootstrap, claims_of, code_of, ratio_bootstrap, score_port, score_review
from godot_rag.evidence_prompt import estimate_tokens, render_payloads, render_prompt
from godot_rag.retrieve.engine.config import RetrieveConfig

GODOT3 = "extends KinematicBody2D\n\nfunc _process(delta):\n    $AnimatedSprite.play()\n    var n = name.get_len()"
GOLD = [("class_renames", "KinematicBody2D", "CharacterBody2D"), ("gdscript_function_renames", "get_len", "get_length")]


def test_prompt_rendering_keeps_why_each_record_was_accepted_within_its_budget(retriever):
    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(k=10, reranker="none"))
    text = render_prompt(res, 2000)
    assert "- KinematicBody2D -> CharacterBody2D (class rename, line 1)" in text
    assert "- get_len -> get_length (method rename, line 5)" in text
    assert "Reviewer findings:" in text and "Action:" in text
    # A finding names the code it matched and the replacement an accepted mapping gives it.
    assert "called by its Godot 3 name: `get_len` -> `get_length`. Action:" in text
    full = "\n".join(str(c.payload) for c in res.results)
    assert estimate_tokens(text) * 2 <= estimate_tokens(full)
    # Whole entries only, mappings first: a small budget keeps the renames and drops the rest.
    small = render_prompt(res, 40)
    assert small.startswith("Godot 3 -> 4 API changes this chunk uses:") and "Action:" not in small
    assert estimate_tokens(small) <= 40


def test_full_payloads_are_whole_records_and_a_long_one_does_not_shut_out_the_rest(retriever):
    import json

    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(k=10, reranker="none"))
    sizes = [estimate_tokens(json.dumps(c.payload, ensure_ascii=False)) + 1 for c in res.results if c.verdict != "reject"]
    assert len(sizes) >= 2
    # A budget that the largest record alone passes: it is left out wherever it ranks, smaller ones still come.
    budget = max(sizes) - 1
    assert min(sizes) <= budget
    lines = render_payloads(res, budget).splitlines()
    assert lines and all(isinstance(json.loads(ln), dict) for ln in lines)
    assert max(sizes) - 1 not in [estimate_tokens(ln) for ln in lines]
    assert estimate_tokens("\n".join(lines)) <= budget
    assert render_payloads(res, sum(sizes)).count("\n") == len(sizes) - 1  # a budget for all: every record


def test_prompt_rendering_of_nothing_is_empty(retriever):
    res = retriever.retrieve("func _ready():\n    pass", "F", RetrieveConfig(k=5, reranker="none", tables=["api_mapping"]))
    assert render_prompt(res) == ""


def test_a_port_is_scored_by_parsing_its_code(retriever):
    ref, godot3 = retriever.class_reference(), retriever.renames().old
    good = "Here it is:\n```gdscript\nextends CharacterBody2D\n\nfunc _process(delta):\n    var n = name.get_length()\n```"
    s = score_port(good, GOLD, ref, godot3)
    assert (s.renamed, s.gold, s.leftovers, s.parse_failed) == (2, 2, [], False)
    # The old name left in code counts, in a comment it does not; a rename only counts when the old name is gone.
    half = ("```gdscript\nextends KinematicBody2D # was CharacterBody2D\n\n"
            "func _process(delta):\n    var n = name.get_length()\n```")
    s = score_port(half, GOLD, ref, godot3)
    assert s.renamed == 1 and s.leftovers == ["KinematicBody2D"]
    invented = "```gdscript\nextends CharacterBody2D\nfunc _ready():\n    Input.is_action_pressedd(\"x\")\n```"
    assert score_port(invented, [], ref, godot3).invented == ["Input.is_action_pressedd"]
    assert score_port("```gdscript\nfunc (:\n```", GOLD, ref, godot3).parse_failed


def test_a_review_is_scored_by_its_claims():
    answer = ('Problems: {"problems": [{"line": 1, "name": "KinematicBody2D", "fix": "CharacterBody2D"}, '
              '{"line": 3, "name": "foo"}]}')
    assert len(claims_of(answer)) == 2
    assert score_review(answer, GOLD) == {"claims": 2, "parsed": True, "gold": 2, "found": 1, "unmatched": 1}
    assert score_review('{"problems": []}', []) == {"claims": 0, "parsed": True, "gold": 0, "found": 0, "unmatched": 0}
    assert score_review("no JSON at all", [])["parsed"] is False
    # Text after the JSON is ignored; an answer cut off by its token limit counts by its complete problems,
    # and one cut off inside its first problem is no answer.
    assert score_review('{"problems": []}\nNote: {"x": 1}', [])["parsed"] is True
    cut = '{"problems": [{"line": 1, "name": "KinematicBody2D", "fix": "CharacterBody2D"}, {"line": 4, "na'
    assert score_review(cut, GOLD) == {"claims": 1, "parsed": True, "gold": 2, "found": 1, "unmatched": 0}
    assert score_review('{"problems": [{"line": 1, "na', GOLD)["parsed"] is False
    assert code_of("no fence") == "no fence"


def test_bootstrap_intervals_hold_the_mean():
    mean, lo, hi = bootstrap([0.0, 1.0, 1.0, 0.0, 1.0], seed=1)
    assert mean == 0.6 and lo <= mean <= hi and lo >= 0.0 and hi <= 1.0
    value, lo, hi = ratio_bootstrap([1, 2, 0], [2, 2, 1], seed=1)
    assert value == 0.6 and lo <= value <= hi
