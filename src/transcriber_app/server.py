"""``transcriber serve`` and ``transcriber worker``: what each process runs, and one lifecycle.

``serve`` runs the HTTP API, the admin panel, the bot and the step loops
its ``[workers]`` counts ask for, on ``[http]``. ``worker`` runs only the
step loops, with ``/health`` and ``/metrics`` on ``[worker]`` (ADR 38).
Both stop the same way: SIGTERM or SIGINT stops intake (no new connections,
no new jobs taken), lets running steps finish for ``grace_seconds``, then
cancels them (their leases make that safe) and exits within
``hard_seconds`` of the signal.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import uvicorn
from starlette.types import ASGIApp

from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config
from transcriber_app.web import create_app, create_probe_app
from transcriber_app.web.auth import prepare_admin
from transcriber_app.web.connections import fit_open_files_limit, protocol_for
from transcriber_app.web.metrics import Metrics
from transcriber_core.errors import DatabaseDown

log = logging.getLogger("transcriber.server")

#: How long closing may take after the hard timeout has already passed.
_CLOSE_SECONDS = 5.0
#: How long start-up waits for a database that does not answer (restarting) before it gives up.
START_DATABASE_SECONDS = 30.0
#: The first pause between two start-up tries on the database; doubles up to ``_START_PAUSE_CAP``.
_START_PAUSE = 0.5
_START_PAUSE_CAP = 5.0

_T = TypeVar("_T")


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the service owns the lifecycle."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def uvicorn_config(runtime: Runtime, app: ASGIApp, *, host: str, port: int) -> uvicorn.Config:
    """uvicorn settings for the service: our logging, no total read timeout on uploads.

    Connections are ``web.connections``' protocol: uvicorn's httptools one
    with ``[http]``'s limits on header size, header time and connection count.
    """
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="off",
        http=protocol_for(runtime.config.http),
        # No WebSocket routes: an upgrade must not hand the connection to a
        # protocol without our limits.
        ws="none",
        timeout_graceful_shutdown=math.ceil(runtime.config.shutdown.grace_seconds),
        server_header=False,
        # X-Forwarded-For from 127.0.0.1 would otherwise pick the client address
        # the login throttle counts by; a proxy in front is not assumed.
        proxy_headers=False,
    )


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything starts, so a taken port fails early."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _bind_failed_note(exc: OSError, host: str, port: int, section: str) -> str:
    """The sentence of a failed bind: who holds the port, and the key that picks another."""
    key = f"[{section}] port (TRANSCRIBER_{section.upper()}_PORT)"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use by another program: "
            f"stop it, or set {key} to a free port"
        )
    if exc.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges this user lacks: set {key} above 1023"
    return f"cannot listen on {host} port {port} ({exc.strerror}): check [{section}] host and port"


async def serve(config: Config) -> int:
    """Run the whole service until SIGTERM or SIGINT; the exit status."""
    return await _build_and_run(config, intake=True)


async def work(config: Config) -> int:
    """Run only the step loops, with ``/health`` and ``/metrics``, until SIGTERM or SIGINT."""
    return await _build_and_run(config, intake=False)


async def _build_and_run(config: Config, *, intake: bool) -> int:
    try:
        runtime = await _on_database("build", lambda: build(config, intake=intake))
    except DatabaseDown:
        return 1
    metrics = Metrics()
    with metrics.watching():
        return await _run(runtime, metrics, intake=intake)


async def _run(runtime: Runtime, metrics: Metrics, *, intake: bool) -> int:
    config = runtime.config
    role = "serve" if intake else "worker"
    listener = config.http if intake else config.worker
    host, port = listener.host, listener.port
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    fit_open_files_limit(config.http.max_connections)
    try:
        sock = _bind(host, port)
    except OSError as exc:
        log.error(  # noqa: TRY400 - the errno says it all; a traceback would add nothing
            "service.bind_failed",
            extra={
                "role": role,
                "host": host,
                "port": port,
                "errno": exc.errno,
                "note": _bind_failed_note(exc, host, port, "http" if intake else "worker"),
            },
        )
        await runtime.close()
        return 1
    app = await _app(runtime, metrics, intake=intake, role=role)
    if app is None:
        sock.close()
        await _close_promptly(runtime)
        return 1
    server = _Server(uvicorn_config(runtime, app, host=host, port=port))
    runtime.workers.start()
    failed_bot = await _start_bot(runtime, role)
    if failed_bot is not None:
        sock.close()
        return failed_bot
    server_task = asyncio.create_task(server.serve(sockets=[sock]), name="transcriber-http")
    stopper = asyncio.create_task(stop.wait())
    log.info(
        "service.start",
        extra={
            "role": role,
            "host": host,
            "port": port,
            "recognizer": config.recognizer.kind,
            "loops": sum(runtime.workers.concurrency.values()),
        },
    )
    await asyncio.wait({server_task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    failed = server_task.done() and not stop.is_set()
    grace, running = config.shutdown.grace_seconds, runtime.workers.running
    log.info(
        "service.stopping",
        extra={
            "grace_seconds": grace,
            "running_steps": running,
            "note": f"stopping: waiting up to {grace:g} s for {running} running steps",
        },
    )
    try:
        async with asyncio.timeout(config.shutdown.hard_seconds):
            await _shutdown(runtime, server, server_task)
    except TimeoutError:
        # The timeout is the event; its traceback would say nothing.
        log.error("service.hard_stop", extra={"hard_seconds": config.shutdown.hard_seconds})  # noqa: TRY400
        # Best effort: the database and sessions are closed, not abandoned.
        with contextlib.suppress(Exception, TimeoutError):
            async with asyncio.timeout(_CLOSE_SECONDS):
                await runtime.close()
        return 1
    finally:
        stopper.cancel()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
    log.info("service.stopped")
    return 1 if failed else 0


async def _app(runtime: Runtime, metrics: Metrics, *, intake: bool, role: str) -> ASGIApp | None:
    """The ASGI app of the process; None (logged) when start-up failed and the process must end."""
    try:
        if not intake:
            return create_probe_app(runtime, metrics)
        # Before the port opens: the session key, and the setup link while no owner exists.
        admin = await _on_database("prepare_admin", lambda: prepare_admin(runtime))
        return create_app(runtime, metrics, admin=admin)
    except Exception as exc:  # noqa: BLE001 - any start-up failure ends the process, promptly
        log.error("service.start_failed", extra={"role": role, "error_type": type(exc).__name__})  # noqa: TRY400
        return None


async def _start_bot(runtime: Runtime, role: str) -> int | None:
    """Start the bot's polling; on failure stop what started and the exit status, else None."""
    if runtime.bot is None:
        return None
    from transcriber_adapters.telegram import TokenRejected  # noqa: PLC0415 - aiogram only with a bot

    try:
        await runtime.bot.start()
    except TokenRejected:
        log.error("telegram.token_rejected")  # noqa: TRY400 - the event is the message
        await runtime.workers.drain(0)
        await runtime.close()
        return 2
    except Exception as exc:  # noqa: BLE001 - any start-up failure ends the process, promptly
        log.error("service.start_failed", extra={"role": role, "error_type": type(exc).__name__})  # noqa: TRY400
        await runtime.workers.drain(0)
        await _close_promptly(runtime)
        return 1
    return None


