import numpy as np
import pytest

from conftest import REFERENCE_CHUNK
from godot_rag.gdscript.chunk_text import ChunkTextError
from godot_rag.gdscript.classref import ClassReference
from godot_rag.gdscript.facts import parse_chunk
from godot_rag.gdscript.resolve import resolve_uses
from godot_rag.retrieve.engine.config import ConfigError, RetrieveConfig
from godot_rag.retrieve.engine.decision import Decision
from godot_rag.retrieve.engine.trace import DocsEvidence
from godot_rag.retrieve.engine.types import Candidate
from godot_rag.retrieve.evidence.validate import (
    ValidationScope,
    copied_page_overrules,
    docs_evidence,
    mapping_evidence,
    mapping_occurrences,
    other_members_overruled,
)
from godot_rag.retrieve.explain.why import why
from godot_rag.retrieve.migration.version import VersionMarkers
from godot_rag.retrieve.query.segment import split_segments
from godot_rag.retrieve.recall.codematch import clone_match, renameable_names
from godot_rag.retrieve.recall.prefilter import dropped_ids

GODOT3 = "extends KinematicBody2D\n\nfunc _process(delta):\n    $AnimatedSprite.play()\n    var n = name.get_len()"
GODOT4 = "extends CharacterBody2D\n\nfunc _process(delta):\n    $AnimatedSprite2D.play()\n    var n = name.get_length()"


def ids(result, table="docs_chunks"):
    return [c.id for c in result.by_table(table)]


def test_a_is_todays_tsquery_and_explains_zero_hits(retriever):
    res = retriever.retrieve(REFERENCE_CHUNK, "A", RetrieveConfig(k=5))
    assert res.results == []  # every token ANDed: no chunk holds them all
    docs = res.trace.tables["docs_chunks"]
    assert docs["row_count"] == 0
    diag = docs["zero_hit_diagnosis"]
    assert diag["best_row"].startswith("getting_started/demo/coding_the_player#")
    assert diag["missing_from_best"] and set(diag["best_subset"]).isdisjoint(diag["missing_from_best"])
    counts = {t["token"]: t["rows"] for t in diag["token_rows"]}
    assert counts["func"] > 0 and "'" in res.trace.tsquery and "&" in res.trace.tsquery
    ok = retriever.retrieve("timeout connect", "A", RetrieveConfig(k=5))
    assert ids(ok)[0].startswith("tutorials/demo/signals#") and ok.results[0].info("tsquery").ts_rank_cd > 0


def test_b_explains_every_matched_term(retriever):
    res = retriever.retrieve(REFERENCE_CHUNK, "B", RetrieveConfig(k=5, segments=False))
    top = res.by_table("docs_chunks")[0]
    assert top.id.startswith("getting_started/demo/coding_the_player#")
    bm = top.info("explain")
    assert {"df", "tf", "idf", "tfn", "contribution"} <= set(bm.matched_terms[0])
    assert bm.dl > 0 and bm.avgdl > 0
    assert abs(sum(t["contribution"] for t in bm.matched_terms) - top.score) < 1e-2
    assert abs(top.info("bm25").score - top.score) < 1e-3 and top.info("cut").rank == 1
    tokenize = next(s for s in res.trace.stages if s.stage == "tokenize")
    assert "velocity" in tokenize.info["local_names"]  # declared by the chunk itself
    assert res.trace.stage_list == ["segment", "tokenize", "bm25", "union", "merge", "cut", "explain"]


def test_c_and_d_union_sources(retriever):
    c = retriever.retrieve(REFERENCE_CHUNK, "C", RetrieveConfig(k=5))
    cos = [x.info("embedding").cosine for x in c.by_table("docs_chunks")]
    assert cos == sorted(cos, reverse=True) and all(-1 <= x <= 1 for x in cos)
    d = retriever.retrieve(REFERENCE_CHUNK, "D", RetrieveConfig(k=10))
    docs = d.by_table("docs_chunks")
    assert docs[0].id.startswith("getting_started/demo/coding_the_player#")
    assert {x.source for x in docs} <= {"bm25", "embedding", "both"} and "both" in {x.source for x in docs}
    fused = docs[0].info("fuse")
    assert fused.method == "maxnorm" and set(fused.inputs) == {"bm25", "embedding"}
    assert docs[0].info("union").source == docs[0].source == "both"
    expected = sum(fused.weights[n] * e.normalised for n, e in fused.inputs.items())
    assert abs(fused.score - expected) < 1e-5
    rrf = retriever.retrieve(REFERENCE_CHUNK, "D", RetrieveConfig(k=5, fusion="rrf", codematch_alpha=0, segments=False))
    top = rrf.by_table("docs_chunks")[0].info("fuse")
    assert top.rrf_k == 60
    expected = sum(top.weights[n] / (60 + e.rank) for n, e in top.inputs.items())
    assert abs(top.score - expected) < 1e-6


def test_f_accepts_direct_evidence_and_rejects_the_rest(retriever):
    res = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10, reranker="nanoranker"))
    accepted = ids(res)
    assert accepted and accepted[0].startswith("getting_started/demo/coding_the_player#")
    top = res.by_table("docs_chunks")[0]
    lits = [e.literal for e in top.info("validate").evidence]
    assert "Input.is_action_pressed" in lits and top.verdict == "accept"
    rr = top.info("rerank")
    assert rr is not None and rr.backend == "nanoranker" and rr.rank_change == (rr.rank_before or rr.rank) - rr.rank
    # the final score is its own traced stage: score_before x (0.5 + 0.5 x confidence)
    sc = top.info("score")
    assert sc.confidence_from == "validate" and abs(sc.score - sc.score_before * (0.5 + 0.5 * sc.confidence)) < 1e-5
    assert abs(top.score - sc.score) < 1e-5
    movement_3d = [c for c in res.results + res.rejected if c.id.startswith("tutorials/demo3d/player_movement#")]
    assert movement_3d, "the 3D page must reach the validator for this test to mean anything"
    for c in movement_3d:  # rejected, not just demoted, and the reason says why
        assert c.verdict == "reject" and "contradiction" in c.reason and "Vector3" in c.reason
    assert res.by_table("api_mapping") == []
    assert not [p for p in res.by_table("label_prototypes") if p.payload["task_type"] == "migration"]


def test_f_migration_evidence_never_comes_from_comments_or_strings(retriever):
    chunk = ('extends CharacterBody2D\n# Was a KinematicBody2D in Godot 3.\nfunc _ready():\n'
             '    print("KinematicBody2D is gone")\n    $AnimatedSprite2D.play()\n')
    res = retriever.retrieve(chunk, "F", RetrieveConfig(k=10, reranker="none"))
    assert ids(res, "api_mapping") == []
    assert not [p for p in res.by_table("label_prototypes") if p.payload["task_type"] == "migration"]
    rej = next(c for c in res.rejected if c.id == "class_renames:KinematicBody2D->CharacterBody2D")
    regions = {o.region for o in rej.info("validate").occurrences}
    assert regions == {"comment", "string"} and "no occurrence is Godot 3 use" in rej.reason
    hinted = retriever.retrieve("func f(v: Viewport):\n    pass\n", "F", RetrieveConfig(k=10, godot_version="3"))
    plain = retriever.retrieve("func f(v: Viewport):\n    pass\n", "F", RetrieveConfig(k=10))
    assert plain.trace.resolve is not None and plain.trace.version["hint"] == "auto"
    assert hinted.trace.version["hint"] == "3"


