"""Webhooks: the callback URL and address rules, the signature, and the aiohttp sender (ADR 35)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from aiohttp import web

from tests.support.world import make_world
from transcriber_adapters.memory import ManualClock
from transcriber_adapters.webhooks import AiohttpWebhookSender
from transcriber_core import addresses, webhooks
from transcriber_core.entities import DeliveryKind, Event, Job, Origin, State
from transcriber_core.errors import CallbackRefused, ReceiverUnavailable, TransientError
from transcriber_core.intake import submit

SECRET = "whsec-test"


# -- the URL ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example.com/x", "http or https"),
        ("javascript:alert(1)", "http or https"),
        ("https://user:pw@hooks.example.com/x", "credentials"),
        ("https://user@hooks.example.com/x", "credentials"),
        ("https:///path-only", "no host"),
        ("https://hooks.example.com/a b", "spaces"),
        ("https://hooks.example.com:99999/x", "not a valid URL"),
        ("https://hooks.example.com/" + "a" * 2048, "longer than 2048"),
        ("", "http or https"),
    ],
)
def test_bad_callback_urls_are_refused_with_a_reason(url: str, why: str) -> None:
    """Each kind of bad callback_url is refused with bad_callback_url and says why."""
    with pytest.raises(CallbackRefused, match=why) as refused:
        webhooks.parse_callback_url(url)
    assert refused.value.code == webhooks.BAD_URL
    assert "hooks.example.com" not in refused.value.message


def test_a_plain_https_url_with_a_query_is_accepted() -> None:
    """A normal receiver URL, query string included, passes the form check."""
    url = "https://hooks.example.com:8443/t/x?token=abc"
    assert webhooks.parse_callback_url(url).hostname == "hooks.example.com"
    assert len("https://h.example/" + "a" * 2030) <= webhooks.MAX_URL_LENGTH


# -- the address ---------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # shared address space
        "240.0.0.1",  # reserved
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    ],
)
def test_private_addresses_are_refused(address: str) -> None:
    """Loopback, private, link-local, shared, reserved and their IPv6 disguises are refused."""
    assert addresses.address_refusal(address, allow_private=False) is not None
    assert addresses.address_refusal(address, allow_private=True) is None


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata address (red team, round 3)
        "64:ff9b::7f00:1",  # NAT64 of loopback
        "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
        "::a9fe:a9fe",  # IPv4-compatible, inside ::/8
        "::7f00:1",
        "100::1",  # discard-only
        "5f00::1",  # SRv6 SIDs
        "fec0::1",  # site-local (deprecated, still routed inside sites)
        "3fff::1",  # documentation
        "2001:db8::1",  # documentation
        "2001:2::1",  # benchmarking
        "192.0.0.8",  # IETF protocol assignments
        "198.18.0.1",  # benchmarking
        "0.1.2.3",  # "this network"
    ],
)
def test_reserved_ranges_are_refused_before_global(address: str) -> None:
    """NAT64, ::/8 and the other special-purpose ranges are refused, whatever is_global says."""
    assert addresses.address_refusal(address, allow_private=False) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_public_addresses_pass(address: str) -> None:
    """A globally routable address may be called."""
    assert addresses.address_refusal(address, allow_private=False) is None


@pytest.mark.parametrize("address", ["0.0.0.0", "::", "224.0.0.1", "ff02::1"])  # noqa: S104
def test_unspecified_and_multicast_are_refused_even_when_private_is_allowed(address: str) -> None:
    """No receiver lives at an unspecified or multicast address, allow_private or not."""
    assert addresses.address_refusal(address, allow_private=True) is not None


def test_one_refused_address_refuses_the_name() -> None:
    """A name resolving to a public and a private address is refused: it could be steered."""
    with pytest.raises(CallbackRefused) as refused:
        webhooks.check_addresses(["93.184.215.14", "10.0.0.1"], allow_private=False)
    assert refused.value.code == webhooks.REFUSED_ADDRESS
    with pytest.raises(CallbackRefused, match="does not resolve"):
        webhooks.check_addresses([], allow_private=True)


# -- body and signature ------------------------------------------------------------


def _job(state: State = State.FAILED, error: str | None = "no audio") -> Job:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    return Job(
        id="job-1",
        state=state,
        origin=Origin.http(),
        error=error,
        callback_url="https://hooks.example.com/x",
        created=now,
        updated=now,
    )


def test_the_body_names_the_job_its_end_and_its_error() -> None:
    """The receiver gets exactly job_id, state and error."""
    assert json.loads(webhooks.body(_job(), Event.FAILED)) == {
        "job_id": "job-1",
        "state": "failed",
        "error": "no audio",
    }
    assert json.loads(webhooks.body(_job(State.DONE, None), Event.DONE))["error"] is None


def test_the_signature_is_hmac_sha256_of_time_dot_body() -> None:
    """``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` with the secret, as SPEC says."""
    body = b'{"job_id":"job-1","state":"done","error":null}'
    header = webhooks.signature(SECRET, 1764590400, body)
    expected = hmac.new(SECRET.encode(), b"1764590400." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1764590400,v1={expected}"
    assert webhooks.signature("other", 1764590400, body) != header
    assert webhooks.signature(SECRET, 1764590401, body) != header


def test_logs_see_host_and_path_only() -> None:
    """The safe form of a callback URL drops the query string and any user part."""
    assert webhooks.safe_target("https://h.example/p/q?token=s3cret") == "h.example/p/q"


# -- the sender, against a real receiver on 127.0.0.1 ----------------------------------


class Receiver:
    """A local webhook receiver; ``answers`` scripts the status of each request in turn."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.answers: list[int] = []
        self.hang = asyncio.Event()
        self.base = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append((request.path, dict(request.headers), body))
        if request.path == "/hang":
            await self.hang.wait()
        if request.path == "/redirect":
            raise web.HTTPFound(f"{self.base}/elsewhere")
        return web.Response(status=self.answers.pop(0) if self.answers else 204)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    """A receiver listening on a free port of 127.0.0.1."""
    fake = Receiver()
    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    fake.base = f"http://127.0.0.1:{port}"
    yield fake
    fake.hang.set()
    await runner.cleanup()


def _sender(timeout: float) -> AiohttpWebhookSender:
    """A sender that may call 127.0.0.1, giving up on a call after ``timeout`` seconds."""
    clock = ManualClock(datetime(2026, 12, 1, 12, tzinfo=UTC))
    return AiohttpWebhookSender(secret=SECRET, clock=clock, allow_private=True, timeout=timeout)


@pytest.fixture
async def sender() -> AsyncIterator[AiohttpWebhookSender]:
    """A sender that may call 127.0.0.1; its 30-s timeout only cuts off a hang.

    A short one could cut off an answering receiver on a loaded box: a failure without a bug.
    """
    sent = _sender(30.0)
    yield sent
    await sent.close()


async def test_the_receiver_can_verify_the_signature(
    receiver: Receiver, sender: AiohttpWebhookSender
) -> None:
    """The POST carries the body and a signature the receiver checks with the shared secret."""
    body = webhooks.body(_job(), Event.FAILED)
    await sender.send(f"{receiver.base}/hook?token=abc", body)
    [(path, headers, got)] = receiver.requests
    assert (path, got) == ("/hook", body)
    assert headers["Content-Type"] == "application/json"
    t, v1 = (part.split("=", 1)[1] for part in headers[webhooks.SIGNATURE_HEADER].split(","))
    assert int(t) == int(datetime(2026, 12, 1, 12, tzinfo=UTC).timestamp())
    mac = hmac.new(SECRET.encode(), f"{t}.".encode() + got, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(mac, v1)


async def test_an_answer_other_than_2xx_is_retried(
    receiver: Receiver, sender: AiohttpWebhookSender
) -> None:
    """A 500 (or a 404) is a failure to try again later, never a delivery."""
    receiver.answers = [500, 404]
    for _ in range(2):
        with pytest.raises(ReceiverUnavailable):
            await sender.send(f"{receiver.base}/hook", b"{}")


async def test_a_redirect_is_not_followed(receiver: Receiver, sender: AiohttpWebhookSender) -> None:
    """A receiver answering 302 is not followed to where it points; the try failed."""
    with pytest.raises(ReceiverUnavailable, match="302"):
        await sender.send(f"{receiver.base}/redirect", b"{}")
    assert [path for path, _, _ in receiver.requests] == ["/redirect"]


async def test_a_hanging_receiver_is_cut_off(receiver: Receiver) -> None:
    """A receiver that never answers is cut off at the timeout and the try fails."""
    hasty = _sender(0.5)
    try:
        async with asyncio.timeout(30):  # far past the 0.5 s: only a sender that never gives up
            with pytest.raises(ReceiverUnavailable):
                await hasty.send(f"{receiver.base}/hang", b"{}")
    finally:
        await hasty.close()
    assert len(receiver.requests) == 1


async def test_a_receiver_that_is_down_is_a_failed_try(sender: AiohttpWebhookSender) -> None:
    """Nobody listening is a transient failure, not a refusal."""
    with pytest.raises(ReceiverUnavailable):
        await sender.send("http://127.0.0.1:9/hook", b"{}")


async def test_private_receivers_are_refused_at_check_and_at_send(receiver: Receiver) -> None:
    """Without allow_private, loopback by address or by name is refused before any connection."""
    clock = ManualClock()
    strict = AiohttpWebhookSender(secret=SECRET, clock=clock)
    port = receiver.base.rsplit(":", 1)[1]
    try:
        for url in (f"{receiver.base}/hook", f"http://localhost:{port}/hook"):
            with pytest.raises(CallbackRefused) as refused:
                await strict.check(url)
            assert refused.value.code == webhooks.REFUSED_ADDRESS
            # At delivery the address is checked again (DNS may have changed since intake):
            # a literal address is refused for good, a name's answer may change back, so
            # the try fails and is retried within the window, never connecting.
            refusal = CallbackRefused if "localhost" not in url else ReceiverUnavailable
            with pytest.raises(refusal):
                await strict.send(url, b"{}")
    finally:
        await strict.close()
    assert receiver.requests == []


async def test_one_failed_lookup_at_send_is_retried_not_given_up(receiver: Receiver) -> None:
    """A name whose lookup fails once (SERVFAIL, a timeout) is a failed try; the next one sends."""
    port = int(receiver.base.rsplit(":", 1)[1])
    answers: list[OSError | None] = [socket.gaierror(socket.EAI_AGAIN, "try again"), None]

    async def flaky_lookup(host: str, port_: int, family: int, kind: int) -> list[Any]:
        failure = answers.pop(0)
        if failure is not None:
            raise failure
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port_))]

    flaky = AiohttpWebhookSender(
        secret=SECRET, clock=ManualClock(), allow_private=True, timeout=30, lookup=flaky_lookup
    )
    try:
        with pytest.raises(ReceiverUnavailable):
            await flaky.send(f"http://hooks.test:{port}/hook", b"{}")
        await flaky.send(f"http://hooks.test:{port}/hook", b"{}")
    finally:
        await flaky.close()
    assert [path for path, _, _ in receiver.requests] == ["/hook"]


async def test_a_private_receiver_passes_when_allowed(
    receiver: Receiver, sender: AiohttpWebhookSender
) -> None:
    """With allow_private, localhost resolves, is checked, and is called."""
    port = receiver.base.rsplit(":", 1)[1]
    await sender.check(f"http://localhost:{port}/hook")
    await sender.send(f"http://localhost:{port}/hook", b"{}")
    assert len(receiver.requests) == 1


# -- the outbox sends webhooks ------------------------------------------------------


class RecordingSender:
    """A webhook sender that records calls and fails when told."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []
        self.failures: list[Exception] = []

    async def check(self, url: str) -> None:
        webhooks.parse_callback_url(url)

    async def send(self, url: str, body: bytes) -> None:
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((url, body))


async def test_an_ended_job_calls_its_callback_once_after_failures(tmp_path: Path) -> None:
    """A job with a callback_url is POSTed once when it ends, retried past two failures."""
    world = make_world(tmp_path)
    hooks = RecordingSender()
    hooks.failures = [TransientError("502"), TransientError("timeout")]
    world.services = attrs.evolve(world.services, webhooks=hooks)
    upload = tmp_path / "upload"
    upload.write_bytes(b"RIFF fake")
    job, _ = await submit(
        world.services,
        upload,
        extension=".ogg",
        origin=Origin.http(),
        callback_url="https://hooks.example.com/x?k=1",
    )
    ended = await world.run_to_end(job.id)
    assert hooks.sent == []
    for _ in range(2):
        world.later(world.services.settings.delivery_retry_cap)
        await world.deliver()
    assert hooks.sent == [("https://hooks.example.com/x?k=1", webhooks.body(ended, Event.DONE))]
    assert await world.repo.pending_deliveries() == {}


async def test_a_process_without_the_secret_leaves_the_call_for_one_with_it(
    tmp_path: Path,
) -> None:
    """With no webhook sender here the delivery waits and is retried, never given up at once."""
    world = make_world(tmp_path)
    upload = tmp_path / "upload"
    upload.write_bytes(b"RIFF fake")
    job, _ = await submit(
        world.services,
        upload,
        extension=".ogg",
        origin=Origin.http(),
        callback_url="https://hooks.example.com/x",
    )
    await world.run_to_end(job.id)
    assert await world.repo.pending_deliveries() == {DeliveryKind.WEBHOOK: 1}
    hooks = RecordingSender()
    world.services = attrs.evolve(world.services, webhooks=hooks)
    world.later(world.services.settings.delivery_retry_cap)
    assert await world.deliver() == 1
    assert [url for url, _ in hooks.sent] == ["https://hooks.example.com/x"]
