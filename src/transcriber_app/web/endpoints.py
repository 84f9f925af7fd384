"""The API's routes, each declared once: handler, parameters, form, answers (ADR 37).

An ``Endpoint`` is what Starlette mounts (``routes``) and what the OpenAPI
document describes (``transcriber_app.web.openapi``); nothing about a route
is written twice. Answer bodies are attrs classes (``web.schemas``); an
error answer names its stable codes, and the document shows them as the
``error`` field's allowed values, so the fuzzer in CI holds the code to them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

import attrs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from transcriber_app.web.errors import Error
from transcriber_app.web.schemas import Schema

#: A route's handler.
Handler = Callable[[Request], Awaitable[Response]]


@attrs.frozen(kw_only=True)
class Param:
    """A path, query or header parameter."""

    name: str
    where: Literal["path", "query", "header"]
    description: str
    schema: Schema = attrs.Factory(lambda: {"type": "string"})
    #: Path parameters are always required.
    required: bool = False


@attrs.frozen(kw_only=True)
class FormField:
    """A field of a ``multipart/form-data`` request body."""

    name: str
    description: str
    schema: Schema
    required: bool = False
    #: The one other field that may be sent instead of this one: exactly one of the two is
    #: required (``file`` or ``url``, SPEC §28).
    either: str | None = None
    #: The part's own content type, when the field is a file.
    content_type: str | None = None


@attrs.frozen(kw_only=True)
class Answer:
    """One status a route answers with: its bodies by media type, headers and error codes."""

    status: int
    description: str
    #: Media type → the body: an attrs class (JSON), a tuple of them (any of them),
    #: a literal schema, or None (text).
    content: Mapping[str, type | tuple[type, ...] | Schema | None] = attrs.Factory(dict)
    #: Response header name → what it says.
    headers: Mapping[str, str] = attrs.Factory(dict)
    #: The stable ``error`` codes of a JSON error answer.
    codes: tuple[str, ...] = ()
    #: OpenAPI links: name → operation id and its parameters taken from this answer.
    links: Mapping[str, Link] = attrs.Factory(dict)


@attrs.frozen
class Link:
    """An OpenAPI link: the operation this answer leads to, its parameters from the answer."""

    operation_id: str
    #: Parameter name → runtime expression (``$response.body#/job_id``).
    parameters: Mapping[str, str]


def json_answer(
    status: int,
    body: type | Schema,
    description: str,
    *,
    headers: Mapping[str, str] | None = None,
    links: Mapping[str, Link] | None = None,
) -> Answer:
    """An answer whose JSON body is the attrs class ``body`` (or has the schema ``body``)."""
    return Answer(
        status=status,
        description=description,
        content={"application/json": body},
        headers=headers or {},
        links=links or {},
    )


def text_answer(status: int, description: str, media_type: str = "text/plain") -> Answer:
    """An answer whose body is text of ``media_type``."""
    return Answer(status=status, description=description, content={media_type: None})


def error(
    status: int, *codes: str, description: str, headers: Mapping[str, str] | None = None
) -> Answer:
    """A JSON error answer ``{"error", "message"}`` whose ``error`` is one of ``codes``."""
    return Answer(
        status=status,
        description=description,
        content={"application/json": Error},
        headers=headers or {},
        codes=codes,
    )


@attrs.frozen(kw_only=True)
class Endpoint:
    """One method on one path: what Starlette runs and what the document says of it."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    handler: Handler
    summary: str
    #: Needs a bearer token when ``[http] api_tokens`` is set (then 401 is one of its answers).
    secured: bool = False
    parameters: tuple[Param, ...] = ()
    #: Its 401 while tokens are set, when not the API's own (``/v1`` answers in OpenAI's shape).
    unauthorized: Answer | None = None
    #: Fields of a ``multipart/form-data`` body; none: the route takes no body.
    form: tuple[FormField, ...] = ()
    #: The schema of an ``application/json`` body, for a route that takes one instead.
    json_body: Schema | None = None
    answers: tuple[Answer, ...]

    @property
    def operation_id(self) -> str:
        """The document's ``operationId``: the handler's name."""
        return self.handler.__name__


def routes(endpoints: tuple[Endpoint, ...]) -> list[Route]:
    """The Starlette routes of ``endpoints``: one per path, dispatching on its methods.

    One route per path, not per method: a 405's ``Allow`` then lists every
    method the path takes (``GET`` and ``POST /api/voices``), as the document does.
    """
    by_path: dict[str, dict[str, Handler]] = {}
    for endpoint in endpoints:
        by_path.setdefault(endpoint.path, {})[endpoint.method] = endpoint.handler
    found = []
    for path, handlers in by_path.items():
        if len(handlers) == 1:
            [(method, handler)] = handlers.items()
            found.append(Route(path, handler, methods=[method]))
        else:
            found.append(Route(path, _by_method(handlers), methods=list(handlers)))
    return found


def _by_method(handlers: Mapping[str, Handler]) -> Handler:
    """One handler that runs the one of ``handlers`` for the request's method."""

    async def handle(request: Request) -> Response:
        # HEAD is served by GET's handler, as Starlette serves a GET route's.
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)

    return handle
