"""A stage: a named function of (context, candidates) -> candidates, with a one-line description
and its contract: the parts of the per-query state it requires and the parts it provides.

Each stage records its own typed info on the candidates it touches (`Candidate.add_stage`) and a
summary for the query (`QueryState.note`); the runner times it. Strategies are lists of stages
(`strategies.py`), checked against the contracts when they are built (`check_contract`)."""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from .state import PARTS, MissingPart, PartKey, Pool, QueryState, StageFn
from .trace import MS_DIGITS, StageLog


class ContractError(ValueError):
    """A stage list whose stages do not fit together: a part required before it is provided, provided
    twice, named with two different keys (so two types), or not a part of the query state at all."""


# A part in a contract: a typed part's key, or the name of a part that travels in the pool or the trace.
PartRef = PartKey[Any] | str


def part_name(part: PartRef) -> str:
    return part if isinstance(part, str) else part.name


@dataclass(frozen=True)
class Stage:
    name: str
    run: StageFn
    about: str
    requires: tuple[PartRef, ...] = ()  # parts an earlier stage must provide (`lists` is met by any `lists.<retriever>`)
    provides: tuple[PartRef, ...] = ()  # parts this stage sets; no other stage of the strategy may set them
    optional: tuple[PartRef, ...] = ()  # parts it reads when an earlier stage provided them (`ctx.get`)

    @property
    def requires_names(self) -> list[str]:
        return [part_name(p) for p in self.requires]

    @property
    def provides_names(self) -> list[str]:
        return [part_name(p) for p in self.provides]

    @property
    def optional_names(self) -> list[str]:
        return [part_name(p) for p in self.optional]

    @cached_property
    def named_parts(self) -> frozenset[str]:
        """Every part its contract names: what it may read or set while it runs (computed once, not per query)."""
        return frozenset(self.requires_names + self.provides_names + self.optional_names)

    def with_options(self, about: str | None = None, **options: Any) -> Stage:
        """The same stage with fixed keyword options (F's BM25 takes more api_mapping candidates)."""
        return Stage(self.name, partial(self.run, **options), about or self.about, self.requires, self.provides,
                     self.optional)

    def requiring(self, *parts: PartRef) -> Stage:
        """The same stage with more required parts (an option that reads them: F's prefilter reads `facts`)."""
        return Stage(self.name, self.run, self.about, self.requires + parts, self.provides, self.optional)


def _met(need: str, provided: dict[str, PartRef]) -> bool:
    return need in provided or any(p.startswith(need + ".") for p in provided)


def check_contract(strategy: str, stages: Sequence[Stage]) -> None:
    """Raise ContractError unless every stage's required parts come from an earlier stage, no part comes from
    two stages, and a typed part is named with the key (so the type) of the stage that provides it."""
    valid: dict[str, PartRef] = dict.fromkeys(PARTS, "")
    provided: dict[str, PartRef] = {}  # part name -> the provider's key (or name)
    provider: dict[str, str] = {}  # part name -> the stage that provides it
    for stage in stages:
        unknown = [n for n in stage.requires_names + stage.provides_names + stage.optional_names if not _met(n, valid)]
        if unknown:
            raise ContractError(f"strategy {strategy}: stage '{stage.name}' names unknown part(s) {', '.join(unknown)}; "
                                f"valid parts: {', '.join(PARTS)}")
        for need in stage.requires:
            name = part_name(need)
            if not _met(name, provided):
                raise ContractError(f"strategy {strategy}: stage '{stage.name}' requires '{name}', which no earlier stage "
                                    f"provides (provided before it: {', '.join(provided) or 'nothing'})")
            _same_key(strategy, stage.name, need, provided.get(name), provider.get(name))
        for maybe in stage.optional:
            _same_key(strategy, stage.name, maybe, provided.get(part_name(maybe)), provider.get(part_name(maybe)))
        for part in stage.provides:
            name = part_name(part)
            if name in provided:
                raise ContractError(f"strategy {strategy}: '{name}' is provided by two stages, "
                                    f"'{provider[name]}' and '{stage.name}'")
            provided[name], provider[name] = part, stage.name


def _same_key(strategy: str, stage: str, need: PartRef, given: PartRef | None, by: str | None) -> None:
    """A typed part must be read with the key it was set with: another key of that name is another type."""
    if isinstance(need, PartKey) and isinstance(given, PartKey) and need is not given:
        raise ContractError(f"strategy {strategy}: stage '{stage}' reads '{need.name}' as {need.about!r}, but '{by}' "
                            f"provides it as {given.about!r}: the two stages disagree on the part's type")


def run_stages(ctx: QueryState, stages: Sequence[Stage]) -> Pool:
    """Each stage in order, timed, with its summary in the query trace; a stage that does not set a
    part it declares is an error, not a silent gap for the next stage."""
    pool: Pool = {}
    for stage in stages:
        ctx.trace.stage_list.append(stage.name)
        ctx._notes, ctx._set_aside_ms = {}, 0.0
        ctx._running = stage.name
        ctx._allowed = stage.named_parts
        t = time.perf_counter()
        try:
            pool = stage.run(ctx, pool)
        finally:
            ctx._allowed = None
        ms = (time.perf_counter() - t) * 1000 - ctx._set_aside_ms
        ctx.trace.stages.append(StageLog(stage=stage.name, ms=round(ms, MS_DIGITS), info=ctx._notes))
        unset = [p for p in stage.provides_names if not ctx.provided(p)]
        if unset:
            raise MissingPart(f"stage '{stage.name}' declares it provides {', '.join(unset)} but did not set it")
    return pool
