"""The CLI's option groups, each defined once as a decorator (after sqlite-utils): the database,
the LLM, the retrieval settings and the output. A group hands its command one typed object."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click


def _group(options: list, bundle: str | None = None, build=None):
    """Applies `options`; with `bundle`, their values reach the command as one object built by `build`."""
    names = [o(lambda: None).__click_params__[0].name for o in options]

    def decorator(f: Callable[..., Any]) -> Callable[..., Any]:
        if bundle is None:
            target = f
        else:
            @functools.wraps(f)
            def target(*args: Any, **kwargs: Any) -> Any:
                kwargs[bundle] = build(**{n: kwargs.pop(n) for n in names})
                return f(*args, **kwargs)
        for opt in reversed(options):
            target = opt(target)
        return target

    return decorator


db_options = [
    click.option("--dsn", envvar="GODOT_RAG_DSN", default=None,
                 help="PostgreSQL DSN of your own server (env GODOT_RAG_DSN). Default: the embedded server."),
    click.option("--data-dir", envvar="GODOT_RAG_DATA", default=None, type=click.Path(path_type=Path),
                 help="Data directory of the embedded server (env GODOT_RAG_DATA; default: the user data directory, "
                      "e.g. ~/.local/share/godot-rag/pgdata; `status` prints it)."),
]
with_db = _group(db_options)


@dataclass(frozen=True)
class LlmArgs:
    llm_gguf: str | None = None
    llm_bundled: str | None = None
    llm_url: str | None = None
    llm_model: str | None = None
    llm_timeout: float = 60.0
    llm_retries: int = 2
    llm_optional: bool = False
    validator_llm: bool = False
    judge_calibration: Path | None = None

    @property
    def given(self) -> bool:
        return bool(self.llm_gguf or self.llm_bundled or self.llm_url)

    def spec(self) -> dict:
        """What a worker process needs to open the same LLM."""
        return {"gguf": self.llm_gguf, "bundled": self.llm_bundled, "url": self.llm_url, "model": self.llm_model,
                "timeout": self.llm_timeout, "retries": self.llm_retries}

    def make(self, needed: bool):
        """The LLM, when one is named or the strategy needs one (then the bundled Qwen by default)."""
        if self.judge_calibration:
            # Checked now, so a bad file is one line before any work (the retriever reads it, as do --batch workers).
            from .store.calibration import CalibrationError, read

            try:
                read(self.judge_calibration)
            except CalibrationError as e:
                raise click.ClickException(str(e)) from None
        if not (self.given or needed):
            return None
        from .models.llm import make_llm

        return make_llm(**self.spec())


llm_options = [
    click.option("--llm-gguf", default=None, help="GGUF file for the in-process Qwen (default: the bundled 1.5B)."),
    click.option("--llm-bundled", type=click.Choice(["1.5b", "0.5b"]), default=None, help="Use a bundled Qwen."),
    click.option("--llm-url", default=None, help="OpenAI-compatible chat endpoint base URL (llama.cpp server, vLLM, Ollama)."),
    click.option("--llm-model", default=None, help="Model name to send to --llm-url."),
    click.option("--llm-timeout", default=60.0, show_default=True),
    click.option("--llm-retries", default=2, show_default=True),
    click.option("--llm-optional", is_flag=True, help="If the LLM is down, fall back to the deterministic validator."),
    click.option("--validator-llm", is_flag=True, help="Add the Qwen judge to F's validator."),
    click.option("--judge-calibration", envvar="GODOT_RAG_JUDGE_CALIBRATION", default=None,
                 type=click.Path(exists=True, dir_okay=False, path_type=Path),
                 help="Judge calibration file (default: yours from `godot-rag judge calibrate`, then the shipped one)."),
]
with_llm = _group(llm_options, "llm", LlmArgs)


def _parse_value(raw: str):
    """A `--set` value: JSON when it is JSON (through the one JSON reader), else the text as given."""
    from .jsonlines import JSONInputError, parse_json
    from .retrieve.engine.config import ConfigError

    try:
        return parse_json(raw)
    except JSONInputError as e:
        if "nested more than" in str(e):
            raise ConfigError(f"--set: {e}") from None
        return raw


@dataclass(frozen=True)
class RetrieveArgs:
    k: int | None = None
    tables: str | None = None
    config_file: Path | None = None
    settings: tuple[str, ...] = ()
    reranker: str | None = None
    cross_encoder: str | None = None
    godot_version: str | None = None
    extends: str | None = None

    def config(self, llm: LlmArgs | None = None):
        """Flags, `--set` and `--config` through the one settings model (an unknown name lists the valid ones)."""
        from .retrieve.engine.config import ConfigError, RetrieveConfig

        overrides = {}
        for item in self.settings:
            if "=" not in item:
                raise ConfigError(f"--set expects name=value, got {item!r}")
            name, raw = item.split("=", 1)
            overrides[name.strip()] = _parse_value(raw)
        flags = {"k": self.k, "reranker": self.reranker, "godot_version": self.godot_version, "extends": self.extends,
                 "tables": [t.strip() for t in self.tables.split(",") if t.strip()] if self.tables else None}
        if llm is not None:
            flags |= {"llm_optional": llm.llm_optional or None, "validator_llm": llm.validator_llm or None}
        overrides |= {k: v for k, v in flags.items() if v is not None}
        if self.config_file:
            return RetrieveConfig.from_file(self.config_file, **overrides)
        return RetrieveConfig.from_mapping(overrides)


settings_options = [
    click.option("--config", "config_file", type=click.Path(exists=True, path_type=Path), default=None,
                 help="TOML file with [retrieve] settings."),
    click.option("--set", "settings", multiple=True, help="Override one setting: --set fusion=minmax."),
]
with_settings = _group(settings_options, "rargs", RetrieveArgs)  # the settings alone (scan): `rargs.config()`

retrieve_options_list = [
    click.option("--k", default=None, type=int, help="Results per table (default 10)."),
    click.option("--tables", default=None, help="Comma-separated tables (default all three)."),
    *settings_options,
    click.option("--reranker", default=None, help="none, nanoranker, qwen or cross-encoder."),
    click.option("--cross-encoder", "cross_encoder", default=None, help="Local CrossEncoder directory."),
    click.option("--godot-version", "godot_version", type=click.Choice(["auto", "3", "4"]), default=None,
                 help="Hint for the ambiguous migration cases (default auto)."),
    click.option("--extends", "extends", default=None,
                 help="The script's class when the chunk has no `extends` line (resolves bare calls)."),
]
with_retrieve = _group(retrieve_options_list, "rargs", RetrieveArgs)


@dataclass(frozen=True)
class OutputArgs:
    as_json: bool = False
    quiet: bool = False


output_options = [
    click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout."),
    click.option("--quiet", is_flag=True, help="No progress bar on stderr."),
]
with_output = _group(output_options, "output", OutputArgs)


@dataclass(frozen=True)
class IngestArgs:
    force: bool = False
    quiet: bool = False
    reference_findings: bool = True

    @property
    def options(self) -> str:
        """The options that change the records, as the skip fingerprint holds them (`ingest/state.py`)."""
        return "reference_findings" if self.reference_findings else ""


ingest_options = [
    click.option("--force", is_flag=True, help="Rebuild even when the inputs did not change."),
    click.option("--quiet", is_flag=True, help="No progress bar."),
    click.option("--reference-findings/--no-reference-findings", default=True, show_default=True,
                 help="Derive label_prototypes from the class reference: deprecated_api and experimental_api per "
                      "marked class or member, missing_engine_member and wrong_argument_count (--no-reference-findings: "
                      "only the hand-written ones)."),
]
with_ingest = _group(ingest_options, "flags", IngestArgs)