def test_f_a_node_path_is_never_evidence_of_engine_api(retriever):
    """A scene node named after a class (`$AnimatedSprite`, `$Light/TimeOfDay/Value`) is a node's name: no mapping,
    with or without version markers or a hint."""
    mapping = "class_renames:AnimatedSprite->AnimatedSprite2D"
    bare = "func _ready():\n    $AnimatedSprite.play()\n    get_node(\"AnimatedSprite/Shadow\").hide()\n"
    for cfg in (RetrieveConfig(k=10, reranker="none"), RetrieveConfig(k=10, reranker="none", godot_version="3")):
        res = retriever.retrieve(bare, "F", cfg)
        assert mapping not in ids(res, "api_mapping")
        rej = next(c for c in res.rejected if c.id == mapping)
        occ = rej.info("validate").occurrences
        assert occ and all(o.status == "ignored" and o.rule == "node_path_is_no_api" for o in occ)


def test_f_trace_and_json_name_the_version_rule_of_each_occurrence(retriever):
    import json

    from godot_rag.formats import result_json
    from godot_rag.retrieve.migration.version_rules import OCCURRENCE_RULES

    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(k=10, reranker="none"))
    kinematic = next(c for c in res.results if c.id == "class_renames:KinematicBody2D->CharacterBody2D")
    assert [(o.status, o.rule) for o in kinematic.info("validate").occurrences] == [("godot3", "class_dropped")]
    node = next(c for c in res.results + res.rejected if c.id == "class_renames:AnimatedSprite->AnimatedSprite2D")
    assert node.info("validate").occurrences[0].rule == "node_path_is_no_api"
    named = {r.name for r in OCCURRENCE_RULES}
    decided = [o.rule for c in res.results + res.rejected if c.table == "api_mapping" for o in c.info("validate").occurrences]
    assert decided and all(r for r in decided) and "class_dropped" in named
    # The same names in the JSON the CLI, HTTP and MCP write.
    data = json.loads(result_json(res))
    occ = next(c for c in data["results"] if c["id"] == kinematic.id)["trace"]["validate"]["occurrences"]
    assert occ[0]["rule"] == "class_dropped" and occ[0]["why"] == kinematic.info("validate").occurrences[0].why


def test_f_class_name_passed_as_a_string_to_a_class_name_argument_is_a_use(retriever):
    mapping = "class_renames:KinematicBody2D->CharacterBody2D"
    chunk = 'func _enter_tree():\n    add_custom_type("Mover", "KinematicBody2D", preload("mover.gd"), null)\n'
    res = retriever.retrieve(chunk, "F", RetrieveConfig(k=10, reranker="none"))
    acc = next(c for c in res.results if c.id == mapping).info("validate")
    assert acc.occurrences[0].region == "string" and acc.occurrences[0].status == "godot3"
    assert "class-name argument" in acc.occurrences[0].why
    # The same name in a string that is no class-name argument stays no use.
    said = retriever.retrieve('func _ready():\n    print("KinematicBody2D")\n', "F", RetrieveConfig(k=10, reranker="none"))
    assert mapping not in ids(said, "api_mapping")


def test_f_migration_mappings(retriever):
    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(k=10, reranker="none"))
    got = set(ids(res, "api_mapping"))
    assert {"class_renames:KinematicBody2D->CharacterBody2D", "gdscript_function_renames:get_len->get_length"} <= got
    assert "class_renames:AnimatedSprite->AnimatedSprite2D" not in got  # `$AnimatedSprite`: a scene node's name
    assert "csharp_function_renames:GetLen->GetLength" not in got
    assert "migration:godot3_class_name" in ids(res, "label_prototypes")
    clean = retriever.retrieve(GODOT4, "F", RetrieveConfig(k=10, reranker="none"))
    assert ids(clean, "api_mapping") == []  # AnimatedSprite is not in AnimatedSprite2D
    # dropped by the prefilter before any candidate was built; "why not" gives the validator's reason from the record
    assert "class_renames:AnimatedSprite->AnimatedSprite2D" in dropped_ids(clean.trace)
    (why_not,) = why(clean, "class_renames:AnimatedSprite->AnimatedSprite2D", retriever.records("api_mapping"))
    assert why_not.lost_at == "validate" and "source_api 'AnimatedSprite' does not occur in the chunk" in why_not.verdict


def _decisions(res):
    return [(c.table, c.id, c.group, c.rank, c.score, c.reason) for c in res.results]


def test_f_prefilter_changes_no_decision(retriever, monkeypatch):
    """The api_mapping prefilter only saves work: with it off, F returns the same records, scores and reasons
    (the fusion normalises over the full lists), and the validator rejects each dropped mapping for not occurring."""
    from godot_rag.retrieve.recall import prefilter

    cfg = RetrieveConfig(k=10, reranker="none")
    on = {chunk: retriever.retrieve(chunk, "F", cfg) for chunk in (GODOT3, GODOT4, REFERENCE_CHUNK)}
    monkeypatch.setattr(prefilter, "cannot_occur", lambda facts, records, rid: False)
    for chunk, res in on.items():
        off = retriever.retrieve(chunk, "F", cfg)
        dropped = prefilter.dropped_ids(res.trace)
        assert dropped and not prefilter.dropped_ids(off.trace)
        assert _decisions(res) == _decisions(off)
        assert not {c.id for c in res.rejected + res.cut} & dropped
        records = retriever.records("api_mapping")
        for c in off.rejected:
            if c.id in dropped:
                assert c.reason.startswith(prefilter.absent_reason(records[c.id]["source_api"]))


def test_f_lists_leave_the_derived_prototypes_to_the_check(retriever):
    """The label_prototypes derived from the class reference (`api:...`, many) take no place in F's BM25 and
    embedding lists, so the hand-written prototypes are never crowded out (a Godot 3 enum constant's finding was);
    D's lists still hold them, and F's check stage still accepts the derived one a finding names."""
    cfg = RetrieveConfig(k=10, reranker="none")
    derived = [rid for rid in retriever.records("label_prototypes") if rid.startswith("api:")]
    assert derived, "the fixture database holds derived prototypes for this test to mean anything"
    godot3 = ("extends Node2D\n\nfunc _input(event):\n"
              "\tif event is InputEventMouseButton and event.button_index == BUTTON_LEFT:\n\t\tpass\n")
    f = retriever.retrieve(godot3, "F", cfg)
    lists = f.trace.candidate_ids["label_prototypes"]
    assert lists["bm25"] and lists["embedding"]
    assert not [rid for stage in ("bm25", "embedding") for rid in lists[stage] if rid.startswith("api:")]
    hand = [rid for rid in retriever.records("label_prototypes") if not rid.startswith("api:")]
    assert set(lists["embedding"]) <= set(hand)
    d = retriever.retrieve(godot3, "D", cfg)
    assert any(rid.startswith("api:") for rid in d.trace.candidate_ids["label_prototypes"]["embedding"])
    typo = 'extends Node\n\nfunc _process(delta):\n\tif Input.is_action_presed("jump"):\n\t\tpass\n'
    wrong = retriever.retrieve(typo, "F", cfg)
    assert any(c.id.startswith("api:missing_engine_member") for c in wrong.by_table("label_prototypes"))


