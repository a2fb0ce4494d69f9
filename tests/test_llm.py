"""Real Qwen 0.5B (bundled GGUF) in process and behind a real llama.cpp OpenAI-compatible server."""
import sys

import pytest

from godot_rag.models.llm import LLMError, OpenAICompatLLM, assemble_bundled, make_llm, verify_gguf
from godot_rag.retrieve.config import RetrieveConfig
from godot_rag.retrieve.judge import check_cited, parse_answer
from godot_rag.retrieve.context import QueryContext
from godot_rag.retrieve.judge import P_YES_MIN
from godot_rag.retrieve.lexical import BM25
from godot_rag.retrieve.pipeline import Retriever, run_stages
from godot_rag.retrieve.tokenize import TOKENIZE
from godot_rag.retrieve.profile import check_profile, parse_profile, profile_queries
from conftest import REFERENCE_CHUNK, free_port, start_http_server

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
        ctx = QueryContext(chunk=REFERENCE_CHUNK, strategy="E", cfg=cfg, retriever=retriever, texts=[lexical or dense])
        run_stages(ctx, [TOKENIZE, BM25])  # E's own lexical stages, on the checked profile
        return {c.id: c.score for c in ctx.lists["api_mapping"][0]["bm25"]}, lexical

    kept, lexical_kept = mapping_scores(keep=True)
    dropped, lexical_dropped = mapping_scores(keep=False)
    bad = "class_renames:AnimatedSprite->AnimatedSprite2D"
    # kept, the invented Godot 3 names pull the migration mappings up; dropped, they are gone from the query
    assert "KinematicBody2D" in lexical_kept and "KinematicBody2D" not in lexical_dropped
    assert "class_renames:KinematicBody2D->CharacterBody2D" in kept and "class_renames:KinematicBody2D->CharacterBody2D" not in dropped
    assert kept[bad] > dropped.get(bad, 0.0)
    # and F's validator would never accept it for this chunk
    f = retriever.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=10, reranker="none"))
    assert bad not in [c.id for c in f.by_table("api_mapping")]


def test_strategy_e_with_real_qwen(with_qwen):
    res = with_qwen.retrieve(REFERENCE_CHUNK, "E", RetrieveConfig(k=5))
    t = res.trace
    assert None not in (t.profile, t.profile_checks, t.profile_diff, t.profile_queries) and t.llm_fallback is None
    assert t.stage_list[0] == "profile" and t.stages[0].stage == "profile" and "raw_answer" in t.stages[0].info
    assert res.results and all(c.source.startswith("profile:") for c in res.results)
    for lit in t.profile_checks["used"]["literals"]:
        assert lit in REFERENCE_CHUNK or all(p in REFERENCE_CHUNK for p in lit.replace(".", " ").split())


def test_judge_never_accepts_alone_and_drops_invented_evidence(with_qwen):
    assert parse_answer('yes\n["Input.is_action_pressed", "made_up_call"]') == ("yes", ["Input.is_action_pressed", "made_up_call"])
    ok, bad = check_cited(["Input.is_action_pressed", "made_up_call"], REFERENCE_CHUNK, "Input.is_action_pressed()")
    assert ok == ["Input.is_action_pressed"] and bad == ["made_up_call"]
    res = with_qwen.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=5, validator_llm=True, validate_top=2, reranker="none"))
    judged = [c for c in res.results + res.rejected + res.cut if c.info("judge") is not None]
    assert len(judged) == 2
    for c in judged:
        j, det = c.info("judge"), c.info("validate")
        assert j.raw_answer and det.accepted  # only deterministic accepts reach the judge
        # the rule, whichever way the model answered: accepted only on yes, P(yes) high enough, and evidence left
        said_yes = j.answer == "yes" and (j.p_yes is None or j.p_yes >= P_YES_MIN)
        assert j.accepted == (said_yes and bool(det.evidence or j.cited_verified))
        assert (c.verdict == "accept") == j.accepted
        assert set(j.cited_verified) <= set(j.cited_verified) and not set(j.cited_verified) & set(j.cited_hallucinated)


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
        REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, validate_top=1, reranker="none"))
    assert sum(c.info("judge") is not None for c in out.results + out.rejected + out.cut) == 1


def test_server_down_is_a_clear_error_or_degrades(fixture_db, embedder, tmp_path):
    llm = OpenAICompatLLM(f"http://127.0.0.1:{free_port()}", timeout=2, retries=1)
    with pytest.raises(LLMError, match="unreachable"):
        llm.chat("s", "u")
    down = with_llm(fixture_db, embedder, llm, tmp_path)
    with pytest.raises(LLMError):
        down.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, reranker="none"))
    res = down.retrieve(REFERENCE_CHUNK, "F", RetrieveConfig(k=3, validator_llm=True, llm_optional=True, reranker="none"))
    assert "deterministic validator only" in res.trace.llm_fallback and res.results
    res = down.retrieve(REFERENCE_CHUNK, "E", RetrieveConfig(k=3, llm_optional=True))
    assert "fell back" in res.trace.llm_fallback and res.results
    assert "profile" in res.trace.stage_list and "codematch" in res.trace.stage_list  # D's stages ran