async def _on_database(what: str, start: Callable[[], Awaitable[_T]]) -> _T:
    """Run a start-up step, again while the database does not answer, for a bounded time.

    A database that is restarting answers again within seconds; one that
    stays away for ``START_DATABASE_SECONDS`` ends the start with
    ``service.start_failed`` (and ``DatabaseDown``), so a supervisor sees the
    process exit instead of a process that neither serves nor ends.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + START_DATABASE_SECONDS
    pause = _START_PAUSE
    while True:
        try:
            return await start()
        except DatabaseDown as exc:
            if loop.time() + pause > give_up:
                log.error(  # noqa: TRY400 - the event is the message
                    "service.start_failed",
                    extra={"step": what, "error_type": type(exc).__name__},
                )
                raise
            log.warning("service.database_wait", extra={"step": what, "pause_seconds": pause})
        await asyncio.sleep(pause)
        pause = min(pause * 2, _START_PAUSE_CAP)


async def _close_promptly(runtime: Runtime) -> None:
    """Close the runtime (its pool ends its reconnect tasks), giving up after ``_CLOSE_SECONDS``."""
    with contextlib.suppress(Exception, TimeoutError):
        async with asyncio.timeout(_CLOSE_SECONDS):
            await runtime.close()


async def _shutdown(runtime: Runtime, server: _Server, server_task: asyncio.Task[None]) -> None:
    """Stop every intake, let the workers drain, then close (the bot's session last of all)."""
    grace = runtime.config.shutdown.grace_seconds
    runtime.workers.stop_intake()
    server.should_exit = True
    bot_stopped = runtime.bot.stop(grace) if runtime.bot is not None else asyncio.sleep(0)
    await asyncio.gather(
        runtime.workers.drain(grace), bot_stopped, server_task, return_exceptions=True
    )
    await runtime.close()