def test_the_prefilter_reads_each_mappings_source_name_once(retriever, monkeypatch):
    """The prefilter keeps each mapping's source name with the records (`records.derived`): a second query reads
    no payload for it, and drops what `source_absent` drops."""
    from godot_rag.retrieve.recall import prefilter

    cfg = RetrieveConfig(k=10, reranker="none")
    first = retriever.retrieve(GODOT4, "F", cfg)
    records = retriever.records("api_mapping")
    names = records.derived["source_name"]
    assert prefilter.dropped_ids(first.trace) <= set(names)
    facts = parse_chunk(GODOT4)
    assert all(prefilter.cannot_occur(facts, records, rid) == prefilter.source_absent(facts, records[rid]) for rid in names)
    monkeypatch.setattr(prefilter, "source_name", lambda payload: pytest.fail("a source name was read again"))
    again = retriever.retrieve(GODOT4, "F", cfg)
    assert _decisions(again) == _decisions(first)
    assert prefilter.dropped_ids(again.trace) == prefilter.dropped_ids(first.trace)


def test_the_union_and_the_fusion_share_the_lists_entries(retriever, monkeypatch):
    """Each text's list entries (rank and score per list) are worked out once a query, for the union and the
    fusion both; the answer is the one of working them out twice."""
    from godot_rag.retrieve.recall import fuse

    cfg = RetrieveConfig(k=10, reranker="none")
    before = retriever.retrieve(REFERENCE_CHUNK, "D", cfg, explain=True)
    calls = []
    real = fuse.list_entries
    monkeypatch.setattr(fuse, "list_entries", lambda lists, whole=True: calls.append(1) or real(lists, whole))
    after = retriever.retrieve(REFERENCE_CHUNK, "D", cfg, explain=True)
    union = next(s.info for s in after.trace.stages if s.stage == "union")
    texts = sum(union[t]["texts"] for t in cfg.tables if t in union)
    assert texts > len(cfg.tables) and len(calls) == texts  # the reference chunk has segments: several texts
    assert [c.model_dump() for c in after.results] == [c.model_dump() for c in before.results]


@pytest.mark.parametrize("method", ["maxnorm", "minmax", "zscore", "rrf"])
def test_fusion_of_prefiltered_lists_equals_the_full_lists(method):
    """A list the prefilter thinned is normalised over its full scores: the kept candidates fuse as before."""
    from godot_rag.retrieve.recall.fuse import Fusion, fused_inputs, fused_scores, union

    def cands(scores, source):
        return [Candidate.of_record("api_mapping", f"m{i}", {}, s, rank, source)
                for rank, (i, s) in enumerate(scores, 1)]

    bm25 = cands([(0, 9.0), (1, 7.5), (2, 3.0), (3, 1.0)], "bm25")
    emb = cands([(2, 0.8), (4, 0.7), (0, 0.5)], "embedding")
    weights = {"bm25": 1.0, "embedding": 0.3}
    full = {"bm25": bm25, "embedding": emb}
    whole = dict(zip((c.id for c in union(full)), fused_scores(union(full), full, Fusion(method, weights, 60))))
    keep = {"m2", "m3", "m4"}  # the best of each list dropped
    thin = {name: [c for c in lst if c.id in keep] for name, lst in full.items()}
    scores = {name: np.asarray([c.score for c in lst]) for name, lst in full.items()}
    merged = union(thin, whole=False)
    got = dict(zip((c.id for c in merged), fused_scores(merged, thin, Fusion(method, weights, 60), scores)))
    assert set(got) == keep
    for cid, (score, inputs) in got.items():
        assert score == pytest.approx(whole[cid][0], abs=1e-12)
        assert {n: e.rank for n, e in fused_inputs(inputs).items()} == {n: e.rank for n, e in fused_inputs(whole[cid][1]).items()}


def _cand(table, payload):
    return Candidate(table=table, id="x", payload=payload)


def _vctx(chunk: str) -> ValidationScope:
    facts = parse_chunk(chunk)
    ref = ClassReference({})
    return ValidationScope(facts=facts, resolution=resolve_uses(facts, ref), ref=ref, renamed_classes={},
                           version=VersionMarkers(), idf=lambda t: 6.0, class_of_page={},
                           renameable=renameable_names(facts, ref))


def _mapping_verdict(chunk: str, cand) -> Decision:
    v = _vctx(chunk)
    return mapping_evidence(v, cand, mapping_occurrences(v, cand))


def test_evidence_respects_identifier_boundaries_and_near_misses():
    facts = parse_chunk("var v = Vector2.ZERO\n$AnimatedSprite2D.play()  # AnimatedSprite in a comment")
    m = _cand("api_mapping", {"source_api": "AnimatedSprite", "target_api": "AnimatedSprite2D", "change_type": "class_rename",
                              "match_terms": ["AnimatedSprite"], "negative_patterns": [], "confidence": 1.0})
    out = _mapping_verdict("$AnimatedSprite2D.play()", m)
    assert not out.accepted and "does not occur" in out.reasons[0] and out.rule == "source_absent"
    in_comment = _mapping_verdict("$AnimatedSprite2D.play()  # was AnimatedSprite", m)
    assert not in_comment.accepted and "comment" in in_comment.reasons[0] and in_comment.rule == "no_godot3_use"
    neg = _cand("api_mapping", {"source_api": "export", "target_api": "@export", "change_type": "syntax_change",
                                "match_terms": ["re:(?m)^\\s*export(?:\\s*\\([^)]*\\))?\\s+var\\b"],
                                "negative_patterns": ["@export"],
                                "confidence": 0.9})
    assert not _mapping_verdict("@export var speed = 400", neg).accepted
    assert _mapping_verdict("export var speed = 400", neg).accepted
    doc = _cand("docs_chunks", {"content": "var direction = Vector3.ZERO\nCharacterBody3D", "code_blocks": [],
                                "api_symbols": ["Vector3.ZERO"]})
    ev = docs_evidence(_vctx("var v = Vector2.ZERO\nextends CharacterBody2D"), doc).decision
    assert {c.literal for c in ev.contradictions} == {"Vector3", "CharacterBody3D"}
    assert all(e.literal != "Vector2" for e in ev.evidence)
    assert facts.identifiers >= {"Vector2", "AnimatedSprite2D"} and "AnimatedSprite" not in facts.identifiers


def _doc(page: str, code: str, symbols: list[str]):
    return Candidate(table="docs_chunks", id=f"{page}#000", payload={
        "content": "", "api_symbols": symbols, "metadata": {"page_path": page},
        "code_blocks": [{"language": "gdscript", "code": code}]})


