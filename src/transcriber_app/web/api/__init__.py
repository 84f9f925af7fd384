"""The HTTP API (reference: HTTP API): upload, status, transcripts, delete, OpenAPI, the probes.

Three parts: ``auth`` (bearer tokens, the dedup key of an ``Idempotency-Key``),
``handlers`` (what each route does) and ``declarations`` (each route declared
once, ADR 37: the app mounts them and the OpenAPI document is written from them).
"""

from transcriber_app.web.api.declarations import ENDPOINTS, api_document, routes
from transcriber_app.web.api.handlers import exception_handlers

__all__ = ["ENDPOINTS", "api_document", "exception_handlers", "routes"]
