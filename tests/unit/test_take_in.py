"""The one way in (SPEC §28, ADR 74): each rule of ``take_in``, once, for every door."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.world import World, make_world
from transcriber_adapters.memory import MemoryUsageStore
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_adapters.webhooks import AiohttpWebhookSender
from transcriber_core.entities import AUTO_SPEAKERS, Job, Origin, State, Turn
from transcriber_core.errors import CallbackRefused, DedupKeyReused, OptionRefused, QuotaExceeded
from transcriber_core.intake import take_in
from transcriber_core.ports import Proof, Sender, Staged, Wishes
from transcriber_core.speakers import BadSpeakers

DIGEST_A = "a" * 64
DIGEST_B = "b" * 64
OWNER = "person:" + "a" * 57
_names = itertools.count()


class _Door:
    """A door that stages ``data`` with ``wishes`` and notes what ``take_in`` asked of it."""

    def __init__(
        self,
        world: World,
        *,
        wishes: Wishes | None = None,
        digest: str | None = None,
        sender: Sender | None = None,
        proof: Proof | None = None,
        again: Sender | Exception | None = None,
    ) -> None:
        self.world = world
        self.wishes = wishes or Wishes()
        self.digest = digest
        self._sender = sender or Sender()
        #: What ``sender_again`` answers (an exception: raised); None: the first sender.
        self._again = again
        self._proof = proof or Proof()
        self.asked: list[str] = []
        self.staging: Path | None = None

    async def sender(self) -> Sender:
        self.asked.append("sender")
        return self._sender

    async def sender_again(self) -> Sender:
        self.asked.append("sender_again")
        if isinstance(self._again, Exception):
            raise self._again
        return self._again or self._sender

    async def proof(self, first: Job) -> Proof:
        self.asked.append("proof")
        return self._proof

    @contextlib.asynccontextmanager
    async def staged(self) -> AsyncIterator[Staged]:
        self.asked.append("staged")
        self.staging = self.world.tmp / f"staged-{next(_names)}"
        self.staging.write_bytes(b"a recording")
        try:
            yield Staged(
                path=self.staging, extension=".ogg", digest=self.digest, wishes=self.wishes
            )
        finally:
            self.staging.unlink(missing_ok=True)


class _Probe:
    """A header that declares ``seconds`` for every recording."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def declared_duration(self, path: Path) -> float | None:
        return self.seconds


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def _with(world: World, **changes: object) -> World:
    """``world`` whose services have ``changes``."""
    return attrs.evolve(world, services=attrs.evolve(world.services, **changes))


async def _stored(world: World) -> tuple[int, int]:
    """How many jobs and files the world holds."""
    return sum((await world.repo.count_by_state()).values()), len(world.files.names())


async def test_a_new_recording_becomes_a_job_with_what_was_asked(world: World) -> None:
    """The sender, the origin, the digest and the judged wishes are the job's; it is queued."""
    wishes = Wishes(language="ru", prompt="Anna, Boris", task="transcribe")
    door = _Door(world, wishes=wishes, digest=DIGEST_A, sender=Sender(owner=OWNER))
    taken = await take_in(
        world.services, door, origin=Origin.telegram(5, 7), dedup_key="telegram:5:f"
    )
    job = await world.repo.get(taken.job.id)
    assert taken.is_new
    assert door.asked == ["sender", "staged", "sender_again"]
    assert (job.state, job.origin, job.owner, job.upload_digest, job.dedup_key) == (
        State.CONVERT,
        Origin.telegram(5, 7),
        OWNER,
        DIGEST_A,
        "telegram:5:f",
    )
    assert (job.language_requested, job.prompt, job.speakers_wanted) == ("ru", "Anna, Boris", None)
    assert await _stored(world) == (1, 1)


