"""The ranker over F's docs candidates (`godot-rag fit-ranker`): its folds, figures and model file, end to end on
the fixture database."""
import json

import numpy as np
import pytest

from conftest import FIXTURES
from godot_rag.eval.guide_fit import ROOT, data_digest
from godot_rag.eval.ranker_fit import RankerOptions, choose, folds_of, project_of
from godot_rag.eval.ranker_metrics import ndcg, selection_metrics
from godot_rag.eval.ranker_run import RankerData, default_judged, fit_ranker, queries_of
from godot_rag.retrieve.evidence.ranker_features import RANKER_FEATURES, features_of
from godot_rag.store import ranker_model


def test_a_project_is_the_demo_folder_or_the_scan_prefix_and_folds_keep_it_whole():
    demo = "demos:2d/bullet_shower"
    assert project_of("rc4:2d/bullet_shower/player.gd#0") == project_of("rc3:2d/bullet_shower/bullets.gd#2") == demo
    assert project_of("beehave:addons/beehave/blackboard.gd#0") == "beehave"
    keys = ["a", "b", "a", "c", "b", "d"]
    fold = folds_of(keys, 3)
    assert all(fold[i] == fold[j] for i in range(6) for j in range(6) if keys[i] == keys[j])
    assert folds_of(keys, 3).tolist() == fold.tolist()  # stable


def test_figures_by_hand():
    grades = {("q", "x"): 2, ("q", "y"): 0, ("q", "z"): 2, ("r", "w"): 1}
    m = selection_metrics({"q": ["x", "y", "u"]}, grades, {"q", "r"}, {})
    assert (m["graded"], m["ungraded"], m["share2"], m["share0"], m["recall"], m["chunks_given"]) == (2, 1, 0.5, 0.5, 0.5, 1.0)
    assert ndcg({"q": ["x", "z"]}, grades, {"q"})["ndcg@5"] == 1.0  # both grade-2 records first: the ideal order
    assert ndcg({"q": ["y", "x"]}, grades, {"q"})["ndcg@5"] < 1.0
    points = [{"threshold": 0.3, "share2": 0.8, "share0": 0.05, "recall": 0.9},
              {"threshold": 0.6, "share2": 0.9, "share0": 0.0, "recall": 0.5}]
    assert choose(points, "guides")["threshold"] == 0.6 and choose(points, "guides")["met"]
    assert not choose(points[:1], "guides")["met"]


def test_the_shipped_ranker_names_its_data_and_its_digest_holds():
    """The shipped model names the grade files it was fitted on, in order, and they still hash to its digest
    (`fit-ranker` without --judged reads the pool, then every data/grades/ file by name: a new grade file asks
    for a refit)."""
    model = ranker_model.read()
    assert model is not None
    named = [(ROOT / p).resolve() for p in model["fitted_on"]["judged"]]
    assert set(named) <= {p.resolve() for p in default_judged()} and data_digest(named) == model["data_digest"]
    assert set(model["groups"]) == {"guides", "api_reference"}
    assert set(model["groups"]["guides"]["weights"]) == set(features_of("guides"))


def test_fit_ranker_end_to_end_on_the_fixture_database(retriever, tmp_path):
    """A tiny graded file over the fixture chunks: the fit runs F and D, caches the rows, and refits the same model
    from the cache (the digest names the graded file)."""
    queries = queries_of([FIXTURES / "queries.jsonl"], {"fx:player#process", "fx:signals#timer", "fx:3d#move", "fx:mixed"})
    fit_ranker(retriever, RankerData(queries, [], tmp_path / "probe.json"), RankerOptions(folds=2, quiet=True))
    graded = tmp_path / "graded.jsonl"
    rows = json.loads((tmp_path / "probe.json").read_text())["rows"]  # F's candidates, graded below
    assert rows and set(RANKER_FEATURES) <= set(rows[0]["features"])
    graded.write_text("".join(json.dumps({"query_id": r["query_id"], "record_id": r["record_id"], "grade": 2 * (i % 2)})
                              + "\n" for i, r in enumerate(rows)))
    data = RankerData(queries, [graded], tmp_path / "rows.json")
    opts = RankerOptions(folds=2, quiet=True)
    got = fit_ranker(retriever, data, opts)["model"]
    again = fit_ranker(retriever, data, opts)["model"]  # from the cache
    assert (tmp_path / "rows.json").exists() and got == again
    assert got["data_digest"] == data_digest([graded])
    figures = got["out_of_fold"]["all"]
    assert {"F", "D_top10", "ranker", "ndcg"} <= set(figures) and figures["chunks"] == len(queries)
    assert all(np.isfinite(w) for g in got["groups"].values() for w in g["weights"].values())
    ranker_model.write(got, tmp_path / "model.json")
    assert ranker_model.read(tmp_path / "model.json") == json.loads(json.dumps(got))


def test_a_bad_model_file_names_the_field(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"groups": {"guides": {}}}))
    with pytest.raises(ranker_model.RankerModelError, match="groups"):
        ranker_model.read(p)
