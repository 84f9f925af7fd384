"""Holding the service's answers to its own OpenAPI document, inside ordinary service tests.

``Conformance(document)`` is an httpx response hook: an answer to a
documented operation must have a documented status and content type, and
a JSON body must validate (jsonschema, Draft 2020-12, formats checked)
against that answer's schema. Requests the document does not describe (the
admin panel, an unknown path, a wrong method) pass unchecked: that every
``/api`` route is documented is a test of its own. ``Service.check_answers``
installs it on every client of a service.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import httpx
from jsonschema import Draft202012Validator


def _pattern(path: str) -> re.Pattern[str]:
    """A regex of a templated path: each ``{name}`` is one non-empty segment."""
    parts = re.split(r"(\{[^}]+\})", path)
    return re.compile(
        "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in parts) + "$"
    )


class Conformance:
    """Checks each answer to a documented operation against the document; counts what it checked."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.operations = [
            (method.upper(), _pattern(path), path, operation)
            for path, item in document["paths"].items()
            for method, operation in item.items()
        ]
        #: ``"<METHOD> <path template> <status>"`` → answers checked.
        self.checked: Counter[str] = Counter()

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        """The path template and operation a request goes to; None when undocumented."""
        for documented, pattern, template, operation in self.operations:
            if documented == method and pattern.match(path):
                return template, operation
        return None

    def schema_of(self, template: str, method: str, status: int, media_type: str) -> Any:
        """The documented schema of an answer (None: no body); AssertionError if undocumented."""
        found = self.operation(method, template)
        assert found is not None, f"{method} {template} is not documented"
        answers = found[1]["responses"]
        where = f"{method} {template} {status}"
        assert str(status) in answers, f"{where}: status not in the document"
        content = answers[str(status)].get("content", {})
        if not content and not media_type:
            return None
        by_type = {key.split(";")[0].strip(): value for key, value in content.items()}
        assert media_type in by_type, f"{where}: {media_type!r} is not one of {sorted(by_type)}"
        return by_type[media_type]["schema"]

    def validate(self, schema: Any, body: Any) -> None:
        """``body`` validates against ``schema``; its ``$ref``s point into the document."""
        # A $ref "#/components/..." resolves against the root of the schema validated.
        root = {"allOf": [schema], "components": self.document["components"]}
        Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER).validate(
            body
        )

    def __call__(self, response: httpx.Response) -> None:
        """The response hook: check ``response`` when its request is a documented operation."""
        request = response.request
        found = self.operation(request.method, request.url.path)
        if found is None:
            return
        template = found[0]
        response.read()
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        schema = self.schema_of(template, request.method, response.status_code, media_type)
        if schema is None:
            assert not response.content, f"{request.method} {template}: an undocumented body"
        elif media_type == "application/json":
            self.validate(schema, response.json())
        self.checked[f"{request.method} {template} {response.status_code}"] += 1
