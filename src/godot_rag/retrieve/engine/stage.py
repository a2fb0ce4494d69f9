"""A stage: a named, typed function, and the runner that wires stages the way Haystack wires components.

A stage function takes the query (`QueryState`: the chunk, the settings, the resources, the tracer) first, then
its inputs as typed parameters, and returns its outputs as a `NamedTuple` (or None when it adds nothing):

    class Resolved(NamedTuple):
        resolution: Resolution

    def run_resolve(q: QueryState, facts: GDScriptFacts) -> Resolved: ...

- A parameter is a part an earlier stage must provide, under that name and with that type. A parameter typed
  `X | None = None` is optional: the stage runs without it.
- Keyword-only parameters (after `*`) are options, fixed when the strategy is built (`Stage.with_options`).
- A returned field is a part the stage provides. A stage that changes a part an earlier stage provided names it
  both as a parameter and as a field (`pool` in, `pool` out); no other stage may set a part again.

`check_contract` checks this when a strategy is built: every input provided earlier under its name and with its
type, no part set twice. The runner gives each stage only the parts it declared; nothing else reaches it."""
from __future__ import annotations

import inspect
import re
import time
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Union

from .state import QueryState
from .trace import MS_DIGITS, StageLog

QUERY_PARAMETER = 1  # the first parameter of every stage function: the query


class ContractError(ValueError):
    """A stage list whose stages do not fit together: an input no earlier stage provides, or provides with another
    type; a part set by two stages; a stage function whose inputs or outputs are not typed."""


class MissingPart(RuntimeError):
    """A stage's required input that no earlier stage set (a contract that was not checked)."""


@dataclass(frozen=True)
class Port:
    """One input or output of a stage: its name and type (`optional`: an input the stage runs without)."""

    name: str
    type: Any
    optional: bool = False

    def shown(self) -> str:
        return f"{self.name}{'?' if self.optional else ''}: {_type_name(self.type)}"


MODULE_PATH_RE = re.compile(r"\b(?:[a-z_]\w*\.)+(?=[A-Za-z_]\w*)")  # `godot_rag.retrieve.engine.types.` of a type's name


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) and not typing.get_args(tp) else MODULE_PATH_RE.sub("", str(tp))


