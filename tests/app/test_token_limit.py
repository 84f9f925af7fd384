"""A person's token limit holds however many token posts come at once (SPEC §29, ADR 68)."""

from __future__ import annotations

import asyncio

import httpx

from tests.app.test_workspace import csrf, person
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from transcriber_app.bootstrap import Runtime
from transcriber_core.people import MAX_TOKENS_PER_PERSON

#: Token posts sent at once, as the red team did.
POSTS = 60


async def test_posts_at_once_never_make_more_tokens_than_the_limit(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """60 token posts at once: exactly the limit are made, the rest told to revoke one first."""
    alice = await person(runtime, owner, "alice")
    token = csrf((await alice.get("/w/tokens")).text)
    answers = await asyncio.gather(
        *(alice.post("/w/tokens", data={"csrf": token, "label": f"t{n}"}) for n in range(POSTS))
    )
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201] * MAX_TOKENS_PER_PERSON + [400] * (POSTS - MAX_TOKENS_PER_PERSON)
    refused = next(answer for answer in answers if answer.status_code == 400)
    assert "revoke one first" in refused.text
    me = await runtime.people.find_person("alice")
    assert me is not None
    assert len(await runtime.people.list_tokens(me.id)) == MAX_TOKENS_PER_PERSON
    await alice.aclose()
