"""The OpenAPI document is written from the routes the app mounts, and is valid OpenAPI 3.1.

Also the derivation under it: attrs answer classes to JSON (cattrs) and to
JSON Schema (``web/schemas.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

import attrs
import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.routing import BaseRoute, Mount, Route

from tests.support.openapi import Conformance
from transcriber_app.bootstrap import Runtime
from transcriber_app.web import create_app
from transcriber_app.web.api import api_document
from transcriber_app.web.schemas import Schemas, doc, from_json, to_json


def mounted(routes: list[BaseRoute], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(METHOD, path)`` of every route, through mounts; HEAD (Starlette's, with GET) left out."""
    for route in routes:
        if isinstance(route, Mount):
            yield from mounted(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            for method in sorted(route.methods or {"GET"}):
                if method != "HEAD":
                    yield method, prefix + route.path


def documented(document: dict[str, Any]) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of every operation in ``document``."""
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item}


def test_every_api_route_the_app_mounts_is_documented(runtime: Runtime) -> None:
    """A route under /api that the document lacks (or a documented one not mounted) fails here."""
    app = create_app(runtime)
    api_routes = {(m, p) for m, p in mounted(app.routes) if p.startswith("/api")}
    assert ("POST", "/api/audio") in api_routes
    document = api_document(tokens=False)
    assert api_routes == {(m, p) for m, p in documented(document) if p.startswith("/api")}
    assert documented(document) <= set(mounted(app.routes))


@pytest.mark.parametrize("tokens", [False, True], ids=["open", "tokens"])
def test_document_is_valid_openapi_31(tokens: bool) -> None:
    """With or without api_tokens the document validates as OpenAPI 3.1."""
    document = api_document(tokens=tokens)
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_tokens_add_the_bearer_scheme_and_401_to_secured_routes_only() -> None:
    """api_tokens set: upload and status need the bearer scheme and may answer 401; health not."""
    document = api_document(tokens=True)
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    upload = document["paths"]["/api/audio"]["post"]
    assert upload["security"] == [{"bearer": []}]
    assert "401" in upload["responses"]
    assert "security" not in document["paths"]["/health"]["get"]
    open_upload = api_document(tokens=False)["paths"]["/api/audio"]["post"]
    assert "401" not in open_upload["responses"]
    assert "security" not in open_upload


def test_error_answers_list_their_stable_codes() -> None:
    """An error answer's schema allows exactly the codes its route declares."""
    answer = api_document(tokens=False)["paths"]["/api/audio"]["post"]["responses"]["413"]
    schema = answer["content"]["application/json"]["schema"]
    assert schema["allOf"][0] == {"$ref": "#/components/schemas/Error"}
    assert schema["allOf"][1]["properties"]["error"]["enum"] == ["too_large", "form_too_large"]


def test_upload_form_and_link_to_status() -> None:
    """The upload's body is a multipart form with a file or a url; its 202 links to status."""
    upload = api_document(tokens=False)["paths"]["/api/audio"]["post"]
    form = upload["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["oneOf"] == [{"required": ["file"]}, {"required": ["url"]}]
    assert form["properties"]["url"]["format"] == "uri"
    assert form["properties"]["file"]["format"] == "binary"
    link = upload["responses"]["202"]["links"]["status"]
    assert link == {"operationId": "status", "parameters": {"job_id": "$response.body#/job_id"}}
    operation_ids = {
        operation["operationId"]
        for item in api_document(tokens=False)["paths"].values()
        for operation in item.values()
    }
    assert "status" in operation_ids


class Colour(enum.StrEnum):
    """A closed set."""

    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Inner:
    """A nested body."""

    at: datetime


@attrs.frozen(kw_only=True)
class Outer:
    """A body with every kind of field the API uses."""

    name: str = attrs.field(metadata=doc("a name"))
    colour: Colour
    kind: Literal["a", "b"]
    inners: tuple[Inner, ...]
    counts: dict[str, int]
    size: int | None = None
    ratio: float | None = None
    flag: bool = False


def test_schema_of_an_attrs_class() -> None:
    """Fields without a default are required; ``X | None = None`` is an optional X, never null."""
    schemas = Schemas()
    assert schemas.ref(Outer) == {"$ref": "#/components/schemas/Outer"}
    outer = schemas.components["Outer"]
    assert outer["required"] == ["name", "colour", "kind", "inners", "counts"]
    assert outer["additionalProperties"] is False
    assert outer["description"] == "A body with every kind of field the API uses."
    properties = outer["properties"]
    assert properties["name"] == {"type": "string", "description": "a name"}
    assert properties["colour"] == {"type": "string", "enum": ["red", "blue"]}
    assert properties["kind"] == {"enum": ["a", "b"]}
    assert properties["inners"] == {
        "type": "array",
        "items": {"$ref": "#/components/schemas/Inner"},
    }
    assert properties["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert properties["size"] == {"type": "integer"}
    assert properties["ratio"] == {"type": "number"}
    assert properties["flag"] == {"type": "boolean"}
    assert schemas.components["Inner"]["properties"]["at"] == {
        "type": "string",
        "format": "date-time",
    }


def test_a_field_type_without_a_schema_is_refused() -> None:
    """A field type the derivation does not know fails loudly instead of documenting nothing."""

    @attrs.frozen
    class Odd:
        """A body with a set."""

        values: set[int]

    with pytest.raises(TypeError, match="no JSON Schema"):
        Schemas().ref(Odd)


def test_two_answer_classes_with_one_name_are_refused() -> None:
    """Two classes named alike would share one component; the document refuses to guess."""

    @attrs.frozen
    class Inner:
        """Not the module's Inner."""

        other: str

    schemas = Schemas()
    schemas.ref(Outer)
    with pytest.raises(TypeError, match="two answer classes are named Inner"):
        schemas.ref(Inner)


def test_to_json_leaves_defaults_out_and_matches_the_schema() -> None:
    """Unset optional fields are absent, datetimes ISO 8601, enums their values; it validates."""
    at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    body = Outer(name="n", colour=Colour.RED, kind="a", inners=(Inner(at=at),), counts={"x": 1})
    data = to_json(body)
    assert data == {
        "name": "n",
        "colour": "red",
        "kind": "a",
        "inners": [{"at": "2026-12-01T12:00:00+00:00"}],
        "counts": {"x": 1},
    }
    schemas = Schemas()
    root = {"allOf": [schemas.ref(Outer)], "components": {"schemas": schemas.components}}
    Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(data)
    assert from_json(data, Outer) == body
    assert to_json(attrs.evolve(body, size=0))["size"] == 0


async def test_status_with_the_database_gone_is_the_documented_503(runtime: Runtime) -> None:
    """A status the database cannot answer is JSON 503 unavailable, as documented, not a 500."""
    conformance = Conformance(api_document(tokens=False))
    transport = httpx.ASGITransport(app=create_app(runtime), raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://127.0.0.1",
        event_hooks={"response": [_sync_hook(conformance)]},
    ) as client:
        await runtime.services.repo.close()
        response = await client.get("/api/status/some-job")
    assert response.status_code == 503, response.text
    assert response.json()["error"] == "unavailable"
    assert conformance.checked == {"GET /api/status/{job_id} 503": 1}


def _sync_hook(conformance: Conformance) -> Any:
    async def hook(response: httpx.Response) -> None:
        await response.aread()
        conformance(response)

    return hook
