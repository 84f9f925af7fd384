"""What the routes reach through the app's state."""

from __future__ import annotations

from starlette.requests import Request

from transcriber_app.bootstrap import Runtime


def runtime_of(request: Request) -> Runtime:
    """The runtime the app was created over."""
    runtime: Runtime = request.app.state.runtime
    return runtime