async def test_a_known_key_answers_with_its_first_job_and_takes_nothing(world: World) -> None:
    """A retry whose proof matches gets the first job: no sender asked, nothing staged or stored."""
    first = await take_in(
        world.services, _Door(world, digest=DIGEST_A), origin=Origin.http(), dedup_key="k"
    )
    again = _Door(world, proof=Proof(digest=DIGEST_A))
    taken = await take_in(world.services, again, origin=Origin.http(), dedup_key="k")
    assert (taken.job.id, taken.is_new) == (first.job.id, False)
    assert again.asked == ["proof", "sender_again"]
    assert await _stored(world) == (1, 1)


async def test_a_proof_that_read_nothing_stands(world: World) -> None:
    """A door that reads nothing (Telegram's key names the file) gets the first job, unasked."""
    first = await take_in(
        world.services, _Door(world, digest=DIGEST_A), origin=Origin.http(), dedup_key="k"
    )
    again = _Door(world)
    taken = await take_in(world.services, again, origin=Origin.http(), dedup_key="k")
    assert (taken.job.id, taken.is_new) == (first.job.id, False)
    assert again.asked == ["proof"]


async def test_a_known_key_with_other_bytes_is_refused(world: World) -> None:
    """The key's first job came with other bytes: ``DedupKeyReused``, nothing stored."""
    await take_in(
        world.services, _Door(world, digest=DIGEST_A), origin=Origin.http(), dedup_key="k"
    )
    again = _Door(world, proof=Proof(digest=DIGEST_B))
    with pytest.raises(DedupKeyReused):
        await take_in(world.services, again, origin=Origin.http(), dedup_key="k")
    assert await _stored(world) == (1, 1)


async def test_what_a_replay_asks_is_judged_too(world: World) -> None:
    """A door that read a replay's fields (``/v1``) has them judged: a bad language is refused."""
    await take_in(
        world.services, _Door(world, digest=DIGEST_A), origin=Origin.http(), dedup_key="k"
    )
    again = _Door(world, proof=Proof(digest=DIGEST_A, wishes=Wishes(language="xx")))
    with pytest.raises(OptionRefused) as refused:
        await take_in(world.services, again, origin=Origin.http(), dedup_key="k")
    assert (refused.value.code, refused.value.field) == ("bad_language", "language")


async def test_a_spent_day_refuses_before_any_byte(world: World) -> None:
    """Over today's quota the door is never asked for the bytes; the payer is the owner."""
    usage = MemoryUsageStore(world.clock)
    paid = _with(
        world,
        usage=usage,
        probe=_Probe(60.0),
        settings=attrs.evolve(world.services.settings, seconds_per_day=60),
    )
    await take_in(paid.services, _Door(paid, sender=Sender(owner=OWNER)), origin=Origin.http())
    door = _Door(paid, sender=Sender(owner=OWNER))
    with pytest.raises(QuotaExceeded):
        await take_in(paid.services, door, origin=Origin.http())
    assert door.asked == ["sender"]
    assert (await usage.usage([OWNER]))[OWNER].today == 60.0


async def test_the_payer_pays_for_the_owners_job(world: World) -> None:
    """A payer other than the owner (a chat's sender) is charged; the job is the owner's."""
    usage = MemoryUsageStore(world.clock)
    paid = _with(world, usage=usage, probe=_Probe(30.0))
    sender = Sender(owner=None, payer="telegram:42")
    taken = await take_in(paid.services, _Door(paid, sender=sender), origin=Origin.http())
    assert taken.job.owner is None
    assert (await usage.usage(["telegram:42"]))["telegram:42"].today == 30.0


async def test_a_refused_option_stores_and_charges_nothing(world: World) -> None:
    """A language the recognizer lacks: ``OptionRefused``; no job, file, charge or staging left."""
    usage = MemoryUsageStore(world.clock)
    paid = _with(world, usage=usage, probe=_Probe(30.0))
    door = _Door(paid, wishes=Wishes(language="xx"), sender=Sender(owner=OWNER))
    with pytest.raises(OptionRefused):
        await take_in(paid.services, door, origin=Origin.http())
    assert await _stored(paid) == (0, 0)
    assert usage.charges == []
    assert door.staging is not None
    assert not door.staging.exists()


