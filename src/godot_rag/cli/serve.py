"""The servers: serve (HTTP API and the debugger page) and mcp (Model Context Protocol)."""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..cli_options import with_db, with_llm, with_retrieve
from .base import fail, main, make_db, open_llm, stop_on_signals

if TYPE_CHECKING:
    from ..cli_options import LlmArgs, RetrieveArgs

@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default="8000", show_default=True,  # text: a bad value gets the one-line error of listen_socket
              help="0 to 65535 (0: a free one; the ready line names it).")
@click.option("--allow-host", "allow_hosts", multiple=True,
              help="Also answer requests whose Host header names this (repeatable; '*': any). By default only the "
                   "bound host, localhost and 127.0.0.1 (a web page on another name cannot drive the server).")
@click.option("--no-warm", is_flag=True, help="Do not load the indexes and the embedder at start.")
@click.option("--cross-encoder", "cross_encoder", default=None, help="Local CrossEncoder directory (reranker cross-encoder).")
@click.option("--allow-path", "allow_paths", multiple=True, envvar="GODOT_RAG_SCAN_ALLOW_PATH",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Let POST /api/scan read project folders under DIR on this machine (repeatable).")
@with_llm
@with_db
def serve(host: str, port: str, allow_hosts: tuple[str, ...], no_warm: bool, cross_encoder: str | None,
          allow_paths: tuple[Path, ...], llm: LlmArgs, dsn: str | None, data_dir: Path | None) -> None:
    """Serve POST /api/retrieve, GET /api/strategies, the OpenAPI docs and the debugger page at /."""
    from ..api.app import bound_heap, create_app, listen_socket

    try:
        sock = listen_socket(host, port)
    except ValueError as e:
        fail(str(e), 2)
    bound_heap()
    from ..api.guards import LOCAL_HOSTS
    from ..retrieve.pipeline import ModelFiles, Retriever

    model = open_llm(llm, False, "serve")
    retriever = Retriever(make_db(dsn, data_dir), llm=model, files=ModelFiles(cross_encoder, llm.judge_calibration))
    allowed = None if "*" in allow_hosts else [host, *LOCAL_HOSTS, *allow_hosts]
    app = create_app(retriever, warm=False, llm_optional=llm.llm_optional, allowed_hosts=allowed, allow_paths=allow_paths)
    # uvicorn shuts down cleanly on SIGINT/SIGTERM, then re-raises the signal to the handler that was
    # there before it: this one, so the `finally` below runs instead of the process dying on the spot.
    stop_on_signals()
    try:
        _run_http(app, sock, host, retriever, not no_warm)
    finally:
        sock.close()
        retriever.db.stop()  # the embedded PostgreSQL this process started goes with it


def _log(message: str) -> None:
    click.echo(f"godot-rag: {message}", err=True)


def _run_http(app: Any, sock: socket.socket, host: str, retriever: Any, warm: bool) -> None:
    """Warm the retriever (unless told not to), then serve `app` on `sock` (bound to `host`, as given) until a
    signal ends it."""
    import uvicorn

    from ..store.db import StoreError

    port = sock.getsockname()[1]

    class Server(uvicorn.Server):
        """Says so once the socket listens (after the warm-up), so a script can wait for the line."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                click.echo(f"godot-rag serving on http://{host}:{port}")
                sys.stdout.flush()

    if warm:
        try:
            retriever.warm(log=_log)
        except StoreError as e:
            _log(f"warm-up failed ({str(e).splitlines()[0]}); requests will answer 503 with the reason")
    _log(f"starting the HTTP server on {host}:{port}")
    Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run(sockets=[sock])


@main.command()
@click.option("--http", "http", is_flag=True, help="Streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True)
@click.option("--allow-path", "allow_paths", multiple=True, envvar="GODOT_RAG_SCAN_ALLOW_PATH",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Let the scan tool read project folders under DIR on this machine (repeatable).")
@click.option("--no-warm", is_flag=True, help="Do not load the indexes and the embedder at start.")
@with_retrieve
@with_llm
@with_db
def mcp(http: bool, host: str, port: int, allow_paths: tuple[Path, ...], no_warm: bool, rargs: RetrieveArgs,
        llm: LlmArgs, dsn: str | None, data_dir: Path | None) -> None:
    """Model Context Protocol server for coding agents: tools evidence, explain, lookup, scan, strategies
    and the resource godot-rag://record/{table}/{id}. stdio by default (the agent starts it)."""
    from ..retrieve.engine.config import ConfigError
    from ..retrieve.pipeline import ModelFiles, Retriever

    try:
        from ..api.mcp_server import create_server
    except ImportError as e:
        fail(str(e))
    try:
        cfg = rargs.config(llm)
    except ConfigError as e:
        fail(str(e))
    model = open_llm(llm, False, "mcp")
    retriever = Retriever(make_db(dsn, data_dir), llm=model, files=ModelFiles(rargs.cross_encoder, llm.judge_calibration))
    server = create_server(retriever, cfg, list(allow_paths))
    stop_on_signals()
    _run_mcp(server, retriever, cfg, (host, port) if http else None, not no_warm)


def _run_mcp(server: Any, retriever: Any, cfg: Any, address: tuple[str, int] | None, warm: bool) -> None:
    """Serve over stdio, or streamable HTTP at `address`; whatever ends it, the database stops with it."""
    from ..api.mcp_server import print_err, serve_http, serve_stdio, warm_in_background

    warming, signalled = None, None
    try:
        if warm:
            warming = warm_in_background(retriever, cfg)
        if address is not None:
            def ready(url: str) -> None:
                click.echo(f"godot-rag mcp serving on {url}")
                sys.stdout.flush()

            serve_http(server, *address, ready)
        else:
            serve_stdio(server)
    except SystemExit as e:
        signalled = e.code if isinstance(e.code, int) else 1
        raise
    finally:
        if warming is not None:
            warming.join(timeout=120)  # a warm-up half-way through starting the database finishes first
        retriever.db.stop()  # the embedded PostgreSQL this process started goes with it
        print_err("godot-rag mcp: stopped")
        if signalled is not None:
            # The SDK's stdin reader (or a tool call) may sit in a worker thread the interpreter would
            # wait for at exit; everything this process started is stopped, so go now.
            sys.stdout.flush()
            os._exit(signalled)
