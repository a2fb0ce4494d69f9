"""The fitted guide model (`GuideModel`, read from `store/guide_model.py`'s file): a logistic regression over the
guide features."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..engine.trace import RATIO_DIGITS
from .docs_features import FEATURES

LOGIT_LIMIT = 50.0  # keeps exp() in range; P is 0 or 1 to double precision beyond it


def probability(logit: float) -> float:
    """A logistic model's P from its logit (the guide model's and the ranker's)."""
    return 1.0 / (1.0 + math.exp(-max(-LOGIT_LIMIT, min(LOGIT_LIMIT, logit))))


@dataclass(frozen=True)
class GuideModel:
    """Logistic regression over FEATURES: P(grade 2) = sigmoid(bias + sum weight x value); accept at threshold."""
    weights: dict[str, float]
    bias: float
    threshold: float
    page_accept_rate: dict[str, float]
    chunk_share: dict[str, float]
    meta: dict

    @classmethod
    def from_dict(cls, data: dict) -> GuideModel:
        return cls(dict(data["weights"]), float(data["bias"]), float(data["threshold"]),
                   dict(data.get("page_accept_rate") or {}), dict(data.get("chunk_share") or {}),
                   {k: data[k] for k in ("data_digest", "fitted_on", "n", "cv", "threshold_from") if k in data})

    def decide(self, values: dict[str, float]) -> dict:
        contrib = {f: round(self.weights.get(f, 0.0) * values[f], RATIO_DIGITS) for f in FEATURES}
        logit = self.bias + sum(contrib.values())
        p = probability(logit)
        return {"features": values, "contributions": contrib, "bias": round(self.bias, RATIO_DIGITS),
                "logit": round(logit, RATIO_DIGITS), "p": round(p, RATIO_DIGITS), "threshold": self.threshold,
                "accepted": p >= self.threshold}
