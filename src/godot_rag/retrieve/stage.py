"""A stage: a named function of (context, candidates) -> candidates, with a one-line description.

Each stage records its own typed info on the candidates it touches (`Candidate.add_stage`) and a
summary for the query (`QueryContext.note`); the runner times it. Strategies are lists of stages
(`strategies.py`)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from .context import StageFn


@dataclass(frozen=True)
class Stage:
    name: str
    run: StageFn
    about: str

    def with_options(self, about: str | None = None, **options) -> "Stage":
        """The same stage with fixed keyword options (F's BM25 takes more api_mapping candidates)."""
        return Stage(self.name, partial(self.run, **options), about or self.about)


# What the stages return, as a stored result (the scan's cache) sees it: bump it with every change of a
# stage's behaviour, so that no result of older code is served.
RESULTS_VERSION = 3
