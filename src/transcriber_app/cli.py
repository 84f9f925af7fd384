"""The ``transcriber`` command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from transcriber_adapters.datadir import DataDirInUse
from transcriber_app import DISTRIBUTION, version
from transcriber_app.config import ConfigError, load_config
from transcriber_app.extras import MissingExtra, require
from transcriber_app.logs import configure_logging


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
    args = parser.parse_args(argv)
    configure_logging()
    try:
        return _run(args.command, args.config)
    except (DataDirInUse, MissingExtra) as exc:
        print(f"transcriber: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    except ConfigError as exc:
        # From loading the file, or from what only building the service finds
        # out (a malformed bot token).
        print(f"transcriber: config error: {exc}", file=sys.stderr)  # noqa: T201
        return 2


def _run(command: str, config_path: Path | None) -> int:
    """Run ``serve`` or ``worker`` on the loop uvicorn would pick; the exit status."""
    config = load_config(config_path)
    require(f"transcriber {command}", "server")
    from uvicorn.loops.auto import auto_loop_factory  # noqa: PLC0415 - keep --help fast

    from transcriber_app import server  # noqa: PLC0415

    run = server.serve if command == "serve" else server.work
    # uvloop where it is installed (uvicorn[standard]), as ``uvicorn.run`` would
    # pick: it receives a large upload about 1.3x faster than the stock loop.
    with asyncio.Runner(loop_factory=auto_loop_factory()) as runner:
        code = runner.run(run(config))
    if config.recognizer.kind == "whisper":
        _leave_before_native_threads_abort(code)
    return code


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