def _without_none(tp: Any) -> tuple[Any, bool]:
    """(`X`, True) for `X | None`; (`tp`, False) otherwise."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            return (args[0] if len(args) == 1 else Union[tuple(args)]), True  # noqa: UP007  # a union built at run time
    return tp, False


def ports_of(name: str, fn: Callable[..., Any]) -> tuple[tuple[Port, ...], tuple[Port, ...], frozenset[str]]:
    """(inputs, outputs, option names) of a stage function, read from its signature and type hints."""
    try:
        hints = typing.get_type_hints(fn)
    except NameError as e:
        raise ContractError(f"stage '{name}': a type of its signature cannot be resolved ({e})") from None
    params = list(inspect.signature(fn).parameters.values())
    inputs, options = [], set()
    for p in params[QUERY_PARAMETER:]:
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            options.add(p.name)
            continue
        if p.name not in hints:
            raise ContractError(f"stage '{name}': input '{p.name}' has no type")
        if p.default is p.empty:
            inputs.append(Port(p.name, hints[p.name]))
            continue
        tp, nullable = _without_none(hints[p.name])
        if p.default is not None or not nullable:
            raise ContractError(f"stage '{name}': input '{p.name}' has a default; an optional input is `X | None = None`")
        inputs.append(Port(p.name, tp, optional=True))
    returned = hints.get("return", type(None))
    if returned is type(None):
        outputs: tuple[Port, ...] = ()
    elif isinstance(returned, type) and issubclass(returned, tuple) and hasattr(returned, "_fields"):
        outputs = tuple(Port(f, typing.get_type_hints(returned)[f]) for f in returned._fields)
    else:
        raise ContractError(f"stage '{name}': returns {_type_name(returned)}, not a NamedTuple of its outputs (or None)")
    return tuple(inputs), outputs, frozenset(options)


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[..., Any]
    about: str
    options: Mapping[str, Any] = field(default_factory=dict)  # keyword-only options, fixed (F's BM25 reads more)
    required: frozenset[str] = frozenset()  # optional inputs an option makes required (F's prefilter reads `facts`)

    def __post_init__(self) -> None:
        _, _, names = self.ports
        unknown = sorted(set(self.options) - names)
        if unknown:
            raise ContractError(f"stage '{self.name}' has no option(s) {', '.join(unknown)}; its options: "
                                f"{', '.join(sorted(names)) or 'none'}")

    @cached_property
    def ports(self) -> tuple[tuple[Port, ...], tuple[Port, ...], frozenset[str]]:
        return ports_of(self.name, self.run)

    @cached_property
    def inputs(self) -> tuple[Port, ...]:
        return tuple(Port(p.name, p.type, p.optional and p.name not in self.required) for p in self.ports[0])

    @property
    def outputs(self) -> tuple[Port, ...]:
        return self.ports[1]

    @property
    def requires_names(self) -> list[str]:
        return [p.name for p in self.inputs if not p.optional]

    @property
    def optional_names(self) -> list[str]:
        return [p.name for p in self.inputs if p.optional]

    @property
    def provides_names(self) -> list[str]:
        return [p.name for p in self.outputs]

    def with_options(self, about: str | None = None, requires: tuple[str, ...] = (), **options: Any) -> Stage:
        """The same stage with fixed keyword options, and optional inputs those options need made required."""
        return Stage(self.name, self.run, about or self.about, {**self.options, **options}, self.required | set(requires))


def check_contract(strategy: str, stages: Sequence[Stage]) -> None:
    """Raise ContractError unless each stage's inputs come from earlier stages under their names and types, and a
    part is set again only by a stage that takes it as an input (a stage that changes it)."""
    provided: dict[str, tuple[Port, str]] = {}  # part -> (its port, the stage that set it last)
    for stage in stages:
        for need in stage.inputs:
            got = provided.get(need.name)
            if got is None:
                if need.optional:
                    continue
                raise ContractError(f"strategy {strategy}: stage '{stage.name}' needs '{need.shown()}', which no earlier "
                                    f"stage provides (provided before it: {', '.join(provided) or 'nothing'})")
            if got[0].type != need.type:
                raise ContractError(f"strategy {strategy}: stage '{stage.name}' reads '{need.shown()}', but '{got[1]}' "
                                    f"provides '{got[0].shown()}': the two stages disagree on the part's type")
        takes = {p.name for p in stage.inputs}
        for out in stage.outputs:
            if out.name in provided and out.name not in takes:
                raise ContractError(f"strategy {strategy}: '{out.name}' is set by two stages, '{provided[out.name][1]}' "
                                    f"and '{stage.name}' (a stage that changes a part takes it as an input)")
            if out.name in provided and provided[out.name][0].type != out.type:
                raise ContractError(f"strategy {strategy}: stage '{stage.name}' sets '{out.shown()}', but "
                                    f"'{provided[out.name][1]}' provides '{provided[out.name][0].shown()}'")
            provided[out.name] = (out, stage.name)


def run_stages(q: QueryState, stages: Sequence[Stage], given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each stage in order, timed, with its summary in the query trace. A stage gets the parts it declared and
    nothing else; its outputs become parts. `given`: parts to start from (a test runs some stages on its own texts).
    The parts at the end are returned."""
    parts: dict[str, Any] = dict(given or {})
    for stage in stages:
        q.trace.stage_list.append(stage.name)
        q.begin_stage(stage.name)
        given = {}
        for need in stage.inputs:
            if need.name in parts:
                given[need.name] = parts[need.name]
            elif not need.optional:
                raise MissingPart(f"stage '{stage.name}' needs '{need.name}', which no earlier stage set")
        t = time.perf_counter()
        out = stage.run(q, **given, **stage.options)
        ms = (time.perf_counter() - t) * 1000 - q.set_aside_ms
        q.trace.stages.append(StageLog(stage=stage.name, ms=round(ms, MS_DIGITS), info=q.stage_notes))
        if out is not None:
            parts.update(out._asdict())
    return parts