async def test_a_standing_language_the_recognizer_lost_falls_back_to_auto(world: World) -> None:
    """A chat's stored language that is no longer known is auto, not a refusal."""
    door = _Door(world, wishes=Wishes(language="xx", standing_language=True))
    taken = await take_in(world.services, door, origin=Origin.telegram(1, 2))
    assert taken.job.language_requested is None


async def _asking(world: World, **wishes: Any) -> Job:
    """The job ``take_in`` makes of an HTTP upload asking ``wishes``."""
    door = _Door(world, wishes=Wishes(**wishes))
    return (await take_in(world.services, door, origin=Origin.http())).job


async def test_speakers_are_asked_only_of_a_service_that_labels_them(world: World) -> None:
    """Speakers wanted without a diarizer, or spelt wrong: ``BadSpeakers``; with one, kept."""
    for speakers in ("auto", "eleven"):
        with pytest.raises(BadSpeakers):
            await _asking(world, speakers=speakers)
    labelled = _with(world, diarizer=MemoryDiarizer([Turn(speaker="a", start=0, end=9)]))
    auto = await _asking(labelled, speakers="auto")
    off = await _asking(labelled, speakers="off")
    assert (auto.speakers_wanted, off.speakers_wanted) == (AUTO_SPEAKERS, None)
    assert await _stored(world) == (2, 2)


async def test_a_callback_needs_webhooks_and_a_public_address(world: World) -> None:
    """No webhook sender: ``webhooks_disabled``; a loopback address refused; a public one kept."""
    public = "http://93.184.216.34/done"
    with pytest.raises(CallbackRefused) as disabled:
        await _asking(world, callback_url=public)
    assert disabled.value.code == "webhooks_disabled"
    sending = _with(world, webhooks=AiohttpWebhookSender(secret="s", clock=world.clock))
    with pytest.raises(CallbackRefused) as refused:
        await _asking(sending, callback_url="http://127.0.0.1/done")
    assert refused.value.code == "callback_address_refused"
    assert (await _asking(sending, callback_url=public)).callback_url == public
    assert await _stored(world) == (1, 1)


class _RevokedError(Exception):
    """A door's own refusal: its gate no longer admits the sender."""


async def test_the_sender_is_asked_again_once_the_bytes_are_in(world: World) -> None:
    """A sender refused after the body stores and charges nothing; one that changed pays (§29)."""
    usage = MemoryUsageStore(world.clock)
    paid = _with(world, usage=usage, probe=_Probe(30.0))
    refused = _Door(paid, sender=Sender(owner=OWNER), again=_RevokedError())
    with pytest.raises(_RevokedError):
        await take_in(paid.services, refused, origin=Origin.http())
    assert await _stored(paid) == (0, 0)
    assert usage.charges == []
    unlinked = _Door(paid, sender=Sender(owner=OWNER), again=Sender(payer="telegram:42"))
    taken = await take_in(paid.services, unlinked, origin=Origin.telegram(42, 1))
    assert taken.job.owner is None
    assert (await usage.usage(["telegram:42", OWNER]))["telegram:42"].today == 30.0
    assert (await usage.usage([OWNER]))[OWNER].today == 0.0


async def test_a_retry_whose_body_was_read_asks_its_sender_again(world: World) -> None:
    """A retry's body can take hours too: a sender refused meanwhile gets the refusal."""
    await take_in(
        world.services, _Door(world, digest=DIGEST_A), origin=Origin.http(), dedup_key="k"
    )
    again = _Door(world, proof=Proof(digest=DIGEST_A), again=_RevokedError())
    with pytest.raises(_RevokedError):
        await take_in(world.services, again, origin=Origin.http(), dedup_key="k")
