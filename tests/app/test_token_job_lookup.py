"""Another token's job is refused by the lookup itself (ADR 36; red team 3, 6).

With ``api_tokens`` the API asks the store for "this id, of this caller's
token": another token's job is never read, so its 404 costs what an unknown
id's does. The work is checked, never a time (a loaded box makes times
say nothing): the store reads recorded here, and per database in
tests/unit/test_job_lookup.py that the owner is judged before the row is read.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from tests.app.test_bad_input import done_job
from tests.app.test_open_api_person_jobs import RecordedReads
from tests.support.admin import in_process_client
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, StorageConfig

TOKENS = ("owner-token-Zm9vYmFy", "other-token-YmF6cXV4")


def digest(token: str) -> str:
    """The owner key a static token's jobs are stored with."""
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime with two static API tokens; no workers run."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123, api_tokens=TOKENS),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/status/{id}"),
        ("GET", "/api/jobs/{id}/transcript?format=txt"),
        ("DELETE", "/api/jobs/{id}"),
    ],
)
async def test_another_tokens_job_is_refused_by_the_lookup_itself(
    runtime: Runtime, method: str, path: str
) -> None:
    """Another token's id and an unknown one cost one identical store read, which finds nothing."""
    owners = await done_job(runtime, digest(TOKENS[0]))
    spy = RecordedReads(runtime.services.repo)
    spied = attrs.evolve(runtime, services=attrs.evolve(runtime.services, repo=spy))
    other = {"Authorization": f"Bearer {TOKENS[1]}"}
    async with in_process_client(spied) as client:
        for job_id in (owners.id, "no-such-job"):
            answer = await client.request(method, path.format(id=job_id), headers=other)
            assert (answer.status_code, answer.json()["error"]) == (404, "job_not_found")
    asked = {"owned_by": digest(TOKENS[1]), "anonymous": False}
    assert spy.reads == [(asked, "not found"), (asked, "not found")]
    assert await runtime.services.repo.get(owners.id) == owners
