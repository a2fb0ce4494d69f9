"""The command group and what every command shares: the one-line error, the signals that end a command,
the database and the LLM a command opens."""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from ..cli_options import LlmArgs
    from ..retrieve.pipeline import Retriever
    from ..store.db import Database

T = TypeVar("T")

DEFAULT_JSONL = Path("work/godot_rag/jsonl")


def make_db(dsn: str | None, data_dir: Path | None) -> Database:
    from ..store.db import Database

    return Database(dsn=dsn, data_dir=data_dir)


def fail(message: str, code: int = 1) -> NoReturn:
    # One line: drivers (psycopg) add hint lines of their own. No password: a driver's message may quote the DSN.
    from ..errors import mask_secrets

    text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
    click.echo("error: " + mask_secrets(text), err=True)
    sys.exit(code)


def fitted(dsn: str | None, data_dir: Path | None, fit: Callable[[Retriever], T]) -> T:
    """`fit` on a retriever over the database (the fit commands: fit-guides, fit-ranker), the database stopped after;
    a bad queries file or an unreachable database is the one-line error."""
    from ..eval.queries import QueryFileError
    from ..retrieve.pipeline import Retriever
    from ..store.db import StoreError

    retriever = Retriever(make_db(dsn, data_dir))
    try:
        return fit(retriever)
    except (QueryFileError, StoreError) as e:
        fail(str(e))
    finally:
        retriever.db.stop()


def written(write: Callable[[], None]) -> None:
    """`write` a fit's files; a file that cannot be written is the one-line error naming it."""
    try:
        write()
    except OSError as e:
        fail(f"{e.filename}: cannot write ({e.strerror or e})")


class Commands(click.Group):
    """No Python traceback reaches the user: an unexpected error is one line naming what failed."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # The reader went away (`... | head`): stop quietly, as a pipeline's other tools do. Python's own
            # flush at exit would fail again on the closed pipe, so stdout now goes nowhere.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a tool the closed pipe stopped
        except Exception as e:
            if _ENDING:
                _end_quietly()
            if os.environ.get("GODOT_RAG_DEBUG"):
                raise
            fail(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else 'no message'} "
                 "(GODOT_RAG_DEBUG=1 shows the traceback)")


@click.group(cls=Commands)
@click.version_option(package_name="godot-rag")
def main() -> None:
    """Evidence retrieval for raw GDScript chunks over the Godot 4 docs."""
    # Models come from installed packages: never reach for the network at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # SIGTERM (`kill`, `timeout`, a job runner) unwinds like Ctrl-C, in every command: `finally` blocks and atexit
    # run, so the embedded server this process started and its worker pools are stopped. (`serve` and `mcp`
    # give SIGINT the same handler.)
    _ENDING.clear()
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _interrupted)
    sys.unraisablehook = _unraisable


# The signals that are ending this process, as they arrived. A signal's exception raised inside a C library's
# callback (numba compiling for ranx, a ctypes callback) cannot leave it: Python reports it as "unraisable" and
# the library then fails with an error of its own. That error is the signal's doing, not a fault to report.
_ENDING: list[int] = []


def _terminated(signum: int, frame: FrameType | None) -> None:
    if _ENDING:  # already ending: a second signal (`timeout` sends SIGTERM to the process and to its group) must
        return   # not break the cleanup under way (a pool half stopped would hang the exit)
    _ENDING.append(signum)
    raise SystemExit(128 + signum)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C, as Python's own handler does it (KeyboardInterrupt), remembered; once, as SIGTERM."""
    if _ENDING:
        return
    _ENDING.append(signum)
    raise KeyboardInterrupt


def by_sigterm(e: SystemExit) -> bool:
    """Whether this exit is SIGTERM's (`_terminated`): a batch or scan then says `interrupted`, as for Ctrl-C."""
    return bool(_ENDING) and _ENDING[0] == signal.SIGTERM and e.code == 128 + signal.SIGTERM


def _unraisable(unraisable: Any) -> None:  # sys.UnraisableHookArgs
    if isinstance(unraisable.exc_value, (SystemExit, KeyboardInterrupt)) and _ENDING:
        return  # the process is ending by that signal: no traceback for the callback it landed in
    sys.__unraisablehook__(unraisable)


def _end_quietly() -> NoReturn:
    """The exit a signal asked for, when the error that surfaced is one the signal caused."""
    signum = _ENDING[0]
    if signum == signal.SIGINT:
        fail("interrupted", 130)
    sys.exit(128 + signum)


def stop_on_signals() -> None:
    """SIGINT as SIGTERM: a server's `finally` runs instead of the process dying on the spot."""
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _terminated)


def open_llm(llm: LlmArgs, needed: bool, why: str) -> Any:
    """The LLM, or a one-line error that says how to name one."""
    from ..models.llm import LLMError

    try:
        return llm.make(needed)
    except (LLMError, ImportError, OSError, ValueError) as e:
        fail(f"{why} needs an LLM and none could be opened ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
             "name one with --llm-bundled 0.5b, --llm-gguf FILE or --llm-url URL")

