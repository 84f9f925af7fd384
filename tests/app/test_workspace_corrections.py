"""Correcting one's transcript in the workspace, undoing it and downloading it (ADR 57)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from tests.app.test_workspace import bearer, csrf, make_token, person
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from transcriber_app import server
from transcriber_app.bootstrap import Runtime
from transcriber_app.web import create_app
from transcriber_app.web.workspace import corrections
from transcriber_core import alignment
from transcriber_core.corrections import GROWTH_WORDS, MAX_TEXT_CHARS
from transcriber_core.entities import Job, Origin, Speaker, State, Word
from transcriber_core.people import Person

#: The recognizer's words of the recording in these tests: two turns.
HEARD = (
    Word(text="hello", start=0.0, end=0.5, speaker="S1"),
    Word(text="wrld", start=0.6, end=1.0, speaker="S1"),
    Word(text="good", start=1.5, end=1.8, speaker="S2"),
    Word(text="bye", start=1.9, end=2.2, speaker="S2"),
)
FORMATS = ("txt", "srt", "vtt", "json")


async def someone(runtime: Runtime, name: str) -> Person:
    """The person called ``name``."""
    (found,) = [p for p in await runtime.people.list_people() if p.name == name]
    return found


async def done_job(runtime: Runtime, of: Person, state: State = State.DONE) -> Job:
    """A recording of ``of``'s, done with the recognizer's words in two turns."""
    now = runtime.services.clock.now()
    job = Job(
        id=runtime.services.ids.new_id(),
        state=state,
        origin=Origin.http(),
        text="Hello wrld. Good bye." if state is State.DONE else None,
        words=HEARD if state is State.DONE else (),
        speakers=(Speaker(id="S1", name="Ann"), Speaker(id="S2", name="Bo")),
        owner=of.owner_key,
        created=now,
        updated=now,
    )
    created, _ = await runtime.services.repo.create(job)
    return created


async def token_of(client: httpx.AsyncClient) -> str:
    """The session's CSRF token, from any of its pages."""
    return csrf((await client.get("/w/")).text)


async def correct(
    client: httpx.AsyncClient, job_id: str, body: object, *, token: str | None = None
) -> httpx.Response:
    """Post a correction as the editor does, with the session's token unless one is given."""
    headers = {"X-CSRF-Token": token if token is not None else await token_of(client)}
    return await client.post(f"/w/recordings/{job_id}/words", json=body, headers=headers)


@pytest.fixture
async def alice(runtime: Runtime, owner: httpx.AsyncClient) -> httpx.AsyncClient:
    """Alice, signed in."""
    return await person(runtime, owner, "alice")


@pytest.fixture
async def bob(runtime: Runtime, owner: httpx.AsyncClient) -> httpx.AsyncClient:
    """Bob, signed in: another person."""
    return await person(runtime, owner, "bob")


