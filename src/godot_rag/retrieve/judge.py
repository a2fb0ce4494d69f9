"""The optional Qwen judge: the second layer of F's validator.

Acceptance rule: a candidate stays accepted only if the deterministic layer accepted it,
the judge says yes (P(yes) >= `P_YES_MIN` when log-probabilities are available), and at
least one piece of direct evidence survives the literal check. The judge can reject or
lower confidence; it never accepts on its own word. Evidence the model cites that is not
literally in both texts is dropped and logged as hallucinated.
"""
from __future__ import annotations

import hashlib
import json
import re

from ..records import model_text
from .context import Pool, QueryContext
from .stage import Stage
from .trace import JudgeInfo
from .types import Candidate

P_YES_MIN = 0.6
JUDGE_MAX_TOKENS = 24  # small local models say "yes" too easily; calibrated above 0.5
_cache: dict[tuple[str, str, str], dict] = {}
SYSTEM = ("You check whether a retrieved record is DIRECT evidence for a piece of Godot code. "
          "Answer 'yes' or 'no' first. Then on the next line give a JSON list of the exact strings "
          "(API calls, identifiers) that appear in both texts.")


def _candidate_text(c: Candidate) -> str:
    return model_text(c.table, c.payload, limit=600)


def parse_answer(text: str) -> tuple[str | None, list[str]]:
    first = re.search(r"\b(yes|no)\b", text.lower())
    answer = first.group(1) if first else None
    cited: list[str] = []
    m = re.search(r"\[.*?\]", text, re.S)
    if m:
        try:
            cited = [x for x in json.loads(m.group(0)) if isinstance(x, str)]
        except json.JSONDecodeError:
            cited = re.findall(r"\"([^\"]+)\"", m.group(0))
    else:
        cited = re.findall(r"`([^`]+)`", text)
    return answer, cited


def check_cited(cited: list[str], chunk: str, record_text: str) -> tuple[list[str], list[str]]:
    ok, bad = [], []
    for s in cited:
        s = s.strip()
        (ok if s and s in chunk and s in record_text else bad).append(s)
    return ok, bad


def judge_one(llm, chunk: str, c: Candidate) -> dict:
    key = (getattr(llm, "name", "llm"), hashlib.sha256(chunk.encode()).hexdigest(), f"{c.table}:{c.id}")
    if key in _cache:
        return dict(_cache[key], cached=True)
    det = c.info("validate")
    evidence = ", ".join(i["literal"] for i in det.evidence[:10]) or "(none)"
    rec = _candidate_text(c)
    # SOURCE_CODE first: llama.cpp reuses the evaluated prefix across candidates.
    user = f"SOURCE_CODE:\n{chunk[:1500]}\n\nRECORD:\n{rec}\n\nEVIDENCE FOUND: {evidence}\n\nIs RECORD direct evidence for SOURCE_CODE?"
    # Short answers: "yes" plus a few cited strings; every generated token costs ~70 ms on 2 cores.
    res = llm.chat(SYSTEM, user, max_tokens=JUDGE_MAX_TOKENS, logprobs=True)
    answer, cited = parse_answer(res["text"])
    ok, bad = check_cited(cited, chunk, rec + "\n" + json.dumps(c.payload, ensure_ascii=False))
    out = {"model": key[0], "raw_answer": res["text"], "answer": answer, "p_yes": res["p_yes"],
           "cited_verified": ok, "cited_hallucinated": bad, "cached": False}
    _cache[key] = out
    return out


def run_judge(ctx: QueryContext, pool: Pool) -> Pool:
    """The Qwen judge over the top `validate_top` deterministic accepts of the docs (validator_llm)."""
    from ..models.llm import LLMError

    cfg = ctx.cfg
    if not cfg.validator_llm:
        ctx.note(skipped="validator_llm is off")
        return pool
    llm = ctx.retriever.llm
    if llm is None:
        if cfg.llm_optional:
            ctx.trace.llm_fallback = "no LLM configured; deterministic validator only"
            return pool
        # No LLM is a missing service (HTTP 503), like a server that is down, not a bad setting.
        raise LLMError("validator_llm needs an LLM: --llm-gguf, --llm-bundled or --llm-url")
    docs = ctx.table_lists(pool, "docs_chunks")
    top = sorted([c for c in docs if c.verdict == "accept"], key=lambda c: -c.score)[: cfg.validate_top]
    ids = {c.id for c in top}
    ctx.note(model=getattr(llm, "name", "llm"), judged=len(top), rule=f"deterministic accept AND yes AND P(yes) >= {P_YES_MIN}")
    if top:
        try:
            ctx.ensure_loaded("llm", llm, model=getattr(llm, "name", "llm"))
        except LLMError as e:
            if not cfg.llm_optional:
                raise
            ctx.trace.llm_fallback = f"LLM unavailable ({e}); deterministic validator only"
            return pool
    out = []
    for c in docs:
        if c.id not in ids:
            out.append(c)
            continue
        try:
            j = judge_one(llm, ctx.chunk, c)
        except LLMError as e:
            if not cfg.llm_optional:
                raise
            ctx.trace.llm_fallback = f"LLM unavailable ({e}); deterministic validator only"
            out.append(c)
            continue
        c = c.derive()
        det = c.info("validate")
        p = j["p_yes"]
        said_yes = j["answer"] == "yes" and (p is None or p >= P_YES_MIN)
        accepted = said_yes and len(det.evidence) + len(j["cited_verified"]) > 0
        conf = det.confidence * (p if p is not None else (1.0 if said_yes else 0.0))
        c.add_stage("judge", JudgeInfo(**j, accepted=accepted, confidence=round(conf, 4)))
        if not accepted:
            c.verdict = "reject"
            c.reason = f"judge said {j['answer']} (P(yes)={p})"
        out.append(c)
    return dict(pool, docs_chunks=[out])


JUDGE = Stage("judge", run_judge, "optional Qwen judge (validator_llm): yes/no with P(yes) and cited literals, checked literally")
