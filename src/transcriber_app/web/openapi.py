"""The OpenAPI 3.1 document of ``GET /api/openapi.json``, written from the endpoint registry.

Nothing here names a route: paths, parameters, forms and answers come from
the ``Endpoint`` declarations the app mounts, and every schema from the
attrs classes the handlers send (ADR 37). With ``[http] api_tokens`` set,
secured routes carry the bearer scheme and their 401.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from transcriber_app import version
from transcriber_app.web.endpoints import Answer, Endpoint, FormField, Param
from transcriber_app.web.errors import Error
from transcriber_app.web.inputs import JSON_REFUSALS, MAX_DEPTH
from transcriber_app.web.schemas import Schema, Schemas

#: The answer every secured route may give while ``[http] api_tokens`` is set.
UNAUTHORIZED = Answer(
    status=401,
    description="tokens are configured and none of them was offered",
    content={"application/json": Error},
    headers={"WWW-Authenticate": "Bearer"},
    codes=("unauthorized",),
)
#: The 400 of every route with a JSON body, from the one decoder (``web.inputs``, ADR 68).
JSON_REFUSED = Answer(
    status=400,
    description=(
        "bad_unicode: the body is not UTF-8, or holds a lone surrogate such as \\ud800;"
        f" too_deep: arrays or objects nest more than {MAX_DEPTH} deep"
    ),
    content={"application/json": Error},
    codes=JSON_REFUSALS,
)
#: The name of the bearer scheme in ``components.securitySchemes``.
BEARER = "bearer"


def document(endpoints: Iterable[Endpoint], *, tokens: bool) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``endpoints``; ``tokens``: ``[http] api_tokens`` is set."""
    schemas = Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        operation = _operation(endpoint, schemas, tokens=tokens)
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = operation
    components: dict[str, Any] = {"schemas": dict(sorted(schemas.components.items()))}
    if tokens:
        components["securitySchemes"] = {
            BEARER: {"type": "http", "scheme": "bearer", "description": "one of [http] api_tokens"}
        }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "transcriber",
            "version": version(),
            "description": (
                "Self-hosted voice-to-text: send a recording, poll its job, read the text. "
                'Every error is JSON {"error": "<stable code>", "message": "<human text>"}.'
            ),
        },
        "paths": paths,
        "components": components,
    }


def _operation(endpoint: Endpoint, schemas: Schemas, *, tokens: bool) -> dict[str, Any]:
    answers = list(endpoint.answers)
    operation: dict[str, Any] = {
        "operationId": endpoint.operation_id,
        "summary": endpoint.summary,
    }
    if endpoint.parameters:
        operation["parameters"] = [_parameter(param) for param in endpoint.parameters]
    if endpoint.form:
        operation["requestBody"] = _form(endpoint.form)
    if endpoint.json_body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": endpoint.json_body}},
        }
        answers = _with_json_refusals(answers)
    if endpoint.secured and tokens:
        operation["security"] = [{BEARER: []}]
        answers.append(endpoint.unauthorized or UNAUTHORIZED)
    operation["responses"] = {
        str(answer.status): _answer(answer, schemas)
        for answer in sorted(answers, key=lambda a: a.status)
    }
    return operation


def _with_json_refusals(answers: list[Answer]) -> list[Answer]:
    """``answers`` with the JSON decoder's codes in the 400 (ADR 68): every JSON body has them."""
    others = [answer for answer in answers if answer.status != 400]
    own = next((answer for answer in answers if answer.status == 400), None)
    if own is None:
        return [*others, JSON_REFUSED]
    joined = attrs.evolve(
        own,
        codes=(*own.codes, *JSON_REFUSALS),
        description=f"{own.description}; {JSON_REFUSED.description}",
    )
    return [*others, joined]


def _parameter(param: Param) -> dict[str, Any]:
    return {
        "name": param.name,
        "in": param.where,
        "required": param.required or param.where == "path",
        "description": param.description,
        "schema": param.schema,
    }


def _form(fields: tuple[FormField, ...]) -> dict[str, Any]:
    schema: Schema = {
        "type": "object",
        "properties": {
            field.name: {**field.schema, "description": field.description} for field in fields
        },
    }
    required = [field.name for field in fields if field.required]
    if required:
        schema["required"] = required
    eithers = [(field.name, field.either) for field in fields if field.either]
    if eithers:
        schema["oneOf"] = [{"required": [name]} for pair in eithers for name in pair]
    media: dict[str, Any] = {"schema": schema}
    encoding = {f.name: {"contentType": f.content_type} for f in fields if f.content_type}
    if encoding:
        media["encoding"] = encoding
    return {"required": True, "content": {"multipart/form-data": media}}


def _answer(answer: Answer, schemas: Schemas) -> dict[str, Any]:
    described: dict[str, Any] = {"description": answer.description}
    if answer.headers:
        described["headers"] = {
            name: {"description": text, "schema": {"type": "string"}}
            for name, text in answer.headers.items()
        }
    content: dict[str, Any] = {}
    for media_type, body in answer.content.items():
        if body is None:
            schema: Schema = {"type": "string"}
        elif isinstance(body, dict):
            schema = body
        elif isinstance(body, tuple):
            schema = {"anyOf": [schemas.ref(one) for one in body]}
        else:
            schema = schemas.ref(body)
        if answer.codes:
            schema = {"allOf": [schema, {"properties": {"error": {"enum": list(answer.codes)}}}]}
        content[media_type] = {"schema": schema}
    if content:
        described["content"] = content
    if answer.links:
        described["links"] = {
            name: {"operationId": link.operation_id, "parameters": dict(link.parameters)}
            for name, link in answer.links.items()
        }
    return described