def test_a_chunk_copied_from_a_guide_has_that_page_as_its_evidence():
    chunk = ("func _on_timer_timeout():\n    var mob = mob_scene.instantiate()\n    mob.position = spawn.position\n"
             "    add_child(mob)\n    score_label.text = str(score)\n")
    v = _vctx(chunk)
    copied = _doc("tutorials/spawning", chunk.rsplit("    score_label", 1)[0], ["Node.add_child", "PackedScene.instantiate"])
    # Another page that shows one of the same lines and the same call: the same evidence again.
    again = _doc("tutorials/scenes", "var mob = mob_scene.instantiate()\nadd_child(mob)", ["PackedScene.instantiate"])
    # A page that also shows a line the copied page does not have (`str(score)` here) adds to it: kept.
    more = _doc("tutorials/ui", "score_label.text = str(score)\nvar mob = mob_scene.instantiate()", ["Label.text"])
    before = [(c, docs_evidence(v, c).decision) for c in (copied, again, more)]
    assert all(d.accepted for _, d in before)
    docs = copied_page_overrules(v, before)
    verdicts = {c.page: d for c, d in docs}
    assert verdicts["tutorials/spawning"].accepted and verdicts["tutorials/ui"].accepted
    assert not verdicts["tutorials/scenes"].accepted
    assert verdicts["tutorials/scenes"].copied_from == "tutorials/spawning"
    assert "the chunk copies tutorials/spawning (4 of its 5 code lines)" in verdicts["tutorials/scenes"].reasons[0]
    assert verdicts["tutorials/spawning"].copy_source and verdicts["tutorials/ui"].copy_source is None
    assert verdicts["tutorials/scenes"].clone_lines == (2, 4)  # the chunk's own line numbers
    # The overrule is a new decision under its rule that keeps the one it overruled; nothing is changed in place.
    assert verdicts["tutorials/scenes"].rule == "copied_page" and verdicts["tutorials/scenes"].overrules == before[1][1]
    assert before[1][1].accepted and verdicts["tutorials/ui"] is before[2][1]
    # A record with the same lines but a rare name the copied page does not show adds to it: kept.
    named = _doc("tutorials/mobs", "var mob = mob_scene.instantiate()\nadd_child(mob)\nscore_label.hide()",
                 ["PackedScene.instantiate"])
    docs = [(c, docs_evidence(v, c).decision) for c in (copied, again, named, again)]
    # A class-reference entry documents the member itself: kept even when it shows nothing more.
    docs[3] = (docs[3][0], docs[3][1].model_copy(update={"page_class": "Node"}))
    assert all(d.accepted for _, d in docs)
    docs = copied_page_overrules(v, docs)
    assert [d.accepted for _, d in docs] == [True, False, True, True]
    assert docs[3][1].copied_from is None
    # Two copied pages: a record is measured against each alone, and named after the one that shows it all.
    head, tail = chunk.splitlines()[:3], [chunk.splitlines()[i] for i in (1, 3, 4)]
    first, second = _doc("tutorials/a_first", "\n".join(head), []), _doc("tutorials/b_second", "\n".join(tail), [])
    docs = copied_page_overrules(v, [(c, docs_evidence(v, c).decision) for c in (first, second, again)])
    assert [d.copy_source for _, d in docs[:2]] == [True, True]
    assert docs[2][1].copied_from == "tutorials/b_second"  # lines 2 and 4: the first page lacks line 4
    # A chunk that copies no page (fewer than 3 of its lines anywhere) keeps every guide it had.
    v2 = _vctx("var mob = mob_scene.instantiate()\nadd_child(mob)\nprint(mob.name)\n")
    docs2 = copied_page_overrules(v2, [(c, docs_evidence(v2, c).decision) for c in (copied, again)])
    assert all(d.accepted for _, d in docs2)


def _guide(page: str, api: list[str], lines: list[int], classes: list[str] = (), p: float = 0.6, **fields):
    """An accepted guide's decision as the validator leaves it, with the model's basis."""
    c = Candidate(table="docs_chunks", id=f"{page}#000", payload={"content": "", "metadata": {"page_path": page}})
    model = {"p": p, "shared_api": [{"api": a, "specificity": 0.5, "from": "code"} for a in api], "shared_globals": [],
             "shared_callbacks": [], "shared_classes": list(classes), **fields.pop("model", {})}
    return c, Decision(**{"accepted": True, "rule": "guide_model", "confidence": 0.5, "model": model,
                          "clone_lines": tuple(lines), **fields})


def test_a_guide_that_shows_nothing_new_is_the_same_evidence_again():
    from godot_rag.retrieve.evidence.docs_overrules import same_evidence_overrules

    def decisions(*guides):
        return [d for _, d in same_evidence_overrules(list(guides))]

    move = ["Input.is_action_pressed", "CharacterBody3D.move_and_slide"]
    # A tutorial's step pages repeat its script: the page retrieved first stays, a later one showing no more goes,
    # whatever the model's P(direct) says of it.
    step3 = _guide("tutorials/first_3d_game/03", move, [3, 4], ["CharacterBody3D"], p=0.5)
    step7 = _guide("tutorials/first_3d_game/07", move[:1], [4], ["CharacterBody3D"], p=0.9)
    # A page that shows one more line of the chunk adds to it, and one that shows one more shared member too.
    step9 = _guide("tutorials/first_3d_game/09", move, [3, 4, 8], ["CharacterBody3D"])
    physics = _guide("tutorials/physics/intro", [*move, "Vector3.UP"], [], ["CharacterBody3D"])
    # A class page documents the members themselves: kept, though it shows nothing more.
    entry = _guide("classes/class_input", move[:1], [], page_class="Input")
    out = decisions(step3, step7, step9, physics, entry)
    assert [d.accepted for d in out] == [True, False, True, True, True]
    assert out[1].repeats == "tutorials/first_3d_game/03" and out[1].rules == ("same_evidence",)
    assert out[1].reasons == ("shows nothing of the chunk that the page tutorials/first_3d_game/03, retrieved "
                              "before it, does not show too: the same evidence again",)
    assert out[1].rule == "same_evidence" and out[1].overrules is step7[1] and step7[1].accepted
    # Pages are compared whole: two records that each show part of what an earlier page shows, and together more,
    # keep their page; a third record of that page that shows nothing its first one does not goes.
    earlier = _guide("tutorials/a", move[:1], [3])
    b1, b2, b3 = (_guide("tutorials/b", api, lines) for api, lines in ((move[:1], [3]), (move[1:], []), (move[:1], [])))
    for i, (c, _) in enumerate((b1, b2, b3)):
        c.id = f"tutorials/b#00{i}"
    out = decisions(earlier, b1, b2, b3)
    assert [d.accepted for d in out] == [True, True, True, False]
    assert out[3].repeats == "tutorials/b#000" and "the record of its page tutorials/b#000" in out[3].reasons[0]
    # Names either side chose are no evidence, so a guide that shares only those besides is the same evidence;
    # a rejected guide shows nothing to compare with.
    name = DocsEvidence(literal="score_label", kind="identifier", weight=6.0, chunk_line=1)
    named = _guide("tutorials/d", move[:1], [3], evidence=(name,))
    rejected = _guide("tutorials/e", [*move, "Vector3.UP"], [3, 4], accepted=False)
    out = decisions(rejected, earlier, named)
    assert [d.accepted for d in out] == [False, True, False] and out[2].repeats == "tutorials/a"
    # The page the chunk copies goes first and stays; an earlier page that shows no more than it goes.
    early = _guide("tutorials/f", move[:1], [3])
    copied = _guide("tutorials/copied", move, [3, 4, 5], copy_source=True)
    out = decisions(early, copied)
    assert [d.accepted for d in out] == [False, True] and out[0].repeats == "tutorials/copied"
    # A record whose code the chunk copies stays, and so does a guide that shows nothing at all (accepted on its
    # likeness, for a chunk that uses no API): it repeats nothing.
    copy = _guide("tutorials/g", move[:1], [3], model={"copied_code": True})
    likeness, likeness2 = _guide("tutorials/h", [], []), _guide("tutorials/i", [], [])
    assert all(d.accepted for d in decisions(_guide("tutorials/a", move, [3, 4]), copy, likeness, likeness2))


