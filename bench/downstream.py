"""Does the evidence help the Qwen that reads it? A downstream bench.

Task M: port a Godot 3 chunk of realcode_godot3.dev (with gold mappings) to Godot 4; scored with our own
parser and class reference (src/godot_rag/eval/downstream.py): rename recall, Godot 3 leftovers,
invented API, parse failures. Task R: list the chunk's Godot 3 -> 4 problems as JSON, on valid Godot 4
chunks of realcode_godot4.dev (every claim is false) and on the Godot 3 chunks (claims against the gold).

Each task runs under every evidence condition: none, D (D's top records, unvalidated), F (F's accepted
records), gold (the gold mappings; task M only), and D and F under two renderings: `full` (the records'
JSON payloads, as the user's JSONL has them, cut to the context) and `prompt` (`--format prompt`).
Results: results.json, results.md, and items.jsonl with every prompt and answer. Answers are cached by
model, prompt and settings (cache.jsonl), so a run resumes where it stopped.

    python bench/downstream.py --data-dir DIR --llm-bundled 1.5b --n 12 --out bench-out/downstream
    python bench/downstream.py --llm-url http://127.0.0.1:8080/v1 --llm-model qwen2.5-coder-7b ...
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

from godot_rag.eval.downstream import bootstrap, ratio_bootstrap, score_port, score_review
from godot_rag.evidence_prompt import CHARS_PER_TOKEN, estimate_tokens, render_payloads, render_prompt
from godot_rag.models.llm import make_llm
from godot_rag.retrieve.engine.config import RetrieveConfig
from godot_rag.retrieve.pipeline import Retriever
from godot_rag.store.db import Database

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CONTEXT_TOKENS = 4096  # the in-process model's context (models/llm.py)
ANSWER_TOKENS = {"M": 640, "R": 128}  # a review of a chunk names 1.5 gold names on average; 128 tokens hold 4 or more problems
PORT_SYSTEM = ("You port GDScript from Godot 3 to Godot 4. Answer with the whole ported chunk in one ```gdscript code "
               "block and nothing else. Keep the code's behaviour; change only what Godot 4 requires.")
REVIEW_SYSTEM = ("You review GDScript for Godot 3 -> 4 migration problems: names, classes, signals and syntax that "
                 "Godot 4 no longer has. Answer with JSON only: {\"problems\": [{\"line\": <number>, \"name\": "
                 "\"<the Godot 3 name as written>\", \"fix\": \"<the Godot 4 replacement>\"}]}. If the chunk is "
                 "already valid Godot 4 code, answer {\"problems\": []}.")
EVIDENCE_HEAD = "Evidence retrieved for this chunk (Godot 4 documentation and migration records):\n"
# The review's answer is held to this shape (response_format on a server; in process, the answer is prefilled with
# REVIEW_PREFIX), and an answer that is no JSON of it never passes for a review without claims.
REVIEW_SCHEMA = {"type": "object", "required": ["problems"], "additionalProperties": False, "properties": {
    "problems": {"type": "array", "items": {"type": "object", "required": ["line", "name", "fix"], "additionalProperties": False,
                                            "properties": {"line": {"type": "integer"}, "name": {"type": "string"},
                                                           "fix": {"type": "string"}}}}}}
# Up to the colon: the model's own next token is ` []` or ` [{` (a prefix ending in ` [` splits ` []`, the token an
# empty answer is made of, and pushed the models to list problems on valid code).
REVIEW_PREFIX = '{"problems":'


def load_queries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sample(rows: list[dict], n: int, seed: int) -> list[dict]:
    rows = sorted(rows, key=lambda q: q["id"])
    return random.Random(seed).sample(rows, min(n, len(rows)))


def gold_of(q: dict) -> list[tuple[str, str, str]]:
    return [tuple(p) for p in q.get("relevant_mappings") or []]


def render_gold(gold: list[tuple[str, str, str]]) -> str:
    return "Godot 3 -> 4 API changes this chunk uses:\n" + "\n".join(f"- {old} -> {new} ({table})" for table, old, new in gold)


def user_prompt(task: str, chunk: str, evidence: str) -> str:
    ask = ("Port this Godot 3 chunk to Godot 4:" if task == "M" else "List the Godot 3 -> 4 migration problems of this chunk:")
    head = (EVIDENCE_HEAD + evidence + "\n\n") if evidence else ""
    return f"{head}{ask}\n```gdscript\n{chunk}\n```"


class Cache:
    """Answers by (model, system, user, max_tokens): a rerun asks the model only for what is new."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.rows[row["key"]] = row

    @staticmethod
    def key(model: dict, system: str, user: str, max_tokens: int) -> str:
        blob = json.dumps([model, system, user, max_tokens], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        return self.rows.get(key)

    def put(self, key: str, answer: str, seconds: float) -> None:
        row = {"key": key, "answer": answer, "seconds": round(seconds, 2)}
        self.rows[key] = row
        with self.path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")


def conditions_for(task: str, conditions: list[str], renderings: list[str]) -> list[tuple[str, str]]:
    out = []
    for cond in conditions:
        if cond == "none":
            out.append(("none", "-"))
        elif cond == "gold":
            if task == "M":
                out.append(("gold", "prompt"))
        else:
            out.extend((cond, r) for r in renderings)
    return out


def summarise(items: list[dict], seed: int) -> dict:
    """Per task and condition: each figure with its bootstrap interval, and the mean prompt tokens."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for it in items:
        groups.setdefault((it["task"], it["condition"], it["rendering"]), []).append(it)
    out = {}
    for (task, cond, rendering), rows in sorted(groups.items()):
        figs: dict[str, tuple] = {"prompt_tokens": bootstrap([r["prompt_tokens"] for r in rows], seed)}
        if task == "M":
            figs["rename_recall"] = ratio_bootstrap([r["score"]["renamed"] for r in rows],
                                                    [r["score"]["gold"] for r in rows], seed)
            figs["leftover_rate"] = bootstrap([float(bool(r["score"]["leftovers"])) for r in rows], seed)
            figs["invented_rate"] = bootstrap([float(bool(r["score"]["invented"])) for r in rows], seed)
            figs["parse_failure_rate"] = bootstrap([float(r["score"]["parse_failed"]) for r in rows], seed)
        elif task == "R4":
            figs["any_claim_rate"] = bootstrap([float(r["score"]["claims"] > 0) for r in rows], seed)
            figs["unparsed_rate"] = bootstrap([float(not r["score"]["parsed"]) for r in rows], seed)
        else:
            figs["gold_recall"] = ratio_bootstrap([r["score"]["found"] for r in rows], [r["score"]["gold"] for r in rows], seed)
            figs["claim_precision"] = ratio_bootstrap([r["score"]["claims"] - r["score"]["unmatched"] for r in rows],
                                                      [r["score"]["claims"] for r in rows], seed)
        out[f"{task}/{cond}/{rendering}"] = {
            "n": len(rows),
            **{k: {"value": round(v[0], 4), "ci95": [round(v[1], 4), round(v[2], 4)]} for k, v in figs.items()},
        }
    return out


def markdown(summary: dict, meta: dict) -> str:
    lines = [f"# Downstream bench ({meta['model']}, n={meta['n']} per task, seed {meta['seed']})", ""]
    for task, title in (("M", "Task M: port Godot 3 chunks"), ("R4", "Task R: review valid Godot 4 chunks (any claim is false)"),
                        ("R3", "Task R: review Godot 3 chunks (claims against the gold)")):
        rows = {k: v for k, v in summary.items() if k.startswith(task + "/")}
        if not rows:
            continue
        figs = [f for f in next(iter(rows.values())) if f != "n"]
        lines += [f"## {title}", "", "| condition | rendering | n | " + " | ".join(figs) + " |",
                  "|---|---|---|" + "---|" * len(figs)]
        for key, v in rows.items():
            _, cond, rendering = key.split("/")
            cells = [f"{v[f]['value']:.3f} [{v[f]['ci95'][0]:.2f}, {v[f]['ci95'][1]:.2f}]" for f in figs]
            lines.append(f"| {cond} | {rendering} | {v['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir"), ap.add_argument("--dsn")
    ap.add_argument("--llm-bundled", default="1.5b", choices=["1.5b", "0.5b"])
    ap.add_argument("--llm-gguf"), ap.add_argument("--llm-url"), ap.add_argument("--llm-model")
    ap.add_argument("--llm-timeout", type=float, default=300.0)
    ap.add_argument("--llm-threads", type=int, default=1,
                    help="the in-process model's threads: on cores shared with other work one thread is faster (each "
                         "step's threads wait for one another; 9 s against 42 s for the same answer on 2 busy cores)")
    ap.add_argument("--tasks", default="M,R4,R3", help="M (port), R4 (review Godot 4 chunks), R3 (review Godot 3 chunks)")
    ap.add_argument("--conditions", default="none,D,F,gold")
    ap.add_argument("--renderings", default="full,prompt")
    ap.add_argument("--n", type=int, default=12, help="items per task")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--k", type=int, default=5, help="records per table given to D and F")
    ap.add_argument("--prompt-budget", type=int, default=600, help="evidence tokens for the prompt rendering")
    ap.add_argument("--full-budget", type=int, default=1200,
                    help="evidence tokens for the full rendering (whole records; on 2 CPU cores a 3,000-token prompt "
                         "costs the 1.5B minutes)")
    ap.add_argument("--shared", default=str(SHARED))
    ap.add_argument("--out", default="bench-out/downstream")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [t.strip() for t in a.tasks.split(",") if t.strip()]
    conditions = [c.strip() for c in a.conditions.split(",") if c.strip()]
    renderings = [r.strip() for r in a.renderings.split(",") if r.strip()]
    eval_dir = Path(a.shared) / "eval"
    g3 = sample([q for q in load_queries(eval_dir / "realcode_godot3.dev.jsonl") if q.get("relevant_mappings")], a.n, a.seed)
    g4 = sample(load_queries(eval_dir / "realcode_godot4.dev.jsonl"), a.n, a.seed)
    items_of = {"M": g3, "R3": g3, "R4": g4}

    db = Database(dsn=a.dsn, data_dir=a.data_dir)
    llm = make_llm(bundled=a.llm_bundled, gguf=a.llm_gguf, url=a.llm_url, model=a.llm_model, timeout=a.llm_timeout,
                   n_threads=a.llm_threads)
    model_id = llm.identity() if hasattr(llm, "identity") else {"model": getattr(llm, "name", "llm")}
    cache = Cache(out / "cache.jsonl")
    try:
        retriever = Retriever(db)
        cfg = RetrieveConfig(k=a.k)
        ref = retriever.class_reference()
        godot3_names = retriever.renames().old
        results: dict[tuple[str, str], object] = {}

        def evidence(q: dict, cond: str, rendering: str, room: int) -> str:
            if cond == "none":
                return ""
            if cond == "gold":
                return render_gold(gold_of(q))
            if (q["id"], cond) not in results:
                results[(q["id"], cond)] = retriever.retrieve(q["chunk_text"], cond, cfg, explain=False)
            res = results[(q["id"], cond)]
            if rendering == "prompt":
                return render_prompt(res, a.prompt_budget)
            return render_payloads(res, min(room, a.full_budget))

        # Item by item across the tasks, so a run stopped early holds whole items of every task: a rerun with a
        # smaller --n (the same seed's samples are prefixes of one another) is then answered from the cache.
        jobs = [(task, items_of[task][i], cond, r) for i in range(a.n) for task in tasks if i < len(items_of[task])
                for cond, r in conditions_for(task, conditions, renderings)]
        items = []
        t_start = time.perf_counter()
        for n, (task, q, cond, rendering) in enumerate(jobs, 1):
            system = PORT_SYSTEM if task == "M" else REVIEW_SYSTEM
            max_tokens = ANSWER_TOKENS[task[0]]
            room = CONTEXT_TOKENS - max_tokens - estimate_tokens(system + q["chunk_text"]) - 100
            ev = evidence(q, cond, rendering, room)
            user = user_prompt(task[0], q["chunk_text"], ev)
            if estimate_tokens(system + user) + max_tokens > CONTEXT_TOKENS:  # a long chunk: cut the evidence, never the chunk
                ev = ev[: max(0, room * CHARS_PER_TOKEN)]
                user = user_prompt(task[0], q["chunk_text"], ev)
            review = task.startswith("R")
            prefilled = review and hasattr(llm, "chat_prefilled")
            variant = f"+prefill:{REVIEW_PREFIX}" if prefilled else "+schema" if review else ""
            key = Cache.key(model_id, system, user, max_tokens) + variant
            hit = cache.get(key)
            if hit is None:
                t = time.perf_counter()
                if prefilled:  # in-process: the answer starts as the schema's object does (a grammar costs seconds a token)
                    answer = llm.chat_prefilled(system, user, REVIEW_PREFIX, max_tokens=max_tokens)["text"]
                else:
                    answer = llm.chat(system, user, max_tokens=max_tokens, json_schema=REVIEW_SCHEMA if review else None)["text"]
                cache.put(key, answer, time.perf_counter() - t)
                hit = cache.get(key)
            answer = hit["answer"]
            gold = gold_of(q)
            score = (score_port(answer, gold, ref, godot3_names).to_dict() if task == "M" else score_review(answer, gold))
            items.append({"task": task, "id": q["id"], "condition": cond, "rendering": rendering,
                          "prompt_tokens": estimate_tokens(system + user), "system": system, "user": user,
                          "answer": answer, "seconds": hit["seconds"], "gold": gold, "score": score})
            if not a.quiet:
                print(f"\r{n}/{len(jobs)} items, {time.perf_counter() - t_start:.0f} s", end="", file=sys.stderr, flush=True)
        if not a.quiet:
            print(file=sys.stderr)
    finally:
        db.stop()
    meta = {"model": model_id.get("model"), "n": a.n, "seed": a.seed, "k": a.k, "prompt_budget": a.prompt_budget,
            "full_budget": a.full_budget,
            "tasks": tasks, "conditions": conditions, "renderings": renderings}
    summary = summarise(items, a.seed)
    (out / "items.jsonl").write_text("".join(json.dumps(it, ensure_ascii=False) + "\n" for it in items))
    (out / "results.json").write_text(json.dumps({"meta": meta, "summary": summary}, indent=2))
    (out / "results.md").write_text(markdown(summary, meta))
    print(markdown(summary, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
