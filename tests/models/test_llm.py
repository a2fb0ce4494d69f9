"""Real Qwen 0.5B (bundled GGUF) in process and behind a real llama.cpp OpenAI-compatible server."""
import json
import subprocess
import sys

import pytest

from conftest import REFERENCE_CHUNK, free_port, start_http_server
from godot_rag.models.llm import LLMError, OpenAICompatLLM, assemble_bundled, make_llm, verify_gguf
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.engine.state import QueryState
from godot_rag.retrieve.evidence.judge_questions import check_cited
from godot_rag.retrieve.pipeline import ModelFiles, Retriever, run_stages
from godot_rag.retrieve.query.segment import TOKENIZE
from godot_rag.retrieve.recall.lexical import BM25
from godot_rag.retrieve.recall.profile import check_profile, parse_profile, profile_queries
from godot_rag.store import calibration

pytestmark = [pytest.mark.llm, pytest.mark.slow]
llama_cpp = pytest.importorskip("llama_cpp", reason="needs the 'llm' extra (llama-cpp-python)")


@pytest.fixture(scope="module")
def gguf():
    try:
        return assemble_bundled("0.5b")
    except LLMError as e:
        pytest.skip(str(e))


@pytest.fixture(scope="module")
def qwen(gguf):
    return make_llm(gguf=str(gguf))


@pytest.fixture(scope="module")
def with_qwen(fixture_db, embedder, qwen, tmp_path_factory):
    """A retriever of this module's own, with the LLM (the session's retriever is never changed)."""
    return Retriever(fixture_db, embedder=embedder, llm=qwen, cache_dir=tmp_path_factory.mktemp("cache-llm"))


def with_llm(fixture_db, embedder, llm, tmp_path):
    return Retriever(fixture_db, embedder=embedder, llm=llm, cache_dir=tmp_path / "cache")


def test_bundled_file_is_checked_and_a_wrong_one_refused(gguf, tmp_path):
    verify_gguf(gguf, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(LLMError, match="refusing"):
        verify_gguf(fake, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32")


def test_in_process_qwen_answers_and_gives_p_yes(qwen):
    res = qwen.chat("Answer with one word: yes or no.", "Is Vector2 a 2D vector type in Godot?", max_tokens=4, logprobs=True)
    assert res["text"].strip() and 0.0 <= res["p_yes"] <= 1.0


def test_a_prefilled_answer_starts_with_its_prefix_and_keeps_the_shape(qwen):
    res = qwen.chat_prefilled('Answer with JSON only: {"problems": [{"line": <number>, "name": "<name>"}]}.',
                              "List the problems of: extends KinematicBody2D", '{"problems": [', max_tokens=60)
    assert res["text"].startswith('{"problems": [') and "<|im_end|>" not in res["text"]
    assert len(res["text"]) > len('{"problems": [')


HOSTILE_PROFILE = ('{"search_intent": "Godot 3 to Godot 4 migration", "important_literals": ["AnimatedSprite", '
                   '"AnimatedSprite2D", "KinematicBody2D"], "likely_doc_topics": ["migration"], '
                   '"migration_signals": ["AnimatedSprite to AnimatedSprite2D"]}')


def test_profile_hallucinations_are_caught_and_their_danger_is_visible(retriever):
    """The failure the user fears: a profile that invents a Godot 3 -> 4 migration for valid Godot 4 code."""
    profile, problems = parse_profile("Sure! " + HOSTILE_PROFILE + " Hope this helps.")
    assert problems == []
    checked = check_profile(profile, REFERENCE_CHUNK)
    assert checked["checks"]["important_literals"]["hallucinated"] == ["AnimatedSprite", "KinematicBody2D"]
    assert checked["checks"]["migration_signals"]["hallucinated"] == ["AnimatedSprite to AnimatedSprite2D"]
    cfg = RetrieveConfig(k=10, tables=["api_mapping"])

    def mapping_scores(keep):
        chk = check_profile(profile, REFERENCE_CHUNK, keep_hallucinated=keep)
        lexical, dense = profile_queries(profile, chk)
        ctx = QueryState(chunk=REFERENCE_CHUNK, strategy="E", cfg=cfg, resources=retriever)
        parts = run_stages(ctx, [TOKENIZE, BM25], {"texts": [lexical or dense]})  # E's own lexical stages, on the profile
        return {c.id: c.score for c in parts["lists"]["api_mapping"][0]["bm25"]}, lexical

    kept, lexical_kept = mapping_scores(keep=True)
    dropped, lexical_dropped = mapping_scores(keep=False)
    bad = "class_renames:AnimatedSprite->AnimatedSprite2D"
    # kept, the invented Godot 3 names pull the migration mappings up; dropped, they are gone from the query
    assert "KinematicBody2D" in lexical_kept and "KinematicBody2D" not in lexical_dropped
    renamed = "class_renames:KinematicBody2D->CharacterBody2D"
    assert renamed in kept and renamed not in dropped
    assert kept[bad] > dropped.get(bad, 0.0)
    # and F's validator would never accept it for this chunk
    f = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10, reranker="none"))
    assert bad not in [c.id for c in f.by_table("api_mapping")]


