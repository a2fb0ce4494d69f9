"""The fitted ranker as F reads it (`store/ranker_model.json`, written by `godot-rag fit-ranker`): a logistic
regression per docs group over the named features of ranker_features.py, and how it scores one candidate."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.trace import RATIO_DIGITS
from .guide_model import probability
from .ranker_features import GROUPS, features_of


@dataclass(frozen=True)
class GroupModel:
    """One docs group's fit: P(direct) = sigmoid(bias + sum weight x value); accepted at `threshold`."""
    weights: dict[str, float]
    bias: float
    threshold: float


@dataclass(frozen=True)
class RankerModel:
    """The fitted ranker: a `GroupModel` per docs group, and the digest of the graded data it was fitted on."""
    groups: dict[str, GroupModel]
    data_digest: str

    def with_thresholds(self, thresholds: Mapping[str, float]) -> dict[str, GroupModel]:
        """The groups' models, with a request's thresholds (`ranker_thresholds`) in place of the fitted ones."""
        return {g: GroupModel(m.weights, m.bias, thresholds[g]) if g in thresholds else m for g, m in self.groups.items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankerModel:
        groups = {g: GroupModel(dict(m["weights"]), float(m["bias"]), float(m["threshold"]))
                  for g, m in data["groups"].items() if g in GROUPS}
        return cls(groups, str(data.get("data_digest") or ""))


def score(model: GroupModel, group: str, values: dict[str, float]) -> dict[str, Any]:
    """P(direct) of one candidate, with each feature's contribution (weight x value) and the feature that kept a
    reject out (its most negative contribution; None when none is negative: nothing raised it enough)."""
    contrib = {}
    for f in features_of(group):
        w, x = model.weights.get(f, 0.0), values.get(f, 0.0)
        contrib[f] = round(w * x, RATIO_DIGITS) if w and x else 0.0  # most are 0: round only the rest
    logit = model.bias + sum(contrib.values())
    p = probability(logit)
    accepted = p >= model.threshold
    lowest = None if accepted else min((v, f) for f, v in contrib.items())
    return {"p": round(p, RATIO_DIGITS), "threshold": model.threshold, "accepted": accepted,
            "bias": round(model.bias, RATIO_DIGITS), "logit": round(logit, RATIO_DIGITS), "features": values,
            "contributions": contrib, "kept_out_by": lowest[1] if lowest is not None and lowest[0] < 0 else None}


def strongest(contributions: dict[str, float], n: int = 3) -> str:
    """The `n` largest contributions, as a reason cites them (`cosine +1.78, guide.shared_construct +0.91`)."""
    top = sorted(((v, f) for f, v in contributions.items() if v > 0), reverse=True)[:n]
    return ", ".join(f"{f} {v:+.2f}" for v, f in top) or "no feature above 0"
