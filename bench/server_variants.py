"""``transcriber serve`` with another HTTP protocol in uvicorn, so benchmarks can A/B them.

Usage: python bench/server_variants.py <variant> serve -c <config>

Variants:
- ``limited``: the service as shipped (``web.connections.LimitedHttpProtocol``);
- ``stock``: uvicorn's own httptools protocol, as before the HTTP limits: none;
- ``h11``: uvicorn's h11 protocol with ``h11_max_incomplete_event_size`` set to
  ``[http] max_header_bytes`` (h11's only limit: no header deadline, no cap).

``command(variant)`` is the argument list for ``running_service(command=...)``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

VARIANTS = ("stock", "h11", "limited")
SCRIPT = Path(__file__).resolve()


def command(variant: str) -> list[str]:
    """The command that starts the service with ``variant``'s protocol (before ``-c``)."""
    return [sys.executable, str(SCRIPT), variant, "serve"]


def _patch(variant: str) -> None:
    """Make ``transcriber_app.server`` build uvicorn with ``variant``'s protocol."""
    import uvicorn  # noqa: PLC0415 - only in the server process

    from transcriber_app import server  # noqa: PLC0415

    if variant == "limited":
        return
    original = server.uvicorn_config

    def patched(*args: Any, **kwargs: Any) -> uvicorn.Config:
        config = original(*args, **kwargs)
        config.ws = "auto"
        if variant == "stock":
            config.http = "httptools"
        else:
            config.http = "h11"
            config.h11_max_incomplete_event_size = args[0].config.http.max_header_bytes
        return config

    server.uvicorn_config = patched
    server.fit_open_files_limit = lambda _: None


def main() -> int:
    """Patch the server for the variant named first, then run the ``transcriber`` command."""
    # Run as a script, this folder leads sys.path, and its queue.py would hide the stdlib's.
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != SCRIPT.parent]
    variant, *argv = sys.argv[1:]
    if variant not in VARIANTS:
        print(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    _patch(variant)
    from transcriber_app.cli import main as cli  # noqa: PLC0415

    return cli(argv)


if __name__ == "__main__":
    sys.exit(main())
