"""Errors of the ``/v1`` routes in OpenAI's shape: ``{"error": {"message","type","param","code"}}``.

``/api`` keeps its own ``{"error": "<code>", "message"}``; an ``ApiError``
raised by the shared parts (token, upload limits) is answered here in
OpenAI's shape and with OpenAI's status codes (ADR 46).
"""

from __future__ import annotations

import attrs
from starlette.responses import JSONResponse

from transcriber_app.web.errors import ApiError
from transcriber_app.web.schemas import doc, to_json

#: Our status → the one OpenAI documents for it: what it has no code for becomes 400 or 503.
_STATUSES = {408: 400, 415: 400, 422: 400, 431: 400, 507: 503}
#: The form field each of our stable codes is about.
_PARAMS = {
    "missing_file": "file",
    "empty_file": "file",
    "too_large": "file",
    "bad_language": "language",
    "bad_prompt": "prompt",
    "bad_task": "task",
    "translation_unsupported": "model",
    "bad_idempotency_key": "Idempotency-Key",
}


@attrs.frozen(kw_only=True)
class OpenAIErrorBody:
    """What went wrong, as OpenAI says it."""

    message: str = attrs.field(metadata=doc("human text; may change"))
    type: str = attrs.field(
        metadata=doc("invalid_request_error, authentication_error or server_error")
    )
    param: str | None = attrs.field(metadata=doc("the form field at fault, or null"))
    code: str | None = attrs.field(metadata=doc("stable code; the contract"))


@attrs.frozen(kw_only=True)
class OpenAIError:
    """An error of the ``/v1`` routes."""

    error: OpenAIErrorBody


class OpenAIFault(Exception):  # noqa: N818 - an answer, raised to leave a handler
    """An error answer of a ``/v1`` route."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.headers = headers

    @classmethod
    def of(cls, error: ApiError) -> OpenAIFault:
        """The ``/v1`` answer to what ``/api`` would have answered with ``error``."""
        return cls(
            _STATUSES.get(error.status, error.status),
            error.code,
            error.message,
            param=_PARAMS.get(error.code),
            headers=error.headers,
        )


def error_type(status: int) -> str:
    """OpenAI's ``type`` of an error answered with ``status``."""
    if status == 401:
        return "authentication_error"
    if status == 429:
        # What OpenAI answers when an account's quota is spent.
        return "insufficient_quota"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def openai_error_response(fault: OpenAIFault, *, job_id: str | None = None) -> JSONResponse:
    """The JSON answer for ``fault``; with ``job_id``, its ``Transcriber-Job-Id`` header."""
    headers = dict(fault.headers or {})
    if job_id is not None:
        headers["Transcriber-Job-Id"] = job_id
    body = OpenAIErrorBody(
        message=fault.message, type=error_type(fault.status), param=fault.param, code=fault.code
    )
    # ``param`` and ``code`` have no default: sent as null when unset, as OpenAI sends them.
    return JSONResponse(to_json(OpenAIError(error=body)), status_code=fault.status, headers=headers)