def test_strategy_e_with_real_qwen(with_qwen):
    res = with_qwen.retrieve(REFERENCE_CHUNK, "E", RetrieveConfig(k=5))
    t = res.trace
    assert None not in (t.profile, t.profile_checks, t.profile_diff, t.profile_queries) and t.llm_fallback is None
    first = next(s for s in t.stages if not s.stage.startswith("load:"))  # loads come first (preload.py)
    assert t.stage_list[0] == "profile" and first.stage == "profile" and "raw_answer" in first.info
    assert res.results and all(c.source.startswith("profile:") for c in res.results)
    for lit in t.profile_checks["used"]["literals"]:
        assert lit in REFERENCE_CHUNK or all(p in REFERENCE_CHUNK for p in lit.replace(".", " ").split())


def test_judge_answers_json_with_p_yes_and_reuses_the_prefix(qwen):
    from godot_rag.retrieve.evidence.judge_questions import SYSTEM, prefix

    head = prefix(REFERENCE_CHUNK)
    res = qwen.judge_answer(SYSTEM, head + "Question: does SOURCE_CODE read player input? RECORD: Input.is_action_pressed",
                            evidence=True)
    data = json.loads(res["raw"])  # the schema-constrained answer always parses
    assert data["answer"] == res["answer"] in ("yes", "no") and 0.0 <= res["p_yes"] <= 1.0
    assert res["p_yes_source"] == "logits" and all(isinstance(x, str) for x in data["evidence"])
    inner = qwen._llm
    qwen.judge_answer(SYSTEM, head + "Question: is this 3D code?", evidence=False)
    # the shared prefix (system + SOURCE_CODE) stayed evaluated: the next question only adds its own tokens
    prefix = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{head}"
    n_prefix = len(inner.tokenize(prefix.encode(), add_bos=False, special=True))
    assert inner.input_ids[: n_prefix - 2].tolist() == inner.tokenize(
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{head}".encode(), add_bos=False, special=True)[: n_prefix - 2]


def _judged(res):
    return [c for c in res.results + res.rejected + res.cut if c.info("judge") is not None]


def test_judge_follows_the_calibration_and_never_accepts_alone(with_qwen, qwen, tmp_path, monkeypatch):
    ok, bad = check_cited(["Input.is_action_pressed", "made_up_call"], REFERENCE_CHUNK, "Input.is_action_pressed()")
    assert ok == ["Input.is_action_pressed"] and bad == ["made_up_call"]
    # F's rules alone (no learned ranker): on the tiny fixture corpus they accept the two records the judge is asked about.
    cfg = dict(k=5, validator_llm=True, validate_top=2, reranker="none", learned_ranker=False)
    plain = with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5, reranker="none", learned_ranker=False))
    before = {c.id: c.verdict for c in plain.results + plain.rejected + plain.cut}
    cal = tmp_path / "cal.json"
    with_qwen.judge_calibration = cal
    try:
        # 1. A calibration that found the model separates nothing: the judge asks and annotates only.
        calibration.save({"model": "test", "sha256": qwen.identity()["sha256"],
                          "tables": {"docs_chunks": {"mode": "annotate", "threshold": None, "band": [0.0, 1.0],
                                                     "why": "AUC 0.52 < 0.7: annotate only"}}}, cal)
        res = with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg))
        judged = _judged(res)
        assert len(judged) == 2 and all(c.info("judge").mode == "annotate" for c in judged)
        assert all(c.verdict == before[c.id] == "accept" for c in judged)
        assert res.trace.stages[[s.stage for s in res.trace.stages].index("judge")].info["calibration"] == str(cal)
        # 2. The request's threshold above every P(yes): the judge rejects what it was asked about.
        res = with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg, judge_thresholds={"docs_chunks": 1.0}))
        assert len(_judged(res)) == 2
        for c in _judged(res):
            j = c.info("judge")
            assert j.mode == "decide" and j.verdict_before == "accept" and j.threshold == 1.0
            assert (c.verdict == "accept") == (j.p_yes >= 1.0) and "judge: P(yes)" in c.reason
            assert j.raw_answer.endswith('"evidence": []}')  # citations only with judge_citations
        # 2b. Citations are asked for only with judge_citations (the evidence flag reaches the model).
        asked, real = [], qwen.judge_answer
        monkeypatch.setattr(qwen, "judge_answer", lambda *a, **kw: asked.append(kw["evidence"]) or real(*a, **kw))
        with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg, judge_thresholds={"docs_chunks": 0.0}))
        assert True not in asked
        with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg, judge_thresholds={"docs_chunks": 0.0},
                                                                 judge_citations=True))
        assert asked.count(True) == 2
        monkeypatch.undo()
        # 3. A calibrated band that excludes the accepts: nothing is asked.
        calibration.save({"model": "test", "sha256": qwen.identity()["sha256"],
                          "tables": {"docs_chunks": {"mode": "decide", "threshold": 0.5, "band": [2.0, 3.0]}}}, cal)
        assert not _judged(with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg)))
        # 4. A calibration measured with other questions is skipped, and the trace says so: uncalibrated.
        calibration.save({"model": "test", "sha256": qwen.identity()["sha256"], "prompt": "0ld0ld0ld0ld",
                          "tables": {"docs_chunks": {"mode": "decide", "threshold": 0.99, "band": [0.0, 1.0]}}}, cal)
        res = with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(**cfg))
        log = res.trace.stages[[s.stage for s in res.trace.stages].index("judge")].info
        assert "0ld0ld0ld0ld" in log["calibration_skipped"][0] and log["calibration"] == "none"
        assert all(c.info("judge").mode == "annotate" for c in _judged(res))
    finally:
        with_qwen.judge_calibration = None


