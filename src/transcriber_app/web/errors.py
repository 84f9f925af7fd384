"""JSON errors with stable codes: ``{"error": "<code>", "message": "<text>"}``."""

from __future__ import annotations

from datetime import datetime

import attrs
from starlette.responses import JSONResponse

from transcriber_app.web.schemas import doc, to_json


@attrs.frozen(kw_only=True)
class Error:
    """An error: a stable code for programs, a message for people."""

    error: str = attrs.field(metadata=doc("stable code; the contract"))
    message: str = attrs.field(metadata=doc("human text; may change"))
    resets: datetime | None = attrs.field(
        default=None,
        metadata=doc("with quota_exceeded: when today's quota is whole again (next UTC midnight)"),
    )


class ApiError(Exception):
    """An error answer; ``code`` is stable for clients, ``message`` is for people."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        *,
        resets: datetime | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        #: When a spent quota is whole again; only with ``quota_exceeded``.
        self.resets = resets


def error_response(error: ApiError) -> JSONResponse:
    """The JSON answer for ``error``."""
    return JSONResponse(
        to_json(Error(error=error.code, message=error.message, resets=error.resets)),
        status_code=error.status,
        headers=error.headers,
    )
