"""Searching one's own transcripts in the workspace (``GET /w/search``, ADR 58)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace import person
from tests.app.test_workspace_corrections import someone
from tests.support.admin import in_process_client
from transcriber_app.bootstrap import Runtime
from transcriber_core.entities import Correction, Job, Origin, State, Word
from transcriber_core.people import Person


def timed(text: str) -> tuple[Word, ...]:
    """The words of ``text``, one a second."""
    return tuple(
        Word(text=token, start=float(n), end=n + 0.8) for n, token in enumerate(text.split())
    )


async def recording(runtime: Runtime, of: Person, text: str, *, state: State = State.DONE) -> Job:
    """A recording of ``of``'s with ``text`` as its transcript, timed a word a second."""
    now = runtime.services.clock.now()
    job = Job(
        id=runtime.services.ids.new_id(),
        state=state,
        origin=Origin.http(),
        text=text,
        words=timed(text),
        owner=of.owner_key,
        created=now,
        updated=now,
        ended=now if state is State.DONE else None,
    )
    created, _ = await runtime.services.repo.create(job)
    return created


def results(page: str) -> list[str]:
    """The recording ids the results link to, in order."""
    return re.findall(r'<a class="hit-link" href="/w/recordings/([^"#]+)', page)


@pytest.fixture
async def alice(runtime: Runtime, owner: httpx.AsyncClient) -> httpx.AsyncClient:
    """Alice, signed in."""
    return await person(runtime, owner, "alice")


@pytest.fixture
async def bob(runtime: Runtime, owner: httpx.AsyncClient) -> httpx.AsyncClient:
    """Bob, signed in: another person."""
    return await person(runtime, owner, "bob")


async def test_a_person_finds_their_words_marked_with_a_link_to_the_moment(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """One word: the recording listed, the word in ``<mark>``, the link at its start (``#t=``)."""
    of = await someone(runtime, "alice")
    job = await recording(runtime, of, "we meet at the old Harbour tomorrow at noon")
    await recording(runtime, of, "nothing about boats")
    page = await alice.get("/w/search", params={"q": "harbour"})
    assert page.status_code == 200
    assert results(page.text) == [job.id]
    assert f'href="/w/recordings/{job.id}#t=5.00"' in page.text
    assert "<mark>Harbour</mark>" in page.text
    assert "One recording matches" in page.text
    assert 'value="harbour"' in page.text  # the box keeps what was typed


async def test_every_word_is_needed_and_a_prefix_finds_whole_words(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """Two words find the recording holding both; a word's beginning finds it, any case."""
    of = await someone(runtime, "alice")
    both = await recording(runtime, of, "Квартальный отчёт по продажам")
    await recording(runtime, of, "отчёт про поездку")
    page = await alice.get("/w/search", params={"q": "ОТЧЁТ продаж"})
    assert results(page.text) == [both.id]
    assert "<mark>продажам</mark>" in page.text
    assert "<mark>отчёт</mark>" in page.text


async def test_a_second_person_never_finds_the_firsts_words(
    runtime: Runtime, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    """Bob searching Alice's words gets no hit and nothing of hers on the page."""
    job = await recording(
        runtime, await someone(runtime, "alice"), "confidential quarterly figures"
    )
    mine = await alice.get("/w/search", params={"q": "confidential"})
    assert results(mine.text) == [job.id]
    theirs = await bob.get("/w/search", params={"q": "confidential"})
    assert theirs.status_code == 200
    assert results(theirs.text) == []
    assert job.id not in theirs.text
    assert "quarterly" not in theirs.text
    assert "None of your transcripts holds “confidential”." in theirs.text


async def test_an_empty_or_punctuation_only_query_lists_nothing(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """No ``q``, a blank one, or one of no letters: the form, no results, never an error."""
    await recording(runtime, await someone(runtime, "alice"), "some words")
    for params in ({}, {"q": ""}, {"q": "   "}, {"q": '"*()-'}):
        page = await alice.get("/w/search", params=params)
        assert page.status_code == 200, params
        assert results(page.text) == []
        assert 'role="search"' in page.text


async def test_query_syntax_never_breaks_the_page(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """What FTS5 or ``to_tsquery`` would choke on is words: 200, and the words are found."""
    job = await recording(runtime, await someone(runtime, "alice"), "the fox was near the dog")
    for typed in ('"fox', "fox*", "NEAR(fox dog)", "-fox", "(((fox", "fox & !dog", "fox:*'"):
        page = await alice.get("/w/search", params={"q": typed})
        assert page.status_code == 200, typed
        assert results(page.text) == [job.id], typed
    long = await alice.get("/w/search", params={"q": "fox " * 2000})
    assert long.status_code == 200


async def test_a_transcript_with_markup_is_shown_as_text(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """A transcript holding ``<script>`` is escaped in the snippet, matched word and all."""
    text = 'he said <script>alert("x")</script> and <b>bold</b> & "quotes"'
    job = await recording(runtime, await someone(runtime, "alice"), text)
    page = await alice.get("/w/search", params={"q": "script alert"})
    assert results(page.text) == [job.id]
    assert "<script" not in page.text
    assert "<b>" not in page.text
    assert "<mark>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</mark>" in page.text
    echoed = await alice.get("/w/search", params={"q": '"><script>alert(1)</script>'})
    assert "<script" not in echoed.text
    assert 'value="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"' in echoed.text


async def test_a_correction_is_what_is_found(runtime: Runtime, alice: httpx.AsyncClient) -> None:
    """After a correction the new word is found and the replaced one is not."""
    job = await recording(runtime, await someone(runtime, "alice"), "call the plumber")
    fixed = (*job.words[:2], Word(text="electrician", start=2.0, end=2.8))
    correction = Correction(
        text="call the electrician", words=fixed, original_text=job.text, original_words=job.words
    )
    await runtime.services.corrections.save_correction(job.id, correction, version=0)
    assert results((await alice.get("/w/search", params={"q": "plumber"})).text) == []
    page = await alice.get("/w/search", params={"q": "electri"})
    assert results(page.text) == [job.id]
    assert "<mark>electrician</mark>" in page.text


async def test_the_search_box_is_in_every_signed_in_page_and_the_page_is_guarded(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """The header's box posts nowhere (GET); the page needs a session; the CSP stays strict."""
    home = await alice.get("/w/")
    assert 'action="/w/search"' in home.text
    assert 'aria-label="Search your transcripts"' in home.text
    page = await alice.get("/w/search", params={"q": "x"})
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert "<script" not in page.text
    async with in_process_client(runtime) as anonymous:
        answer = await anonymous.get("/w/search", params={"q": "x"})
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/w/login")