@pytest.fixture(scope="module")
def llama_server(gguf):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_http_server([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                              "--port", str(port), "--n_ctx", "2048", "--model_alias", "qwen-0.5b"], url, "/v1/models")
    yield url
    proc.terminate()
    proc.wait(10)


def test_openai_compatible_server(llama_server, fixture_db, embedder, tmp_path):
    llm = OpenAICompatLLM(llama_server, model="qwen-0.5b", timeout=60)
    res = llm.chat("Answer with one word: yes or no.", "Is GDScript the scripting language of Godot?", max_tokens=3)
    assert res["text"].strip()
    out = with_llm(fixture_db, embedder, llm, tmp_path).retrieve(
        REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, validate_top=1, reranker="none", learned_ranker=False))
    assert sum(c.info("judge") is not None for c in out.results + out.rejected + out.cut) == 1


def test_server_model_goes_through_the_same_calibrated_path(llama_server, fixture_db, embedder, tmp_path):
    """`judge calibrate --llm-url` stores the server model's calibration under its name; F then reads it."""
    llm = OpenAICompatLLM(llama_server, model="qwen-0.5b", timeout=120)
    ans = llm.judge_answer("Answer in JSON.", "Is `Vector2` a Godot type? Answer yes or no.", evidence=True)
    assert json.loads(ans["raw"])["answer"] == ans["answer"]  # schema-constrained over the API too
    assert ans["p_yes_source"] == "logprobs" and 0.0 <= ans["p_yes"] <= 1.0
    # The answer-only schema (no evidence list) is its own request shape, learnt apart from the first.
    short = llm.judge_answer("Answer in JSON.", "Is `Vector2` a Godot type? Answer yes or no.")
    assert json.loads(short["raw"]) == {"answer": short["answer"]} and short["evidence"] == []
    r = with_llm(fixture_db, embedder, None, tmp_path)
    plain = r.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5, reranker="none", learned_ranker=False))
    accepted = [c for c in plain.results if c.table == "docs_chunks"][:4]
    assert len(accepted) >= 2
    js = tmp_path / "js.jsonl"
    js.write_text("".join(json.dumps({"id": f"p{i}", "chunk_text": REFERENCE_CHUNK, "table": "docs_chunks", "record": c.id,
                                      "label": i % 2, "det_confidence": c.info("validate").confidence,
                                      "evidence": [e.literal for e in c.info("validate").evidence]}) + "\n"
                          for i, c in enumerate(accepted)))
    cal = tmp_path / "cal.json"
    proc = subprocess.run([sys.executable, "-m", "godot_rag.cli", "judge", "calibrate", "--set", str(js), "--out", str(cal),
                           "--llm-url", llama_server, "--llm-model", "qwen-0.5b", "--llm-timeout", "120", "--quiet",
                           "--data-dir", str(fixture_db.data_dir)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["model"] == "openai:qwen-0.5b" and out["sha256"] is None and out["stored_in"] == str(cal)
    assert out["tables"]["docs_chunks"]["auc_all_pairs"] is not None and out["judge_set"]["pairs"] == len(accepted)
    found, where, _ = calibration.find(llm.identity(), cal)
    assert where == str(cal) and found["tables"]["docs_chunks"]["mode"] in ("decide", "annotate")
    r = Retriever(fixture_db, embedder=embedder, llm=llm, cache_dir=tmp_path / "c2", files=ModelFiles(judge_calibration=cal))
    res = r.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5, validator_llm=True, reranker="none"))
    log = res.trace.stages[[s.stage for s in res.trace.stages].index("judge")].info
    assert log["calibration"] == str(cal) and log["model"] == "openai:qwen-0.5b"


def test_server_down_is_a_clear_error_or_degrades(fixture_db, embedder, tmp_path):
    llm = OpenAICompatLLM(f"http://127.0.0.1:{free_port()}", timeout=2, retries=1)
    with pytest.raises(LLMError, match="unreachable"):
        llm.chat("s", "u")
    down = with_llm(fixture_db, embedder, llm, tmp_path)
    with pytest.raises(LLMError):
        down.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, reranker="none", learned_ranker=False))
    res = down.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, llm_optional=True, reranker="none",
                                                              learned_ranker=False))
    assert "deterministic validator only" in res.trace.llm_fallback and res.results
    res = down.retrieve(REFERENCE_CHUNK, "E", RetrieveConfig(k=3, llm_optional=True))
    assert "fell back" in res.trace.llm_fallback and res.results
    assert "profile" in res.trace.stage_list and "codematch" in res.trace.stage_list  # D's stages ran
