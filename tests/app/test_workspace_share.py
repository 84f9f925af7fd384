"""The share target (ADR 80) and the installable app's files, in-process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace import person
from tests.app.test_workspace import recording as recording  # noqa: PLC0414 - the fixture
from tests.app.test_workspace_upload import listed, staged
from tests.app.test_workspace_upload import runtime as runtime  # noqa: PLC0414 - the fixture
from tests.app.test_workspace_upload import small as small  # noqa: PLC0414 - the fixture
from transcriber_app.bootstrap import Runtime


@pytest.fixture
async def alice(runtime: Runtime, owner: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """Alice, signed in."""
    client = await person(runtime, owner, "alice")
    yield client
    await client.aclose()


async def share(client: httpx.AsyncClient, data: bytes, site: str | None) -> httpx.Response:
    """Post ``data`` to the share target as a browser would, saying ``Sec-Fetch-Site: site``."""
    headers = {} if site is None else {"Sec-Fetch-Site": site}
    return await client.post(
        "/w/share", files={"file": ("shared.m4a", data, "audio/mp4")}, headers=headers
    )


@pytest.mark.parametrize("site", ["none", "same-origin"])
async def test_a_share_from_the_phone_or_the_site_becomes_the_persons_recording(
    runtime: Runtime, alice: httpx.AsyncClient, small: bytes, site: str
) -> None:
    """A share the browser made itself, or this site's page made, is a job; 303 to its page."""
    answer = await share(alice, small, site)
    assert answer.status_code == 303, answer.text
    job_id = answer.headers["location"].removeprefix("/w/recordings/")
    assert list(await listed(alice)) == [job_id]
    stored = await runtime.services.jobs.get(job_id)
    assert stored.owner is not None
    assert (await alice.get(answer.headers["location"])).status_code == 200


@pytest.mark.parametrize("site", ["cross-site", "same-site", None])
async def test_a_share_from_another_site_is_refused_unread(
    runtime: Runtime, alice: httpx.AsyncClient, small: bytes, site: str | None
) -> None:
    """Another site's post (or a browser that does not say) makes nothing, its body unread."""
    answer = await share(alice, small, site)
    assert answer.status_code == 403
    assert answer.headers["connection"] == "close"
    assert "another site" in answer.text
    assert await listed(alice) == {}
    assert staged(runtime) == []


async def test_a_share_signed_out_says_to_sign_in_and_share_again(
    runtime: Runtime, small: bytes
) -> None:
    """Signed out: nothing is made; the page links to sign-in and says to share again."""
    from tests.support.admin import in_process_client  # noqa: PLC0415 - beside its one use

    async with in_process_client(runtime) as anyone:
        answer = await share(anyone, small, "none")
    assert answer.status_code == 403
    assert "/w/login?next=%2Fw%2Fupload" in answer.text
    assert "share the recording again" in answer.text
    assert answer.headers["connection"] == "close"
    assert staged(runtime) == []


async def test_the_manifest_and_the_favicon_are_served_and_linked_from_the_pages(
    alice: httpx.AsyncClient,
) -> None:
    """Every page links the manifest and the icon; both answer, the manifest parses."""
    manifest = await alice.get("/manifest.webmanifest")
    assert manifest.status_code == 200
    body = json.loads(manifest.text)
    assert body["share_target"]["action"] == "/w/share"
    assert (await alice.get("/favicon.ico")).status_code == 200
    for path in ("/w/", "/w/upload", "/w/tokens", "/admin/login"):
        page = await alice.get(path)
        assert 'rel="manifest" href="/manifest.webmanifest"' in page.text, path
        assert 'rel="icon" href="/favicon.ico"' in page.text, path
        assert "manifest-src 'self'" in page.headers["content-security-policy"], path
