"""A person's job on an open API is refused by the lookup itself (SPEC §29, ADR 68).

On an open API the job id is the capability, except for a person's job
(ADR 55): its 404 must cost what an unknown id's does, so the API asks the
store for "this id, not a person's" and never gets the row to judge it.
"""

from __future__ import annotations

from typing import Any

import attrs
import httpx
import pytest

from tests.app.test_bad_input import done_job
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace import person
from tests.support.admin import in_process_client
from tests.support.delegate import Delegate
from transcriber_app.bootstrap import Runtime
from transcriber_core.entities import Job
from transcriber_core.errors import JobNotFound


class RecordedReads(Delegate):
    """The real job store; each ``get`` is recorded with what it asked and what it found."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.reads: list[tuple[dict[str, Any], str]] = []

    async def get(self, job_id: str, **filters: Any) -> Job:
        """Forward the read; record its filters and outcome, never the id."""
        try:
            job: Job = await self.inner.get(job_id, **filters)
        except JobNotFound:
            self.reads.append((filters, "not found"))
            raise
        self.reads.append((filters, "found"))
        return job


@pytest.mark.parametrize("path", ["/api/status/{id}", "/api/jobs/{id}/transcript?format=txt"])
async def test_a_persons_job_on_an_open_api_is_refused_by_the_lookup_itself(
    runtime: Runtime, owner: httpx.AsyncClient, path: str
) -> None:
    """Someone else's id and an unknown one cost one identical store read, which finds nothing."""
    await (await person(runtime, owner, "alice")).aclose()
    alice = await runtime.people.find_person("alice")
    assert alice is not None
    persons, nobodys = await done_job(runtime, alice.owner_key), await done_job(runtime)
    spy = RecordedReads(runtime.services.repo)
    spied = attrs.evolve(runtime, services=attrs.evolve(runtime.services, repo=spy))
    async with in_process_client(spied) as client:
        for job_id in (persons.id, "no-such-job"):
            answer = await client.get(path.format(id=job_id))
            assert (answer.status_code, answer.json()["error"]) == (404, "job_not_found")
        assert (await client.get(path.format(id=nobodys.id))).status_code == 200
    asked = {"owned_by": None, "anonymous": True}
    assert spy.reads == [(asked, "not found"), (asked, "not found"), (asked, "found")]
