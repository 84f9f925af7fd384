"""The page's summary and question routes under ``/w`` (SPEC §27): the person's own, with CSRF.

The runtime's ``[llm]`` is the fake chat server, as in ``test_summaries_api.py``.
"""

from __future__ import annotations

import json

import httpx

from tests.app.test_summaries_api import fake as fake  # noqa: PLC0414 - the fixture
from tests.app.test_summaries_api import runtime as runtime  # noqa: PLC0414 - with [llm]
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace import person
from tests.app.test_workspace_corrections import done_job, someone, token_of
from tests.support.fake_chat import FakeChatServer
from transcriber_app.bootstrap import Runtime


async def test_the_page_asks_reads_and_questions_only_with_its_session(
    runtime: Runtime, owner: httpx.AsyncClient, fake: FakeChatServer
) -> None:
    """Alice queues, reads and questions her summary; no CSRF, no session or Bob: refused."""
    alice = await person(runtime, owner, "alice")
    bob = await person(runtime, owner, "bob")
    job = await done_job(runtime, await someone(runtime, "alice"))
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    assert 'id="summary"' in page.text
    assert f'data-url="{url}/summary"' in page.text

    never = await alice.get(f"{url}/summary")
    assert (never.status_code, never.json()["error"]) == (404, "summary_not_found")
    bare = await alice.post(f"{url}/summary")
    assert (bare.status_code, bare.json()["error"]) == (403, "bad_csrf")
    async with httpx.AsyncClient(transport=alice._transport, base_url="http://127.0.0.1") as anon:
        stranger = await anon.get(f"{url}/summary")
    assert (stranger.status_code, stranger.json()["error"]) == (403, "not_signed_in")

    headers = {"X-CSRF-Token": await token_of(alice)}
    asked = await alice.post(f"{url}/summary", headers=headers)
    assert (asked.status_code, asked.json()["state"]) == (202, "pending")
    assert (await alice.get(f"{url}/summary")).json()["state"] == "pending"

    fake.answer_next(json.dumps({"answer": "Bo said bye.", "lines": [2]}))
    answer = await alice.post(f"{url}/ask", headers=headers, json={"question": "Who left?"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["answer"] == "Bo said bye."
    assert [q["start"] for q in answer.json()["quotes"]] == [1.5]
    empty = await alice.post(f"{url}/ask", headers=headers, json={"question": " "})
    assert (empty.status_code, empty.json()["error"]) == (400, "bad_question")

    bobs = {"X-CSRF-Token": await token_of(bob)}
    for method, path in (("GET", "summary"), ("POST", "summary"), ("POST", "ask")):
        seen = await bob.request(method, f"{url}/{path}", headers=bobs, json={"question": "x"})
        assert (seen.status_code, seen.json()["error"]) == (404, "job_not_found"), path
    await alice.aclose()
    await bob.aclose()