async def test_a_correction_is_saved_shown_and_downloaded_everywhere(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """One word corrected: the answer, the page, all four downloads and /api show it."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    answer = await correct(
        alice, job.id, {"version": 0, "start": 0, "end": 2, "text": "Hello world."}
    )
    assert answer.status_code == 200, answer.text
    saved = answer.json()
    assert saved["version"] == 1
    assert (saved["start"], saved["end"], saved["shift"], saved["corrected"]) == (0, 2, 0, True)
    assert [w["text"] for w in saved["words"]] == ["Hello", "world."]
    assert [(w["i"], w["start"], w["end"]) for w in saved["words"]] == [
        (0, 0.0, 0.5),
        (1, 0.6, 1.0),
    ]

    page = await alice.get(f"/w/recordings/{job.id}")
    assert 'data-version="1"' in page.text
    assert ">world.</span>" in page.text
    assert "wrld" not in page.text
    assert "/static/editor.js" in page.text
    assert "Restore the recognizer" in page.text
    for wanted in FORMATS:
        download = await alice.get(f"/w/recordings/{job.id}/transcript.{wanted}")
        assert download.status_code == 200, wanted
        assert "world" in download.text, wanted
        assert "wrld" not in download.text, wanted
        disposition = download.headers["content-disposition"]
        assert disposition.startswith(f'attachment; filename="Recording of {job.created.day} ')
        assert disposition.endswith(f".{wanted}")
    document = (await alice.get(f"/w/recordings/{job.id}/transcript.json")).json()
    assert document["corrected"] is True
    assert document["text"] == "Hello world. Good bye."
    text = (await alice.get(f"/w/recordings/{job.id}/transcript.txt")).text
    assert text == "Ann: Hello world.\n\nBo: Good bye.\n"

    api_token = await make_token(alice)
    api = await alice.get(f"/api/jobs/{job.id}/transcript", headers=bearer(api_token))
    assert "Hello world." in api.text
    status = await alice.get(f"/api/status/{job.id}", headers=bearer(api_token))
    assert status.json()["text"] == "Hello world. Good bye."
    srt = await alice.get(
        f"/api/jobs/{job.id}/transcript", params={"format": "srt"}, headers=bearer(api_token)
    )
    assert "Ann: Hello world." in srt.text
    await alice.aclose()


async def test_a_turn_grown_or_emptied_moves_the_later_words(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """A longer turn shifts later indices forward; an emptied one removes its words."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    grown = await correct(
        alice, job.id, {"version": 0, "start": 0, "end": 2, "text": "oh hello big world"}
    )
    assert grown.json()["shift"] == 2
    assert [w["i"] for w in grown.json()["words"]] == [0, 1, 2, 3]
    emptied = await correct(alice, job.id, {"version": 1, "start": 4, "end": 6, "text": ""})
    assert emptied.status_code == 200, emptied.text
    assert (emptied.json()["words"], emptied.json()["shift"]) == ([], -2)
    stored = await runtime.services.jobs.get(job.id)
    assert stored.text == "oh hello big world"
    assert stored.original_words == HEARD
    await alice.aclose()