def test_segments_and_code_clone_match():
    segs = split_segments("extends Node\n\nfunc a():\n    pass\n    pass\n\nfunc b():\n    return 1\n    return 2")
    assert len(segs) == 2 and segs[1].startswith("func b")
    assert len(split_segments(REFERENCE_CHUNK)) == 3  # one function, three paragraphs
    ratio, lines = clone_match("v1.autostart = true\nv1.wait_time = 0.5", "timer.autostart = true\ntimer.wait_time = 0.5")
    assert ratio == 1.0 and lines == [1, 2]
    ratio, _ = clone_match("v1.autostart = false", "timer.autostart = true")
    assert ratio == 0.0
    # A comment is no part of the line, even one with an apostrophe; a `#` in a string is.
    ratio, _ = clone_match("var v1 = Vector2.ZERO", "var velocity = Vector2.ZERO # The player's movement vector.")
    assert ratio == 1.0
    ratio, _ = clone_match('modulate = Color("#fff")', 'modulate = Color("#000")  # black')
    assert ratio == 0.0


def test_bad_requests(retriever):
    with pytest.raises(ChunkTextError) as e:
        retriever.retrieve("   \n", "B")
    assert e.value.status == 422
    with pytest.raises(ChunkTextError) as e:
        retriever.retrieve("x" * 20001, "B")
    assert e.value.status == 413
    with pytest.raises(ConfigError, match="valid strategies: A, B, C, D, E, F"):
        retriever.retrieve("func f(): pass", "Z")
    with pytest.raises(ConfigError, match="unknown fusion"):
        RetrieveConfig(fusion="magic")


def test_f_reads_wide_api_mapping_lists_from_bm25_and_embedding(retriever):
    """F takes up to 200 api_mapping candidates from each list, whatever `candidates` says for the docs."""
    res = retriever.retrieve(GODOT3, "F", RetrieveConfig(k=10, reranker="none", candidates=5))
    lists = res.trace.candidate_ids["api_mapping"]
    n_rows = len(retriever.records("api_mapping"))
    assert n_rows > 5
    assert len(lists["embedding"]) == min(200, n_rows)
    assert len(res.trace.candidate_ids["docs_chunks"]["embedding"]) == 5


def test_explain_renders_for_every_strategy_without_an_llm(retriever):
    """`retrieve --explain` prints the stage list and each table for A, B, C, D and F (E needs an LLM)."""
    from godot_rag.render import render_table

    for strategy in "ABCDF":
        text = render_table(retriever.retrieve(GODOT3, strategy, RetrieveConfig(k=5, reranker="none")), explain=True)
        assert text.startswith(f"strategy {strategy}") and "== api_mapping:" in text, strategy


def test_loaded_records_are_kept_out_of_the_garbage_collectors_walks(retriever):
    """The records, indexes and models stay for the process's life: a full collection must not walk them
    again every few queries (gc.freeze when they are loaded)."""
    import gc

    retriever.retrieve(GODOT3, "F", RetrieveConfig())
    payload = next(iter(retriever.records("docs_chunks").values()))
    assert gc.is_tracked(payload) and gc.get_freeze_count() > 0
    assert not any(o is payload for o in gc.get_objects())
    # a model loaded as a trace step (`load:<label>`) is frozen the same way
    from godot_rag.retrieve.engine.state import QueryState

    model = {}
    ctx = QueryState(chunk=GODOT3, strategy="F", cfg=RetrieveConfig(), resources=retriever)
    ctx.load_step("model", False, lambda: model.setdefault("weights", {"layer": [0.5]}))
    assert model["weights"] is not None and not any(o is model["weights"] for o in gc.get_objects())
    assert [s.stage for s in ctx.trace.stages] == ["load:model"]


def test_a_query_s_own_objects_do_not_set_off_the_garbage_collector(retriever):
    """A query keeps thousands of objects alive until it ends: once the records are loaded, the youngest
    generation has room for them, so a query is not paused by collections that walk them and push them into
    the older generations (under the default threshold, 700, an F query met several)."""
    import gc

    from godot_rag.retrieve.engine.state import YOUNG_GC_THRESHOLD

    retriever.retrieve(GODOT3, "F", RetrieveConfig())
    assert gc.get_threshold()[0] >= YOUNG_GC_THRESHOLD
    seen: list[int] = []

    def count(phase, info):
        if phase == "start" and info["generation"] < 2:
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        for chunk in (GODOT3, GODOT3 + "\n\tvar n = get_child_count()\n", "func _ready():\n\t$Timer.start(2.0)\n"):
            retriever.retrieve(chunk, "F", RetrieveConfig())
    finally:
        gc.callbacks.remove(count)
    assert len(seen) <= 1, seen
    # an application that turned automatic collection off (threshold 0) keeps it off
    from godot_rag.retrieve.engine.state import freeze_loaded

    kept = gc.get_threshold()
    gc.set_threshold(0, *kept[1:])
    try:
        freeze_loaded()
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*kept)


def test_a_stage_list_whose_contracts_do_not_fit_is_refused_when_the_strategy_is_built():
    from godot_rag.retrieve.engine.stage import ContractError
    from godot_rag.retrieve.evidence.final import CUT
    from godot_rag.retrieve.evidence.validate import VALIDATE
    from godot_rag.retrieve.migration.version_stage import VERSION
    from godot_rag.retrieve.query.parse import PARSE, RESOLVE
    from godot_rag.retrieve.query.segment import SEGMENT, TOKENIZE
    from godot_rag.retrieve.recall.fuse import UNION
    from godot_rag.retrieve.recall.lexical import BM25
    from godot_rag.retrieve.recall.tsquery import TSQUERY
    from godot_rag.retrieve.strategies import STRATEGIES, Strategy

    # F without its version stage: the validator would read markers nobody wrote.
    with pytest.raises(ContractError, match="strategy X: stage 'validate' needs 'version: VersionDecisions', which no "
                                            "earlier stage provides"):
        Strategy("X", "no version stage", [PARSE, RESOLVE, SEGMENT, TOKENIZE, BM25, UNION, VALIDATE])
    # Reordered: the version stage before the candidates it decides.
    with pytest.raises(ContractError, match="stage 'version' needs 'pool: "):
        Strategy("X", "version first", [PARSE, RESOLVE, VERSION, SEGMENT, TOKENIZE, BM25, UNION, VALIDATE])
    with pytest.raises(ContractError, match="'pool' is set by two stages, 'tsquery' and 'union'"):
        Strategy("X", "two candidate sources", [TSQUERY, SEGMENT, TOKENIZE, BM25, UNION, CUT])
    assert [s.stage_names[-1] for s in STRATEGIES.values()] == ["cut", "explain", "cut", "explain", "profile_diff", "explain"]


