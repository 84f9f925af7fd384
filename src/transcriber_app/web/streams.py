"""Bodies read or sent in pieces: a JSON object read up to a limit, a stored file sent on.

Shared by the API, the admin panel and the workspace, each of which reads
a small JSON body (a rename, a correction) or streams a stored file whose
first piece was read before the answer started (so a missing file is a
404, not a broken 200).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request

from transcriber_app.web import inputs
from transcriber_app.web.errors import ApiError


async def read_json_object(
    request: Request, *, max_bytes: int, code: str, example: str = ""
) -> dict[str, Any]:
    """The request's body as a JSON object; 413 ``too_large`` past ``max_bytes``, else 400 ``code``.

    Decoded by ``inputs.decode_json``'s rules, whose refusals keep their own
    400 codes (``too_deep``, ``bad_unicode``). ``example``
    (``': {"S1": "Diane"}'``) follows the 400's message to show what is wanted.
    """
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise ApiError(413, "too_large", f"the body is over {max_bytes} bytes")
    try:
        value = inputs.decode_json(bytes(body))
    except inputs.JsonRefused as exc:
        raise ApiError(400, exc.code, exc.message) from None
    except ValueError:
        raise ApiError(400, code, f"the body must be JSON{example}") from None
    if not isinstance(value, dict):
        raise ApiError(400, code, f"the body must be a JSON object{example}")
    return value


async def replay_first(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``first`` (already read), then the rest of a file's pieces; the reader closed at the end."""
    try:
        if first:
            yield first
        async for chunk in rest:
            yield chunk
    finally:
        close = getattr(rest, "aclose", None)
        if close is not None:
            await close()
