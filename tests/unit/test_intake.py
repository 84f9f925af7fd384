"""Intake's dedup with digests: a key names one file (reference: Limits, ADR 21)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import attrs
import pytest

from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryUsageStore
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import DedupKeyReused, QuotaExceeded
from transcriber_core.intake import check_replay, submit

#: Two SHA-256 digests, as the HTTP intake computes them.
DIGEST_A = "a" * 64
DIGEST_B = "b" * 64
T0 = datetime(2026, 1, 2, tzinfo=UTC)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


async def _submit(world: World, data: bytes, digest: str | None) -> tuple[Job, bool]:
    """An HTTP upload of ``data`` under the key "k", as if its lookup had found nothing."""
    source = world.tmp / f"upload-{len(world.files.names())}-{digest}"
    source.write_bytes(data)
    return await submit(
        world.services,
        source,
        extension=".mp3",
        origin=Origin.http(),
        dedup_key="http::k",
        digest=digest,
    )


async def test_digest_is_kept_with_the_job(world: World) -> None:
    """The digest an upload came with is stored on its job."""
    job, is_new = await _submit(world, b"first", DIGEST_A)
    assert is_new
    assert (await world.repo.get(job.id)).upload_digest == DIGEST_A


async def test_racing_upload_with_another_file_is_refused(world: World) -> None:
    """Two uploads with one key racing past the lookup: the loser with other bytes is refused."""
    first, _ = await _submit(world, b"first", DIGEST_A)
    with pytest.raises(DedupKeyReused):
        await _submit(world, b"second", DIGEST_B)
    assert world.files.names() == [first.source_file_id + ".mp3"]
    assert await world.repo.count_by_state() == {State.CONVERT: 1}


async def test_racing_upload_with_the_same_file_gets_the_first_job(world: World) -> None:
    """The loser of the race with the same bytes gets the first job and stores nothing."""
    first, _ = await _submit(world, b"same", DIGEST_A)
    again, is_new = await _submit(world, b"same", DIGEST_A)
    assert (again.id, is_new) == (first.id, False)
    assert len(world.files.names()) == 1


def test_unknown_digest_is_no_evidence() -> None:
    """A job from before digests, or a replay without one, stands; only two digests can differ."""
    job = Job(id="j", state=State.CONVERT, origin=Origin.http(), created=T0, updated=T0)
    check_replay(job, DIGEST_A)
    with_digest = Job(
        id="j",
        state=State.CONVERT,
        origin=Origin.http(),
        upload_digest=DIGEST_A,
        created=T0,
        updated=T0,
    )
    check_replay(with_digest, None)
    check_replay(with_digest, DIGEST_A)
    with pytest.raises(DedupKeyReused):
        check_replay(with_digest, DIGEST_B)


class _Probe:
    """A header that declares ``seconds`` for every recording."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds

    async def declared_duration(self, path: Path) -> float | None:
        return self.seconds


def _quota_world(
    world: World, declared: float | None, quota: int
) -> tuple[World, MemoryUsageStore]:
    """``world`` with a usage store, a probe declaring ``declared`` and a daily ``quota``."""
    usage = MemoryUsageStore(world.clock)
    services = attrs.evolve(
        world.services,
        usage=usage,
        probe=_Probe(declared),
        settings=attrs.evolve(world.services.settings, seconds_per_day=quota),
    )
    return attrs.evolve(world, services=services), usage


async def _paid(world: World, data: bytes, *, key: str | None = None) -> tuple[Job, bool]:
    source = world.tmp / f"paid-{len(world.files.names())}-{data.hex()}"
    source.write_bytes(data)
    return await submit(
        world.services,
        source,
        extension=".wav",
        origin=Origin.http(),
        dedup_key=key,
        owner="person:" + "a" * 57,
    )


async def test_the_race_loser_of_one_key_is_not_counted_again(world: World) -> None:
    """Two uploads of one key past the lookup count once: the loser's charge is taken back."""
    paid, usage = _quota_world(world, 30.0, 0)
    first, _ = await _paid(paid, b"same", key="http::k")
    again, is_new = await _paid(paid, b"same", key="http::k")
    assert (again.id, is_new) == (first.id, False)
    payer = "person:" + "a" * 57
    assert (await usage.usage([payer]))[payer].today == 30.0


async def test_a_refused_recording_stores_nothing(world: World) -> None:
    """Past the quota ``submit`` raises with no job and no file; the declared seconds decide."""
    paid, usage = _quota_world(world, 40.0, 60)
    await _paid(paid, b"first")
    with pytest.raises(QuotaExceeded) as refused:
        await _paid(paid, b"second")
    assert (refused.value.left, refused.value.incoming) == (20.0, 40.0)
    assert await paid.repo.count_by_state() == {State.CONVERT: 1}
    assert len(paid.files.names()) == 1
    assert usage.charges[-1][1] is False
