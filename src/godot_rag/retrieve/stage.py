"""A stage: a named function of (context, candidates) -> candidates, with a one-line description
and its contract: the parts of the per-query state it requires and the parts it provides.

Each stage records its own typed info on the candidates it touches (`Candidate.add_stage`) and a
summary for the query (`QueryContext.note`); the runner times it. Strategies are lists of stages
(`strategies.py`), checked against the contracts when they are built (`check_contract`)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from .context import PARTS, MissingPart, Pool, QueryContext, StageFn
from .trace import MS_DIGITS, StageLog


class ContractError(ValueError):
    """A stage list whose stages do not fit together: a part required before it is provided, provided
    twice, or not a part of the query state at all."""


@dataclass(frozen=True)
class Stage:
    name: str
    run: StageFn
    about: str
    requires: tuple[str, ...] = ()  # parts an earlier stage must provide (`lists` is met by any `lists.<retriever>`)
    provides: tuple[str, ...] = ()  # parts this stage sets; no other stage of the strategy may set them

    def with_options(self, about: str | None = None, **options) -> Stage:
        """The same stage with fixed keyword options (F's BM25 takes more api_mapping candidates)."""
        return Stage(self.name, partial(self.run, **options), about or self.about, self.requires, self.provides)

    def requiring(self, *parts: str) -> Stage:
        """The same stage with more required parts (an option that reads them: F's prefilter reads `facts`)."""
        return Stage(self.name, self.run, self.about, self.requires + parts, self.provides)


def _met(need: str, provided: dict[str, str]) -> bool:
    return need in provided or any(p.startswith(need + ".") for p in provided)


def check_contract(strategy: str, stages: Sequence[Stage]) -> None:
    """Raise ContractError unless every stage's required parts come from an earlier stage and no part
    comes from two stages."""
    provided: dict[str, str] = {}  # part -> the stage that provides it
    for stage in stages:
        unknown = [p for p in stage.requires + stage.provides if not _met(p, dict.fromkeys(PARTS, ""))]
        if unknown:
            raise ContractError(f"strategy {strategy}: stage '{stage.name}' names unknown part(s) {', '.join(unknown)}; "
                                f"valid parts: {', '.join(PARTS)}")
        for need in stage.requires:
            if not _met(need, provided):
                raise ContractError(f"strategy {strategy}: stage '{stage.name}' requires '{need}', which no earlier stage "
                                    f"provides (provided before it: {', '.join(provided) or 'nothing'})")
        for part in stage.provides:
            if part in provided:
                raise ContractError(f"strategy {strategy}: '{part}' is provided by two stages, "
                                    f"'{provided[part]}' and '{stage.name}'")
            provided[part] = stage.name


def run_stages(ctx: QueryContext, stages: Sequence[Stage]) -> Pool:
    """Each stage in order, timed, with its summary in the query trace; a stage that does not set a
    part it declares is an error, not a silent gap for the next stage."""
    pool: Pool = {}
    for stage in stages:
        ctx.trace.stage_list.append(stage.name)
        ctx._notes, ctx._set_aside_ms = {}, 0.0
        t = time.perf_counter()
        pool = stage.run(ctx, pool)
        ms = (time.perf_counter() - t) * 1000 - ctx._set_aside_ms
        ctx.trace.stages.append(StageLog(stage=stage.name, ms=round(ms, MS_DIGITS), info=ctx._notes))
        unset = [p for p in stage.provides if not ctx.provided(p)]
        if unset:
            raise MissingPart(f"stage '{stage.name}' declares it provides {', '.join(unset)} but did not set it")
    return pool
