"""schemathesis against the real server: every documented route answers as the document says.

The document is the one the service serves with ``[http] api_tokens`` set
(the first test checks the served one is this one), so the bearer scheme
and its 401s are checked too. Examples are bounded and derandomized
(the same cases every run, well under a minute on the project's 2-vCPU box); no
worker loops run, so the jobs the fuzzer makes cost no CPU.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import negative_data_rejection

from tests.support.service import Service, running_service
from transcriber_app.web.api import api_document

TOKEN = "fuzz-token-c2NoZW1h"
#: Statuses a schema-valid request may get: schemathesis's defaults, and 422 for an
#: Idempotency-Key the fuzzer happens to send again with another file (reference: HTTP API).
ACCEPTABLE = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
#: The upload may also refuse a schema-valid callback_url with 400: whether a URL may be
#: called depends on what its host resolves to and on [webhooks], which no schema can say
#: (ADR 35). Its refusals and their codes are checked in test_outbox_e2e.py.
#: The /v1 audio routes wait for their job, which no worker runs here: each answers the
#: documented 500 ``job_not_done`` after [openai] wait_seconds (or a 400 it documents for
#: a field no schema can judge, as the upload's callback_url), so a 5xx is no server fault.
V1_AUDIO = {
    "include-method": "POST",
    "include-path-regex": "^/v1/audio/",
    "checks": {
        "positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]},
        "not_a_server_error": {"enabled": False},
    },
}
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {"positive_data_acceptance": {"expected-statuses": ACCEPTABLE}},
        "operations": [
            {
                "include-method": "POST",
                "include-path": "/api/audio",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]}},
            },
            # A rename names speakers the job has, with names free of control and format
            # characters (Unicode categories, which a schema pattern cannot say): 400
            # bad_speakers for others. Its refusals are checked in test_speakers.py.
            {
                "include-method": "PATCH",
                "include-path": "/api/jobs/{job_id}/speakers",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]}},
            },
            # A title is refused with control or format characters as a name is (400
            # bad_title). Its refusals are checked in tests/app/test_workspace_titles.py.
            {
                "include-method": "PATCH",
                "include-path": "/api/jobs/{job_id}",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]}},
            },
            # A voice's name is refused as a speaker's is (400 bad_name), for the same reason.
            # Its refusals are checked in test_voices_api.py.
            {
                "include-method": "POST",
                "include-path": "/api/voices",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]}},
            },
            {
                "include-method": "PATCH",
                "include-path": "/api/voices/{voice_id}",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTABLE, "400"]}},
            },
            V1_AUDIO,
        ],
    }
)

# schemathesis's fixture-loaded schemas do not run on pytest 9; the document is the
# service's own, built by the same function the route answers with.
schema = schemathesis.openapi.from_dict(api_document(tokens=True), config=CONFIG)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with one API token, a 1 MiB cap and no worker loops."""
    config: dict[str, dict[str, object]] = {
        "storage": {"max_record_bytes": 1024 * 1024},
        "http": {"api_tokens": [TOKEN]},
        "workers": {"convert": 0, "recognize": 0, "check": 0},
        # Callbacks to addresses written in the URL can pass, so a fuzzed one may be taken.
        "webhooks": {"secret": "fuzz-webhook-secret", "allow_private": True},
        # No worker ends a /v1 request's job: each answers at once that it still runs.
        "openai": {"wait_seconds": 0.01},
    }
    with running_service(tmp_path_factory.mktemp("fuzz"), config=config) as started:
        yield started


def test_the_fuzzed_document_is_the_served_one(service: Service) -> None:
    """What the fuzzer reads is what the service answers at /api/openapi.json with tokens set."""
    with service.client() as client:
        served = client.get("/api/openapi.json").json()
    assert served == api_document(tokens=True)
    assert "securitySchemes" in served["components"]


@schema.parametrize()
@pytest.mark.timeout(180)  # bounded by examples, not time; a loaded CI box is slower
@settings(
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_every_route_answers_as_documented(case: schemathesis.Case, service: Service) -> None:
    """No 5xx, and each answer's status, content type, headers and body match the document."""
    _fresh_idempotency_key(case)
    excluded = [negative_data_rejection] if _valid_once_sent(case) else []
    case.call_and_validate(
        base_url=service.base_url,
        headers={"Authorization": f"Bearer {TOKEN}"},
        excluded_checks=excluded,
    )


def _valid_once_sent(case: schemathesis.Case) -> bool:
    """Whether a "schema-violating" form is valid once sent as the parts a server reads.

    A multipart form sends an array as one part per item, so an empty array is
    no part at all: the optional field is absent, which the schema allows. And
    every part is text: a number where a string is wanted (``prompt`` = 0.0)
    arrives as the string "0.0". The negative-data check would read either
    accepted upload as a bad body taken. Print the case to see its body:
    ``print(case.body)``.
    """
    body = case.body
    if case.media_type != "multipart/form-data" or not isinstance(body, dict):
        return False
    # Files are bytes (or schemathesis's Binary around them), which the validator cannot
    # read: a string of their length stands in.
    sent = {name: _readable(value) for name, value in body.items() if value != []}
    [form] = [each for each in case.operation.body if each.media_type == case.media_type]
    return form.is_valid(sent)


#: A well-formed Idempotency-Key (auth.py's rule): visible ASCII, 1 to 255 characters.
_WELL_FORMED_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def _fresh_idempotency_key(case: schemathesis.Case) -> None:
    """Make a well-formed fuzzed Idempotency-Key unique to its case.

    A key the fuzzer happens to send twice is answered from its first job before
    the body is read (the documented replay, tested in test_api.py and
    test_openai.py), which the negative-data check would misread as a bad body
    accepted. A malformed key is left as it is, so its 400 is still checked.
    """
    headers = case.headers or {}
    for name, value in list(headers.items()):
        well_formed = isinstance(value, str) and _WELL_FORMED_KEY.fullmatch(value)
        if name.lower() == "idempotency-key" and well_formed:
            headers[name] = f"{value[:200]}-{uuid.uuid4().hex}"


@pytest.mark.timeout(180)
def test_linked_calls_answer_as_documented(service: Service) -> None:
    """Sequences that follow the document's links (an upload, then its job's status) conform."""

    class Calls(schema.as_state_machine()):
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
            return {"base_url": service.base_url, "headers": {"Authorization": f"Bearer {TOKEN}"}}

    Calls.run(
        settings=settings(
            max_examples=15, stateful_step_count=4, derandomize=True, database=None, deadline=None
        )
    )


def _readable(value: object) -> object:
    """A form value as the server reads its part: text (bytes as latin-1, numbers written out)."""
    data = getattr(value, "data", value)
    if isinstance(data, bytes):
        return data.decode("latin-1")
    if isinstance(data, int | float) and not isinstance(data, bool):
        return str(data)
    return data
