"""F's `rank` stage on the real fixture database and the shipped model: the learned ranker decides each docs record
no contradiction rejected, under rule `ranker`, with every feature's value and contribution in the trace; accepted
docs come most probable first; a reject names the feature that kept it out; `learned_ranker=false` leaves F's rules."""
from __future__ import annotations

import math

import pytest

from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.evidence.ranker_features import features_of
from godot_rag.retrieve.evidence.ranker_model import GroupModel, score
from godot_rag.retrieve.explain.why import why

PLAYER = ('extends CharacterBody2D\n\n@export var speed = 400\n\nfunc _physics_process(delta):\n'
          '\tvar direction = Input.get_vector("move_left", "move_right", "move_up", "move_down")\n'
          '\tvelocity = direction * speed\n\tmove_and_slide()\n')
CFG = RetrieveConfig(k=10, reranker="none")


def docs(res):
    return [c for c in [*res.results, *res.cut, *res.rejected] if c.table == "docs_chunks"]


@pytest.fixture(scope="module")
def ranked(retriever):
    return retriever.retrieve(PLAYER, "F", CFG, explain=True)


def test_every_docs_record_without_a_contradiction_is_decided_by_the_ranker(ranked):
    assert "rank" in ranked.trace.stage_list
    log = next(s.info for s in ranked.trace.stages if s.stage == "rank")
    assert set(log["thresholds"]) == {"guides", "api_reference"} and log["decided"] > 0
    for c in docs(ranked):
        contradicted = bool(c.decision.overrules and c.decision.overrules.contradictions) or bool(c.decision.contradictions)
        if contradicted:
            assert c.info("rank") is None and c.decision.rule != "ranker"
            continue
        r = c.info("rank")
        assert r is not None and c.decision.rule == "ranker" and c.verdict == ("accept" if r.accepted else "reject")
        assert set(r.features) == set(features_of(r.group)) == set(r.contributions)
        assert math.isclose(r.logit, r.bias + sum(r.contributions.values()), abs_tol=1e-4)
        assert math.isclose(r.p, 1 / (1 + math.exp(-r.logit)), abs_tol=1e-4) and r.accepted == (r.p >= r.threshold)


def test_accepted_docs_come_most_probable_first(ranked):
    for group in ("guides", "api_reference"):
        ps = [c.info("rank").p for c in ranked.results if c.table == "docs_chunks" and c.group == group]
        assert ps == sorted(ps, reverse=True)


def test_a_reject_names_the_feature_that_kept_it_out(ranked):
    model = GroupModel({"cosine": 2.0, "f_accepts": -3.0}, bias=0.0, threshold=0.5)
    out = score(model, "api_reference", dict.fromkeys(features_of("api_reference"), 0.0) | {"cosine": 0.5, "f_accepts": 1.0})
    assert not out["accepted"] and out["kept_out_by"] == "f_accepts" and out["contributions"]["cosine"] == 1.0
    kept_out = [c for c in docs(ranked) if c.info("rank") is not None and c.info("rank").kept_out_by]
    assert kept_out, "the shipped model keeps some fixture record out on a negative contribution"
    c = kept_out[0]
    (record,) = why(ranked, c.id)
    assert record.rule == "ranker" and record.lost_at == "rank"
    assert f"kept out most by {c.info('rank').kept_out_by}" in record.verdict


def test_learned_ranker_off_leaves_f_rules(retriever):
    res = retriever.retrieve(PLAYER, "F", CFG.model_copy(update={"learned_ranker": False}), explain=True)
    assert all(c.info("rank") is None and c.decision.rule != "ranker" for c in docs(res))
    log = next(s.info for s in res.trace.stages if s.stage == "rank")
    assert log["skipped"] == "learned_ranker is off"