def test_a_stage_gets_only_the_parts_it_declares_as_typed_parameters():
    """A stage is a typed function: the runner passes it the parts its parameters name, nothing else, and stores the
    fields of the NamedTuple it returns. What it does not declare it cannot read: the query state holds no parts."""
    from typing import NamedTuple

    from godot_rag.gdscript.facts import GDScriptFacts
    from godot_rag.retrieve.engine.stage import ContractError, MissingPart, Stage, run_stages
    from godot_rag.retrieve.engine.state import QueryState
    from godot_rag.retrieve.query.parse import PARSE, RESOLVE
    from godot_rag.retrieve.strategies import Strategy

    seen: dict[str, object] = {}

    class Counted(NamedTuple):
        calls: int

    def counter(q: QueryState, facts: GDScriptFacts, calls: int | None = None) -> Counted:
        seen.update(facts=facts, calls=calls)
        return Counted((calls or 0) + 1)

    def recount(q: QueryState, calls: int) -> Counted:
        return Counted(calls + 1)

    ctx = QueryState(chunk="var a = 1", strategy="X", cfg=RetrieveConfig(), resources=None)
    parts = run_stages(ctx, [PARSE, Stage("counter", counter, ""), Stage("recount", recount, "")])
    assert isinstance(seen["facts"], GDScriptFacts) and seen["calls"] is None  # optional, and no stage set it
    assert parts["calls"] == 2 and set(parts) == {"facts", "calls"}
    # Reading a part through the query state is impossible: it has none.
    def sneaky(q: QueryState) -> None:
        q["resolved"]  # type: ignore[index]

    with pytest.raises(TypeError):
        run_stages(QueryState(chunk="var a = 1", strategy="X", cfg=RetrieveConfig(), resources=None),
                   [PARSE, Stage("sneaky", sneaky, "")])
    # A stage that sets a part another stage set, without taking it as input, is refused when the strategy is built.
    with pytest.raises(ContractError, match="'calls' is set by two stages, 'counter' and 'again'"):
        Strategy("X", "twice", [PARSE, Stage("counter", counter, ""), Stage("again", lambda_free_counter(), "")])
    # An untyped input, or an output that is not a NamedTuple, is refused when the stage is made.
    with pytest.raises(ContractError, match="input 'facts' has no type"):
        Stage("untyped", lambda q, facts: None, "")

    def loose(q: QueryState) -> dict:
        return {}

    with pytest.raises(ContractError, match="stage 'loose': returns dict, not a NamedTuple of its outputs"):
        Stage("loose", loose, "")
    with pytest.raises(ContractError, match="has no option\\(s\\) fast"):
        Stage("counter", counter, "", {"fast": True})
    # Run without the contract check: a required input nobody set is an error, never a silent None.
    with pytest.raises(MissingPart, match="stage 'recount' needs 'calls'"):
        run_stages(QueryState(chunk="x", strategy="X", cfg=RetrieveConfig(), resources=None), [Stage("recount", recount, "")])
    assert RESOLVE.requires_names == ["facts"] and RESOLVE.provides_names == ["resolved"]


def lambda_free_counter():
    """A stage function that sets `calls` without taking it (for the contract test above)."""
    from typing import NamedTuple

    from godot_rag.retrieve.engine.state import QueryState

    class Counted(NamedTuple):
        calls: int

    def again(q: QueryState) -> Counted:
        return Counted(0)

    return again


def test_two_stages_that_disagree_on_a_parts_type_are_refused_when_the_strategy_is_built():
    """A part is read under its name and with the type of the stage that provides it; another type is refused when
    the strategy is built, before any query."""
    from godot_rag.retrieve.engine.stage import ContractError, Stage
    from godot_rag.retrieve.engine.state import QueryState
    from godot_rag.retrieve.query.parse import PARSE
    from godot_rag.retrieve.strategies import Strategy

    def reader(q: QueryState, facts: str) -> None:
        pass

    with pytest.raises(ContractError, match=r"stage 'reader' reads 'facts: str', but 'parse' provides 'facts: GDScriptFacts'"
                                            r": the two stages disagree"):
        Strategy("X", "mismatch", [PARSE, Stage("reader", reader, "")])


def test_candidates_made_without_validation_equal_validated_ones():
    """`Candidate._unvalidated` sets pydantic's instance attributes itself (pydantic is pinned below 3 for it):
    what it makes must behave as a validated candidate does."""
    made = Candidate.of_record("docs_chunks", "p#0", {"content": "x"}, 0.5, 1, "bm25")
    valid = Candidate(table="docs_chunks", id="p#0", payload={"content": "x"}, score=0.5, rank=1, source="bm25")
    assert made == valid and made.model_dump() == valid.model_dump() and made.model_dump_json() == valid.model_dump_json()
    assert made.model_fields_set == valid.model_fields_set
    copy = made.derive()
    copy.score = 0.25
    assert copy.model_copy(update={"rank": 2}).rank == 2 and made.score == 0.5 and copy.trace is not made.trace
    assert Candidate.model_validate_json(copy.model_dump_json()) == copy


def test_f_guides_are_decided_by_the_fitted_model_with_readable_arithmetic(retriever):
    """A guide's verdict carries each feature's value and contribution; P(direct) is the sigmoid of their sum
    and the bias, compared with the stored threshold; without the model the rules decide and no model is traced."""
    import math

    from godot_rag.retrieve.evidence.docs_features import FEATURES

    res = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10))
    guides = [c for c in res.results + res.rejected if c.table == "docs_chunks" and not c.id.startswith("classes/")]
    assert guides
    for c in guides:
        m = c.info("validate").model
        assert m is not None and set(m["features"]) == set(FEATURES) == set(m["contributions"])
        logit = m["bias"] + sum(m["contributions"].values())
        assert abs(logit - m["logit"]) < 1e-3 and abs(1 / (1 + math.exp(-logit)) - m["p"]) < 1e-3
        assert m["accepted"] == (m["p"] >= m["threshold"] or bool(m.get("copied_code")))
        if c.verdict == "reject" and not c.info("validate").copied_from:
            assert "contradiction" in c.reason or "P(direct)" in c.reason
    # The copied page's code is evidence by fact; the 3D page stays a contradiction.
    assert res.by_table("docs_chunks")[0].id.startswith("getting_started/demo/coding_the_player#")
    assert all(c.verdict == "reject" for c in res.results + res.rejected if c.id.startswith("tutorials/demo3d/"))
    rules = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10, guide_model=False))
    assert all(c.info("validate").model is None for c in rules.results + rules.rejected if c.table == "docs_chunks")