async def test_without_a_session_or_its_csrf_token_nothing_is_saved(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """No header, a wrong token, or no session at all: 403 with a code, nothing written."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    body = {"version": 0, "start": 0, "end": 1, "text": "x"}
    bare = await alice.post(f"/w/recordings/{job.id}/words", json=body)
    assert (bare.status_code, bare.json()["error"]) == (403, "bad_csrf")
    wrong = await correct(alice, job.id, body, token="x" * 43)
    assert (wrong.status_code, wrong.json()["error"]) == (403, "bad_csrf")
    async with httpx.AsyncClient(transport=alice._transport, base_url="http://127.0.0.1") as anon:
        stranger = await correct(anon, job.id, body, token="x" * 43)
    assert (stranger.status_code, stranger.json()["error"]) == (403, "not_signed_in")
    no_form = await alice.post(f"/w/recordings/{job.id}/restore", data={"version": "0"})
    assert no_form.status_code == 403
    assert (await runtime.services.jobs.get(job.id)).edit_version == 0
    await alice.aclose()


async def test_another_persons_recording_is_not_found_on_every_route(
    runtime: Runtime, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    """Bob, signed in with his own CSRF token, gets 404 for Alice's job everywhere."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    await correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "Hi"})
    body = {"version": 1, "start": 0, "end": 1, "text": "mine"}
    stolen = await correct(bob, job.id, body)
    assert (stolen.status_code, stolen.json()["error"]) == (404, "job_not_found")
    page = await bob.get("/w/")
    restore = await bob.post(
        f"/w/recordings/{job.id}/restore", data={"csrf": csrf(page.text), "version": "1"}
    )
    assert restore.status_code == 404
    for wanted in FORMATS:
        assert (await bob.get(f"/w/recordings/{job.id}/transcript.{wanted}")).status_code == 404
    stored = await runtime.services.jobs.get(job.id)
    assert (stored.edit_version, stored.words[0].text) == (1, "Hi")
    await alice.aclose()
    await bob.aclose()


async def test_a_save_from_a_stale_version_is_an_edit_conflict(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """Two pages read version 0; the second save is 409 ``edit_conflict`` and writes nothing."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    first = await correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "Hi"})
    assert first.status_code == 200
    second = await correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "Yo"})
    assert second.status_code == 409
    assert set(second.json()) == {"error", "message"}
    assert second.json()["error"] == "edit_conflict"
    assert (await runtime.services.jobs.get(job.id)).words[0].text == "Hi"
    await alice.aclose()


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"version": 0, "start": 3, "end": 9, "text": "x"}, 400, "bad_range"),
        ({"version": 0, "start": 2, "end": 2, "text": "x"}, 400, "bad_range"),
        (
            {"version": 0, "start": 0, "end": 1, "text": "x" * (MAX_TEXT_CHARS + 1)},
            400,
            "text_too_long",
        ),
        ({"version": 0, "start": 0, "end": 1, "text": "a\u0007b"}, 400, "bad_text"),
        ({"version": "0", "start": 0, "end": 1, "text": "x"}, 400, "bad_request"),
        ({"version": 0, "start": True, "end": 1, "text": "x"}, 400, "bad_request"),
        ({"version": 0, "start": 0, "end": 1, "text": 5}, 400, "bad_request"),
        ([0, 0, 1, "x"], 400, "bad_request"),
    ],
)
async def test_bad_bodies_are_refused_with_stable_codes(
    runtime: Runtime, alice: httpx.AsyncClient, body: object, status: int, code: str
) -> None:
    """Each kind of bad correction has its code; nothing is written."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    answer = await correct(alice, job.id, body)
    assert (answer.status_code, answer.json()["error"]) == (status, code), answer.text
    assert (await runtime.services.jobs.get(job.id)).edit_version == 0
    await alice.aclose()


async def test_a_job_not_done_is_not_corrected_nor_downloaded(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """A job on its way: 409 ``not_done`` for a correction, 409 for a download."""
    job = await done_job(runtime, await someone(runtime, "alice"), State.CONVERT)
    answer = await correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "x"})
    assert (answer.status_code, answer.json()["error"]) == (409, "not_done")
    assert (await alice.get(f"/w/recordings/{job.id}/transcript.txt")).status_code == 409
    assert (await alice.get(f"/w/recordings/{job.id}/transcript.doc")).status_code == 404
    await alice.aclose()


async def test_restore_puts_the_recognizers_transcript_back(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """Restore from the page's version brings the original back; a stale one changes nothing."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    await correct(alice, job.id, {"version": 0, "start": 0, "end": 2, "text": "Hello world."})
    page = await alice.get(f"/w/recordings/{job.id}")
    token = csrf(page.text)
    url = f"/w/recordings/{job.id}/restore"
    stale = await alice.post(url, data={"csrf": token, "version": "0"})
    assert stale.status_code == 303
    assert (await runtime.services.jobs.get(job.id)).corrected
    assert "Someone saved a change" in (await alice.get(f"/w/recordings/{job.id}")).text
    back = await alice.post(url, data={"csrf": token, "version": "1"})
    assert (back.status_code, back.headers["location"]) == (303, f"/w/recordings/{job.id}")
    stored = await runtime.services.jobs.get(job.id)
    assert (stored.text, stored.words, stored.original_text) == (
        "Hello wrld. Good bye.",
        HEARD,
        None,
    )
    assert stored.edit_version == 2
    page = await alice.get(f"/w/recordings/{job.id}")
    assert "recognizer&#39;s transcript is back" in page.text
    assert "Restore the recognizer" not in page.text
    assert "wrld" in (await alice.get(f"/w/recordings/{job.id}/transcript.txt")).text
    again = await alice.post(url, data={"csrf": token, "version": "2"})
    assert again.status_code == 303
    assert "Nothing to restore" in (await alice.get(f"/w/recordings/{job.id}")).text
    await alice.aclose()


async def test_the_page_lays_out_the_editors_dom_contract(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """The article, turns and word spans carry what editor.js reads; the script is served."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    page = (await alice.get(f"/w/recordings/{job.id}")).text
    article = re.search(r"<article id=\"transcript\"[^>]*>", page)
    assert article is not None
    assert f'data-job="{job.id}"' in article.group()
    assert 'data-version="0"' in article.group()
    assert f'data-words-url="/w/recordings/{job.id}/words"' in article.group()
    assert page.count('<p class="turn" data-speaker="S1">') == 1
    assert '<span class="w" data-i="3" data-start="1.90" data-end="2.20">bye.</span>' in page
    assert "<script>" not in page
    script = await alice.get("/w/static/editor.js")
    assert script.status_code == 200
    assert "X-CSRF-Token" in script.text
    assert json.dumps("edit_conflict") in script.text
    await alice.aclose()


# -- bounded work (SPEC §29, ADR 65) ----------------------------------------------------------

#: How long a test waits for a condition before calling it hung (not a bound on speed).
HUNG = 120.0


async def job_of(runtime: Runtime, of: Person, tokens: list[str]) -> Job:
    """A done recording of ``of``'s whose transcript is ``tokens``, a word a second."""
    now = runtime.services.clock.now()
    words = tuple(
        Word(text=t, start=float(i), end=i + 0.5, speaker="S1") for i, t in enumerate(tokens)
    )
    job = Job(
        id=runtime.services.ids.new_id(),
        state=State.DONE,
        origin=Origin.http(),
        text=" ".join(tokens),
        words=words,
        owner=of.owner_key,
        created=now,
        updated=now,
    )
    created, _ = await runtime.services.repo.create(job)
    return created


class Gate:
    """Holds a correction between two slices of its work (at its ``at``-th look) until released."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, at: int = 2) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()
        self.looks = 0
        self.gone = False
        real = corrections.still_wanted

        async def gated(request: Request) -> bool:
            self.looks += 1
            if self.looks == at:
                self.reached.set()
                await self.release.wait()
            wanted = await real(request)
            self.gone = self.gone or not wanted
            return wanted

        monkeypatch.setattr(corrections, "still_wanted", gated)


class Sighting(logging.Handler):
    """A log handler that sets ``event`` when a line with ``message`` is logged."""

    def __init__(self, message: str) -> None:
        super().__init__(logging.INFO)
        self.message = message
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        """Set the event on the line looked for."""
        if record.getMessage() == self.message:
            self.event.set()


def count_alignments(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that grows by one at every alignment begun."""
    begun: list[int] = []
    real = alignment.aligning

    def counted(*args: Any, **kwargs: Any) -> Any:
        begun.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(alignment, "aligning", counted)
    return begun


async def test_a_correction_past_the_work_budget_is_refused_with_422(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """4,000 a's retyped as a-b pairs: ``correction_too_complex``, 422, nothing written."""
    job = await job_of(runtime, await someone(runtime, "alice"), ["a"] * 4_000)
    text = " ".join(["a", "b"] * 2_000)
    answer = await correct(alice, job.id, {"version": 0, "start": 0, "end": 4_000, "text": text})
    assert (answer.status_code, answer.json()["error"]) == (422, "correction_too_complex")
    assert "smaller steps" in answer.json()["message"]
    assert (await runtime.services.jobs.get(job.id)).edit_version == 0
    await alice.aclose()


async def test_a_transcript_grown_past_its_ceiling_is_refused_with_422(
    runtime: Runtime, alice: httpx.AsyncClient
) -> None:
    """Four recognised words may become 1,004, not more: ``transcript_too_long``, unsaved."""
    job = await done_job(runtime, await someone(runtime, "alice"))
    body = {"version": 0, "start": 0, "end": 1, "text": " ".join(["w"] * (GROWTH_WORDS + 1))}
    answer = await correct(alice, job.id, body)
    assert answer.status_code == 200, answer.text
    more = {"version": 1, "start": 0, "end": 1, "text": "w w"}
    refused = await correct(alice, job.id, more)
    assert (refused.status_code, refused.json()["error"]) == (422, "transcript_too_long")
    stored = await runtime.services.jobs.get(job.id)
    assert (stored.edit_version, len(stored.words)) == (1, GROWTH_WORDS + 4)
    await alice.aclose()


async def test_a_second_save_from_the_same_version_is_refused_before_any_alignment(
    runtime: Runtime, alice: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two saves from version 0 at once: the second waits its turn, then 409 with no alignment."""
    job = await job_of(runtime, await someone(runtime, "alice"), ["a"] * 1_000)
    gate = Gate(monkeypatch)
    begun = count_alignments(monkeypatch)
    bodies: list[int] = []
    second_read = asyncio.Event()
    real_read = corrections.read_json_object

    async def counted_read(request: Request, **kwargs: Any) -> dict[str, Any]:
        body = await real_read(request, **kwargs)
        bodies.append(1)
        if len(bodies) == 2:
            # From here the second goes straight to wait for its turn.
            second_read.set()
        return body

    monkeypatch.setattr(corrections, "read_json_object", counted_read)
    token = await token_of(alice)
    text = " ".join(["a", "b"] * 500)
    first = asyncio.create_task(
        correct(alice, job.id, {"version": 0, "start": 0, "end": 1_000, "text": text}, token=token)
    )
    await asyncio.wait_for(gate.reached.wait(), HUNG)
    second = asyncio.create_task(
        correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "b"}, token=token)
    )
    await asyncio.wait_for(second_read.wait(), HUNG)
    gate.release.set()
    saved, refused = await asyncio.wait_for(asyncio.gather(first, second), HUNG)
    assert saved.status_code == 200, saved.text
    assert (refused.status_code, refused.json()["error"]) == (409, "edit_conflict")
    assert len(begun) == 1
    stored = await runtime.services.jobs.get(job.id)
    assert (stored.edit_version, stored.words[1].text) == (1, "b")
    stale = await correct(alice, job.id, {"version": 0, "start": 0, "end": 1, "text": "c"})
    assert (stale.status_code, stale.json()["error"]) == (409, "edit_conflict")
    assert len(begun) == 1
    await alice.aclose()


async def test_other_pages_are_served_while_a_correction_is_aligned(
    runtime: Runtime,
    alice: httpx.AsyncClient,
    bob: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between two slices of a correction's work, Bob's list and Alice's page are answered."""
    job = await job_of(runtime, await someone(runtime, "alice"), ["a"] * 1_000)
    gate = Gate(monkeypatch)
    text = " ".join(["a", "b"] * 500)
    working = asyncio.create_task(
        correct(alice, job.id, {"version": 0, "start": 0, "end": 1_000, "text": text})
    )
    await asyncio.wait_for(gate.reached.wait(), HUNG)
    listed = await asyncio.wait_for(bob.get("/w/"), HUNG)
    page = await asyncio.wait_for(alice.get(f"/w/recordings/{job.id}"), HUNG)
    assert (listed.status_code, page.status_code) == (200, 200)
    assert not working.done()
    gate.release.set()
    saved = await asyncio.wait_for(working, HUNG)
    assert saved.status_code == 200, saved.text
    assert gate.looks > 2  # it went on slicing after the gate
    stored = await runtime.services.jobs.get(job.id)
    assert [w.text for w in stored.words] == ["a", "b"] * 500
    assert all(w in job.words for w in stored.words if w.text == "a")  # timings kept
    await alice.aclose()
    await bob.aclose()


async def test_a_correction_whose_client_left_is_dropped_unsaved(
    runtime: Runtime,
    alice: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Over real HTTP: the client hangs up mid-correction; the work stops and nothing is saved."""
    caplog.set_level(logging.INFO, logger="transcriber.workspace")
    seen = Sighting("workspace.correction_abandoned")
    logging.getLogger("transcriber.workspace").addHandler(seen)
    job = await job_of(runtime, await someone(runtime, "alice"), ["a"] * 1_000)
    gate = Gate(monkeypatch)
    token = await token_of(alice)
    cookies = "; ".join(f"{name}={value}" for name, value in alice.cookies.items())
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    app = create_app(runtime)
    served = server._Server(server.uvicorn_config(runtime, app, host="127.0.0.1", port=port))
    serving = asyncio.create_task(served.serve(sockets=[listener]))
    try:
        async with asyncio.timeout(HUNG):
            while not served.started:  # noqa: ASYNC110 - uvicorn's is a flag, not an event
                await asyncio.sleep(0.01)
        body = json.dumps(
            {"version": 0, "start": 0, "end": 1_000, "text": " ".join(["a", "b"] * 500)}
        ).encode()
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            f"POST /w/recordings/{job.id}/words HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Cookie: {cookies}\r\nX-CSRF-Token: {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        await asyncio.wait_for(gate.reached.wait(), HUNG)
        writer.close()
        await writer.wait_closed()
        gate.release.set()
        await asyncio.wait_for(seen.event.wait(), HUNG)
    finally:
        logging.getLogger("transcriber.workspace").removeHandler(seen)
        served.should_exit = True
        await asyncio.wait_for(serving, HUNG)
    assert gate.gone
    assert not any(r.getMessage() == "workspace.corrected" for r in caplog.records)
    assert (await runtime.services.jobs.get(job.id)).edit_version == 0
    await alice.aclose()
