"""Calibrating the Qwen judge on the judge set (bench/judge_set.py): P(yes) for every pair, the ROC AUC
per table, the threshold read off the dev curve, and what the judge may do with this model.

Threshold rule: the judge only ever turns deterministic accepts into rejects, so a threshold costs the
positives below it and earns the negatives below it. The chosen threshold is the highest one that
loses at most `max_loss` of the positives. The judge may decide only when its AUC reaches `min_auc`
and that threshold removes at least `min_removed` of the negatives; otherwise it separates nothing
useful, and with this model it only annotates.

The judge is asked only inside the band of deterministic confidence where it separates best: the
pairs of each table are cut in up to four bins of that confidence, and the band spans the bins whose
AUC reaches `min_auc`.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ..records import TABLES
from ..retrieve.engine.types import Candidate
from ..retrieve.evidence.judge_questions import JudgeLLM, ask, prompt_id, question_of
from ..retrieve.pipeline import Retriever

FIELDS: dict[str, type | tuple[type, ...]] = {"id": str, "chunk_text": str, "table": str, "record": str, "label": int,
                                               "det_confidence": (int, float)}


class JudgeSetError(ValueError):
    pass


def read_judge_set(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise JudgeSetError(f"{path}: cannot read the judge set ({e})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            p = json.loads(line)
        except json.JSONDecodeError as e:
            raise JudgeSetError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(p, dict):
            raise JudgeSetError(f"{path}:{n}: a pair must be a JSON object")
        for name, kind in FIELDS.items():
            if not isinstance(p.get(name), kind) or isinstance(p.get(name), bool):
                raise JudgeSetError(f"{path}:{n}: field '{name}' is missing or not {getattr(kind, '__name__', 'a number')}")
        if p["table"] not in TABLES or p["label"] not in (0, 1):
            raise JudgeSetError(f"{path}:{n}: field '{'table' if p['table'] not in TABLES else 'label'}' is not valid")
        if p["table"] == "api_mapping" and not isinstance(p.get("occurrence"), dict):
            raise JudgeSetError(f"{path}:{n}: field 'occurrence' is needed for an api_mapping pair")
        out.append(p)
    return out


def stratified(pairs: list[dict[str, Any]], per_group: int, seed: int = 13) -> list[dict[str, Any]]:
    """Every ambiguous pair, and at most `per_group` others per (table, label), drawn with a fixed seed."""
    import random

    rng = random.Random(seed)
    keep = {i for i, p in enumerate(pairs) if p.get("ambiguous")}  # rare, and what the judge is aimed at
    for key in sorted({(p["table"], p["label"]) for p in pairs}):
        idx = [i for i, p in enumerate(pairs) if (p["table"], p["label"]) == key and i not in keep]
        keep.update(rng.sample(idx, min(per_group, len(idx))))
    return [p for i, p in enumerate(pairs) if i in keep]


def roc_auc(labels: list[int], scores: list[float]) -> float | None:
    """Mann-Whitney: the chance that a random positive scores above a random negative (ties count half)."""
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = [s for s, y in zip(scores, labels) if y == 0]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return round(wins / (len(pos) * len(neg)), 4)


def roc_points(labels: list[int], scores: list[float], n: int = 11) -> list[dict[str, Any]]:
    """The ROC curve at `n` thresholds spread over the scores: TPR and FPR of `P(yes) >= threshold`."""
    pos = [s for s, y in zip(scores, labels) if y == 1]
    neg = [s for s, y in zip(scores, labels) if y == 0]
    if not pos or not neg:
        return []
    ordered = sorted(scores)
    thresholds = sorted({ordered[min(len(ordered) - 1, k * len(ordered) // (n - 1))] for k in range(n)})
    return [{"threshold": round(t, 4), "tpr": round(sum(p >= t for p in pos) / len(pos), 4),
             "fpr": round(sum(x >= t for x in neg) / len(neg), 4)} for t in thresholds]


def choose_threshold(labels: list[int], scores: list[float], max_loss: float) -> dict[str, Any]:
    """The highest threshold that loses at most `max_loss` of the positives, and what it does."""
    pos = sorted(s for s, y in zip(scores, labels) if y == 1)
    neg = [s for s, y in zip(scores, labels) if y == 0]
    if not pos or not neg:
        return {"threshold": None, "positives_lost": 0, "negatives_removed": 0}
    allowed = min(int(max_loss * len(pos) + 1e-9), len(pos) - 1)
    thr = pos[allowed]  # pairs with P(yes) < thr are rejected: `allowed` positives at most
    return {"threshold": round(thr, 6), "positives_lost": sum(p < thr for p in pos),
            "negatives_removed": sum(n < thr for n in neg), "positives": len(pos), "negatives": len(neg),
            "share_of_negatives_removed": round(sum(n < thr for n in neg) / len(neg), 4),
            "share_of_positives_lost": round(sum(p < thr for p in pos) / len(pos), 4)}


def decide(labels: list[int], scores: list[float], max_loss: float, min_auc: float, min_removed: float) -> dict[str, Any]:
    auc = roc_auc(labels, scores)
    out: dict[str, Any] = {"auc": auc, "pairs": len(labels), **choose_threshold(labels, scores, max_loss),
           "roc": roc_points(labels, scores)}
    ok = auc is not None and auc >= min_auc and out.get("share_of_negatives_removed", 0) >= min_removed
    out["mode"] = "decide" if ok else "annotate"
    if not ok:
        out["why"] = (f"AUC {auc} < {min_auc}" if auc is None or auc < min_auc else
                      f"at <= {max_loss:.0%} positives lost the threshold removes only "
                      f"{out.get('share_of_negatives_removed', 0):.0%} of the negatives (< {min_removed:.0%})")
        out["why"] += ": the judge separates nothing useful with this model; annotate only"
    return out


def confidence_band(pairs: list[dict[str, Any]], scores: list[float], min_auc: float,
                    min_each: int = 5) -> tuple[list[float] | None, list[dict[str, Any]]]:
    """Up to about four bins of deterministic confidence, each with the judge's AUC; the band spans the
    bins that reach `min_auc` with at least `min_each` positives and negatives. Equal confidences stay
    in one bin, and a large run of one value gets a bin of its own (most mappings sit at 1.0)."""
    items = sorted(zip((p["det_confidence"] for p in pairs), (p["label"] for p in pairs), scores))
    runs: list[list] = []
    for it in items:
        if runs and runs[-1][0][0] == it[0]:
            runs[-1].append(it)
        else:
            runs.append([it])
    target = max(1, len(items) / 4)
    groups: list[list] = []
    current: list = []
    for run in runs:
        if current and len(current) + len(run) > 1.5 * target:
            groups.append(current)
            current = []
        current = current + run
        if len(current) >= target:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    bins = []
    for part in groups:
        pos = sum(y for _, y, _ in part)
        bins.append({"confidence": [part[0][0], part[-1][0]], "pairs": len(part), "positives": pos,
                     "auc": roc_auc([y for _, y, _ in part], [s for _, _, s in part])})
    good = [b for b in bins if b["auc"] is not None and b["auc"] >= min_auc
            and min(b["positives"], b["pairs"] - b["positives"]) >= min_each]
    return ([good[0]["confidence"][0], good[-1]["confidence"][1]] if good else None), bins


def score_pairs(retriever: Retriever, llm: JudgeLLM, pairs: list[dict[str, Any]],
                progress: Callable[[], object] | None = None) -> list[float]:
    """P(yes) for every pair, asked as F asks (grouped by chunk: the prefix is evaluated once)."""
    order = sorted(range(len(pairs)), key=lambda i: pairs[i]["chunk_text"])
    scores: list[float] = [0.0] * len(pairs)
    for i in order:
        p = pairs[i]
        payload = retriever.records(p["table"]).get(p["record"])
        if payload is None:
            raise JudgeSetError(f"pair {p['id']}: record '{p['record']}' is not in the database "
                                "(reload it, or rebuild the judge set)")
        c = Candidate(table=p["table"], id=p["record"], payload=payload)
        occ = p.get("occurrence")
        at = (occ["line"], occ["col"]) if occ else None
        key, question, _ = question_of(c, p["chunk_text"], at, p.get("evidence") or [])
        scores[i] = ask(llm, p["chunk_text"], key, question, evidence=False)["p_yes"]
        if progress:
            progress()
    return scores


def decide_tables(pairs: list[dict[str, Any]], scores: list[float], *, max_loss: float = 0.02, min_auc: float = 0.7,
                  min_removed: float = 0.2) -> dict[str, Any]:
    """Per table: AUC over all pairs and over the ambiguous ones, the confidence band, the threshold, the mode."""
    tables = {}
    for table in ("api_mapping", "docs_chunks"):
        idx = [i for i, p in enumerate(pairs) if p["table"] == table]
        if not idx:
            continue
        sub = [pairs[i] for i in idx]
        sc = [scores[i] for i in idx]
        entry: dict[str, Any] = {"auc_all_pairs": roc_auc([p["label"] for p in sub], sc)}
        amb = [k for k, p in enumerate(sub) if p.get("ambiguous")]
        if amb:
            entry["ambiguous_pairs"] = {"pairs": len(amb), "positives": sum(sub[k]["label"] for k in amb),
                                        "auc": roc_auc([sub[k]["label"] for k in amb], [sc[k] for k in amb])}
        band, bins = confidence_band(sub, sc, min_auc)
        entry.update(band=band, confidence_bins=bins)
        if band is not None:
            keep = [k for k, p in enumerate(sub) if band[0] <= p["det_confidence"] <= band[1]]
            sub, sc = [sub[k] for k in keep], [sc[k] for k in keep]
        entry.update(decide([p["label"] for p in sub], sc, max_loss, min_auc, min_removed))
        if band is None:
            entry.update(mode="annotate", threshold=None,
                         why=f"no bin of deterministic confidence reaches AUC {min_auc} with 5 positives and 5 negatives: "
                             "the judge is not asked")
        tables[table] = entry
    return tables


class CalibrationOptions(TypedDict, total=False):
    scores: list[float] | None  # P(yes) per pair, asked before; None: ask the model now
    max_loss: float
    min_auc: float
    min_removed: float
    progress: Callable[[], object] | None  # called after each pair the model is asked


def calibrate(retriever: Retriever, llm: JudgeLLM, pairs: list[dict[str, Any]],
              **options: Unpack[CalibrationOptions]) -> dict[str, Any]:
    max_loss, min_auc, min_removed = options.get("max_loss", 0.02), options.get("min_auc", 0.7), options.get("min_removed", 0.2)
    ident = llm.identity()
    t0 = time.perf_counter()
    scores = options.get("scores")
    if scores is None:
        scores = score_pairs(retriever, llm, pairs, options.get("progress"))
    seconds = time.perf_counter() - t0
    return {"model": ident["model"], "sha256": ident.get("sha256"), "prompt": prompt_id(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "judge_set": {"pairs": len(pairs)},
            "rule": {"max_loss": max_loss, "min_auc": min_auc, "min_removed": min_removed},
            "seconds": round(seconds, 1), "seconds_per_pair": round(seconds / max(len(pairs), 1), 3),
            "tables": decide_tables(pairs, scores, max_loss=max_loss, min_auc=min_auc, min_removed=min_removed),
            "_scores": {p["id"]: s for p, s in zip(pairs, scores)}}