def test_a_migration_finding_points_at_each_old_name_where_it_is(retriever):
    """Each old name the finding matched carries its own line and mapping, not another occurrence's."""
    chunk = "var s: AnimatedSprite\n\nfunc _ready():\n    var k: KinematicBody2D = null\n    var t: AnimatedSprite\n"
    res = retriever.retrieve(chunk, "F", RetrieveConfig(k=10, reranker="none"))
    finding = next(p for p in res.by_table("label_prototypes") if p.id == "migration:godot3_class_name")
    evidence = finding.info("validate").evidence
    where = {(e.literal, e.chunk_line, e.mapping_id.split(":")[1].split("->")[0]) for e in evidence}
    assert where == {("AnimatedSprite", 1, "AnimatedSprite"), ("KinematicBody2D", 4, "KinematicBody2D"),
                     ("AnimatedSprite", 5, "AnimatedSprite")}


def test_a_class_page_section_that_shares_only_the_class_is_no_direct_evidence():
    """The class's description is evidence for a chunk that uses the class; its method table, tutorial list or
    another member's description, sharing nothing but the class name, is the right topic and nothing more."""
    facts = parse_chunk("func build(menu: PopupMenu):\n    menu.add_item(\"Options\")\n")
    ref = ClassReference({"classes": {"PopupMenu": {"inherits": None, "page": "classes/class_popupmenu",
                                                    "members": {"add_item": {"kind": "method", "type": "void"}}}}})
    v = ValidationScope(facts=facts, resolution=resolve_uses(facts, ref), ref=ref, renamed_classes={}, version=VersionMarkers(),
                          idf=lambda t: 6.0, class_of_page={"classes/class_popupmenu": "PopupMenu"},
                          renameable=renameable_names(facts, ref))

    def section(n: int, path: list[str]) -> Candidate:
        return Candidate(table="docs_chunks", id=f"classes/class_popupmenu#{n:03d}", payload={
            "content": "PopupMenu is a modal window.", "api_symbols": ["PopupMenu"], "section_path": path,
            "metadata": {"page_path": "classes/class_popupmenu"}, "code_blocks": []})

    description = docs_evidence(v, section(0, ["PopupMenu"])).decision
    table = docs_evidence(v, section(3, ["PopupMenu", "Methods"])).decision
    assert [i.literal for i in description.evidence] == [i.literal for i in table.evidence] == ["PopupMenu"]
    assert description.accepted, description.reasons
    assert not table.accepted and table.rule == "class_name_only"
    assert table.rules == ("class_name_only",) and "other than its description" in table.reasons[0]


def test_a_class_page_section_of_other_members_gives_way_to_the_one_that_describes_the_chunks_api():
    """A section of member entries is evidence for the members it describes. One that names the chunk's member
    only in another member's description gives way to an accepted section of the page that describes it; alone,
    it stays as the page of a class the chunk uses. A setter counts as its property, a constant as its enum, and a
    name the chunk calls on a receiver the resolver cannot type counts as that member."""
    members = {"add_item": {"kind": "method", "type": "void"}, "add_check_item": {"kind": "method", "type": "void"},
               "set_item_checked": {"kind": "method", "type": "void"},
               "ItemType": {"kind": "enum", "type": "ItemType"}, "ITEM_CHECK": {"kind": "constant", "type": "ItemType"},
               "hide_on_checkable_item_selection": {"kind": "property", "type": "bool"},
               "set_hide_on_checkable_item_selection": {"kind": "method", "type": "void",
                                                        "accessor_of": "hide_on_checkable_item_selection"}}
    ref = ClassReference({"classes": {"PopupMenu": {"inherits": None, "page": "classes/class_popupmenu", "members": members}}})

    def context(chunk: str) -> ValidationScope:
        facts = parse_chunk(chunk)
        return ValidationScope(facts=facts, resolution=resolve_uses(facts, ref), ref=ref, renamed_classes={},
                                 version=VersionMarkers(), idf=lambda t: 6.0,
                                 class_of_page={"classes/class_popupmenu": "PopupMenu"}, renameable=renameable_names(facts, ref))

    def section(n: int, described: list[str]) -> Candidate:
        text = ("void add_check_item(label)\n\nAdds a checkable item. Check it with menu.set_item_checked().\n\n"
                "void set_item_checked(index, checked)\n\nbool hide_on_checkable_item_selection\n\n"
                "set_hide_on_checkable_item_selection(value)")
        return Candidate(table="docs_chunks", id=f"classes/class_popupmenu#{n:03d}", payload={
            "content": text, "api_symbols": [f"PopupMenu.{m}" for m in members], "code_blocks": [],
            "section_path": ["PopupMenu", "Method Descriptions"],
            "metadata": {"page_path": "classes/class_popupmenu", "members": described}})

    def verdicts(chunk: str, *sections: list[str]) -> list[dict]:
        v = context(chunk)
        docs = [(c, docs_evidence(v, c).decision) for c in (section(n, m) for n, m in enumerate(sections))]
        assert all(d.accepted for _, d in docs), [d.reasons for _, d in docs]
        return [d.model_dump(mode="json") for _, d in other_members_overruled(v, docs)]

    checks = "func f(menu: PopupMenu):\n    menu.set_item_checked(0, true)\n"
    mention, entry = verdicts(checks, ["add_check_item"], ["set_item_checked"])
    assert entry["accepted"] and not mention["accepted"] and mention["rules"] == ["other_members"]
    assert mention["reasons"] == ["describes PopupMenu's add_check_item, none of which the chunk uses (it uses "
                                  "set_item_checked); classes/class_popupmenu#001 is this page's evidence for the chunk"]
    # Alone, the first such section stays (the page of a class the chunk uses); a second one gives way to it.
    assert [i["accepted"] for i in verdicts(checks, ["add_check_item"], ["add_item"])] == [True, False]
    setter = "func f(menu: PopupMenu):\n    menu.set_hide_on_checkable_item_selection(false)\n"
    assert all(i["accepted"] for i in verdicts(setter, ["add_check_item"], ["hide_on_checkable_item_selection"])[1:])
    assert [i["accepted"] for i in verdicts(setter, ["hide_on_checkable_item_selection"], ["add_check_item"])] == [True, False]
    constant = ("func f(menu: PopupMenu):\n    if menu.get_item_type(0) == PopupMenu.ITEM_CHECK:\n"
                "        menu.set_item_checked(0, true)\n")
    assert [i["accepted"] for i in verdicts(constant, ["set_item_checked"], ["ItemType"])] == [True, True]
    untyped = ("func f(menu: PopupMenu, menus):\n    menu.add_item(\"A\")\n    for other in menus:\n"
               "        other.set_item_checked(0, true)\n")
    assert [i["accepted"] for i in verdicts(untyped, ["add_check_item"], ["set_item_checked"])] == [False, True]


def test_min_api_specificity_rejects_the_entry_of_a_generic_member_and_keeps_the_specific_ones():
    """A member entry the chunk resolves to is evidence unless its resolved uses are all less specific than
    `min_api_specificity` (a member most docs records and real chunks use: `Node.add_child`): then it is rejected as
    generic, named with its specificity; the entry of a member few use (`Timer.start`) stays. Another section of the
    generic member's page, which names it only in another member's entry, does not stand in for it."""
    from godot_rag.retrieve.evidence.docs_stats import DocsApiStats
    from godot_rag.retrieve.evidence.guide_model import GuideModel

    ref = ClassReference({"classes": {
        "Node": {"inherits": None, "page": "classes/class_node", "members": {"add_child": {"kind": "method", "type": "void"}}},
        "Timer": {"inherits": "Node", "page": "classes/class_timer", "members": {"start": {"kind": "method", "type": "void"}}}}})
    stats = DocsApiStats(ref, 1000, {"Node.add_child": 300, "Timer.start": 3}, {}, {"Node.add_child": 0.2})
    model = GuideModel.from_dict({"weights": {}, "bias": 0.0, "threshold": 0.5})
    facts = parse_chunk("extends Node\n\nfunc arm(timer: Timer):\n    self.add_child(timer)\n    timer.start()\n")
    entries = [Candidate(table="docs_chunks", id=f"classes/class_{cls.lower()}#010", payload={
        "content": f"void {member}()\n\nThe {cls} entry.", "symbol": f"{cls}.{member}", "code_blocks": [],
        "section_path": [cls, "Method Descriptions"],
        "metadata": {"page_path": f"classes/class_{cls.lower()}", "members": [member]}})
        for cls, member in (("Node", "add_child"), ("Timer", "start"))]

    mention = Candidate(table="docs_chunks", id="classes/class_node#011", payload={
        "content": "void remove_child(node)\n\nRemoves a child added with parent.add_child().", "symbol": "Node.remove_child",
        "api_symbols": ["Node.remove_child"], "code_blocks": [], "section_path": ["Node", "Method Descriptions"],
        "metadata": {"page_path": "classes/class_node", "members": ["remove_child"]}})

    def verdicts(least: float, *more: Candidate) -> list[dict]:
        v = ValidationScope(facts=facts, resolution=resolve_uses(facts, ref), ref=ref, renamed_classes={},
                              version=VersionMarkers(), idf=lambda t: 6.0, renameable=renameable_names(facts, ref),
                              class_of_page={"classes/class_node": "Node", "classes/class_timer": "Timer"},
                              guide_model=(model, stats), min_api_specificity=least)
        docs = [(c, docs_evidence(v, c).decision) for c in [*entries, *more]]
        return [d.model_dump(mode="json") for _, d in other_members_overruled(v, docs)]

    assert stats.member_specificity("Node.add_child") < 0.16 < stats.member_specificity("Timer.start")
    assert [i["accepted"] for i in verdicts(0.0)] == [True, True]
    node, timer = verdicts(0.16)
    assert timer["accepted"] and not node["accepted"] and node["rules"] == ["generic_api"]
    assert node["reasons"][0].startswith("documents only generic API the chunk uses: Node.add_child (specificity 0.")
    ref.classes["Node"]["members"]["remove_child"] = {"kind": "method", "type": "void"}
    assert [i["accepted"] for i in verdicts(0.0, mention)] == [True, True, False]  # the entry is the page's evidence
    node, timer, mentioned = verdicts(0.16, mention)
    assert not node["accepted"] and timer["accepted"] and not mentioned["accepted"] and mentioned["rules"][-1] == "other_members"
    assert mentioned["reasons"][-1].endswith("what the chunk uses of this page is generic (classes/class_node#010)")
    assert RetrieveConfig().min_api_specificity == 0.16
    with pytest.raises(ConfigError, match="min_api_specificity"):
        RetrieveConfig(min_api_specificity=2.0)


def test_a_stage_info_given_for_later_is_built_when_read_and_in_every_result(retriever):
    """Infos most candidates never show (they stop at the shortlist) are built only when read, or when the
    candidate leaves in a result: a result's JSON holds every info, built, as before."""
    from godot_rag.retrieve.engine.trace import Bm25Info, Pending, later

    c = Candidate.of_record("docs_chunks", "x", {"content": "c"}, 1.5, 1, "bm25")
    c.add_stage("bm25", later(Bm25Info, score=1.5, rank=1))
    copy = c.derive()
    assert type(c.trace["bm25"]) is Pending
    assert c.info("bm25") == Bm25Info(score=1.5, rank=1)
    assert type(copy.trace["bm25"]) is Pending  # a copy builds its own
    assert copy.settle().trace["bm25"] == Bm25Info(score=1.5, rank=1)
    with pytest.raises(TypeError, match="records a EmbeddingInfo, not Bm25Info"):
        c.add_stage("embedding", later(Bm25Info, score=1.0, rank=2))
    with pytest.raises(ValueError, match="already explained"):
        c.add_stage("bm25", later(Bm25Info, score=1.0, rank=2))

    res = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10), explain=True)
    shown = res.results + res.rejected + res.cut
    assert shown and all(type(i) is not Pending for s in shown for i in s.trace.values())
    assert {"bm25", "fuse", "codematch"} <= set(next(s for s in shown if s.table == "docs_chunks").trace)
    assert '"fuse":{"method":"maxnorm"' in res.model_dump_json()


def test_the_class_a_chunk_extends_is_a_use_whose_description_is_evidence(retriever):
    """`extends CharacterBody2D` in the chunk itself: the class's description joins the `api` source and is accepted
    (its evidence `extends CharacterBody2D`), though the chunk calls nothing of the class. Not from the `extends`
    setting (a hint, as a scan gives every chunk of a file), and `--set api_extends=false` turns it off."""
    from godot_rag.retrieve.engine.config import RetrieveConfig

    desc = "classes/class_characterbody2d#000"
    chunk = "extends CharacterBody2D\n\nconst SPEED = 300.0\nvar jumps := 0\n"

    def accepted(code, **settings):
        res = retriever.retrieve(code, "F", RetrieveConfig(**settings))
        return {c.id: c for c in res.by_table("docs_chunks")}

    got = accepted(chunk)
    assert desc in got and got[desc].source.endswith("api")
    assert got[desc].info("validate").evidence[0].literal == "extends CharacterBody2D"
    assert got[desc].info("api").uses[0].via == "extends"
    assert desc not in accepted(chunk, api_extends=False)
    assert desc not in accepted("const SPEED = 300.0\nvar jumps := 0\n", extends="CharacterBody2D")


def test_a_class_the_chunk_writes_as_a_type_is_a_use_whose_description_is_evidence(retriever):
    """With `--set api_typed=true`, `var sprite: AnimatedSprite2D` in a chunk that calls nothing of it: the class's
    description joins the `api` source, its evidence the declaration. A value type written as a type (`Vector2`)
    gets none, and the default (off) adds nothing."""
    from godot_rag.retrieve.engine.config import RetrieveConfig

    desc = "classes/class_animatedsprite2d#000"
    chunk = "var sprite: AnimatedSprite2D\nvar aim: Vector2\n"

    def accepted(code, **settings):
        res = retriever.retrieve(code, "F", RetrieveConfig(**settings))
        return {c.id: c for c in res.by_table("docs_chunks")}

    got = accepted(chunk, api_typed=True)
    assert desc in got and got[desc].info("validate").evidence[0].literal == "sprite: AnimatedSprite2D"
    assert got[desc].info("api").uses[0].via == "typed"
    assert not any(rid.startswith("classes/class_vector2#") for rid in got)
    assert desc not in accepted(chunk)
