"""``/api/voices`` in-process (SPEC §25): remember, match, rename, delete, whose, no prints out."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.test_workspace import bearer, make_token, owner, person
from tests.support.admin import in_process_client
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, MemoryConfig, StorageConfig
from transcriber_core.entities import State
from transcriber_core.worker import acquire_next, process

#: The deployment's static token.
STATIC = "the deployment's static token"
#: The demo's text: three sentences, so two voices take turns (S1, S2, S1).
TEXT = "Hello there. Hi Anna. Bye now."

__all__ = ["owner"]  # the workspace's owner fixture, used to invite people here


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose demo labels two voices, with one static token; steps run by the test."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123, api_tokens=(STATIC,)),
        memory=MemoryConfig(text=TEXT, speakers=2),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.fixture
def wav(tmp_path: Path) -> bytes:
    """A short real recording."""
    return tone(tmp_path / "tone.wav", 1.0).read_bytes()


async def transcribed(
    runtime: Runtime,
    client: httpx.AsyncClient,
    wav: bytes,
    token: str = STATIC,
    speakers: str = "auto",
    **fields: str,
) -> str:
    """Send ``wav`` asking for ``speakers`` (and ``fields``), run its steps to the end; its id."""
    answer = await client.post(
        "/api/audio",
        files={"file": ("a.wav", wav, "audio/wav")},
        data={"speakers": speakers, **fields},
        headers=bearer(token),
    )
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    for _ in range(10):
        job = await runtime.services.jobs.get(job_id)
        if job.state.is_terminal:
            assert job.state is State.DONE, job.error
            return job_id
        lease = await acquire_next(runtime.services, job.state)
        assert lease is not None
        await process(runtime.services, lease)
    raise AssertionError("the job did not end")


async def transcript(client: httpx.AsyncClient, job_id: str, form: str = "json") -> Any:
    """The job's transcript in ``form``: parsed JSON, or text."""
    answer = await client.get(
        f"/api/jobs/{job_id}/transcript", params={"format": form}, headers=bearer(STATIC)
    )
    assert answer.status_code == 200, answer.text
    return answer.json() if form == "json" else answer.text


def no_floats_but_none(value: Any) -> bool:
    """True when ``value`` (a decoded JSON body) holds no list of numbers: no print anywhere."""
    if isinstance(value, dict):
        return all(no_floats_but_none(v) for v in value.values())
    if isinstance(value, list):
        return not any(isinstance(v, float) for v in value) and all(
            no_floats_but_none(v) for v in value
        )
    return True


async def test_a_remembered_voice_names_the_next_recording(
    runtime: Runtime, wav: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """Remember S2 as Diane: the next recording's S2 is Diane in JSON (with voice_id) and text."""
    caplog.set_level(logging.DEBUG)
    async with in_process_client(runtime) as client:
        first = await transcribed(runtime, client, wav)
        made = await client.post(
            "/api/voices",
            json={"job_id": first, "speaker": "S2", "name": "Diane"},
            headers=bearer(STATIC),
        )
        assert made.status_code == 201, made.text
        voice = made.json()
        assert set(voice) == {"id", "name", "created", "samples"}
        assert (voice["name"], voice["samples"]) == ("Diane", 1)
        # The recording it was made from names that speaker after the voice too.
        assert (await transcript(client, first))["speakers"][1]["name"] == "Diane"
        second = await transcribed(runtime, client, wav)
        document = await transcript(client, second)
        assert document["speakers"] == [
            {"id": "S1", "name": "Speaker 1"},
            {"id": "S2", "name": "Diane", "voice_id": voice["id"]},
        ]
        assert "Diane: Hi Anna." in await transcript(client, second, "txt")
        assert "<v Diane>" in await transcript(client, second, "vtt")
        status = await client.get(f"/api/status/{second}", headers=bearer(STATIC))
        assert status.json()["speakers"][1] == {
            "id": "S2",
            "name": "Diane",
            "voice_id": voice["id"],
        }
        added = await client.post(
            f"/api/voices/{voice['id']}/samples",
            json={"job_id": second, "speaker": "S2"},
            headers=bearer(STATIC),
        )
        assert (added.status_code, added.json()["samples"]) == (200, 2)
        listed = await client.get("/api/voices", headers=bearer(STATIC))
        assert [v["samples"] for v in listed.json()["voices"]] == [2]
        for body in (voice, added.json(), listed.json(), status.json(), document):
            assert no_floats_but_none(body)
    # Logged: ids and counts; never the name nor a print (ADR 73).
    assert any(record.msg == "voice.remembered" for record in caplog.records)
    for record in caplog.records:
        for value in vars(record).values():
            assert "Diane" not in str(value)
            is_print = isinstance(value, tuple | list) and value and not no_floats_but_none([value])
            assert not is_print, record.msg


async def test_rename_and_delete_a_voice(runtime: Runtime, wav: bytes, tmp_path: Path) -> None:
    """A rename shows in the list, not in recordings named before; a delete leaves no row."""
    async with in_process_client(runtime) as client:
        first = await transcribed(runtime, client, wav)
        made = await client.post(
            "/api/voices",
            json={"job_id": first, "speaker": "S1", "name": "Ann"},
            headers=bearer(STATIC),
        )
        voice_id = made.json()["id"]
        renamed = await client.patch(
            f"/api/voices/{voice_id}", json={"name": "Anna"}, headers=bearer(STATIC)
        )
        assert (renamed.status_code, renamed.json()["name"]) == (200, "Anna")
        assert (await transcript(client, first))["speakers"][0]["name"] == "Ann"
        bad = await client.patch(
            f"/api/voices/{voice_id}", json={"name": "a\u0000b"}, headers=bearer(STATIC)
        )
        assert (bad.status_code, bad.json()["error"]) == (400, "bad_name")
        gone = await client.delete(f"/api/voices/{voice_id}", headers=bearer(STATIC))
        assert gone.status_code == 204
        again = await client.delete(f"/api/voices/{voice_id}", headers=bearer(STATIC))
        assert (again.status_code, again.json()["error"]) == (404, "voice_not_found")
        # A recording now is matched against nothing: its speakers keep their numbers.
        later = await transcribed(runtime, client, wav)
        assert "voice_id" not in json.dumps(await transcript(client, later))
    with sqlite3.connect(tmp_path / "data" / "transcriber.db") as conn:
        assert conn.execute("SELECT count(*) FROM voices").fetchone() == (0,)


async def test_refusals_name_their_codes(runtime: Runtime, wav: bytes) -> None:
    """not_done, no_speakers, bad_speaker, job_not_found, bad_request: each as SPEC §25 says."""
    async with in_process_client(runtime) as client:
        plain = await transcribed(runtime, client, wav, speakers="off")
        labelled = await transcribed(runtime, client, wav)
        # Sent last and never stepped: it stays in convert.
        waiting = await client.post(
            "/api/audio", files={"file": ("a.wav", wav, "audio/wav")}, headers=bearer(STATIC)
        )
        cases = [
            ({"job_id": waiting.json()["job_id"], "speaker": "S1"}, 409, "not_done"),
            ({"job_id": plain, "speaker": "S1"}, 400, "no_speakers"),
            ({"job_id": labelled, "speaker": "S9"}, 400, "bad_speaker"),
            ({"job_id": labelled, "speaker": 1}, 400, "bad_speaker"),
            ({"job_id": "no-such-job-id-here", "speaker": "S1"}, 404, "job_not_found"),
            ({"speaker": "S1"}, 404, "job_not_found"),
        ]
        for body, status, code in cases:
            answer = await client.post(
                "/api/voices", json={**body, "name": "Diane"}, headers=bearer(STATIC)
            )
            assert (answer.status_code, answer.json()["error"]) == (status, code), body
        broken = await client.post("/api/voices", content=b"[1, 2]", headers=bearer(STATIC))
        assert (broken.status_code, broken.json()["error"]) == (400, "bad_request")
        unnamed = await client.post(
            "/api/voices", json={"job_id": labelled, "speaker": "S1"}, headers=bearer(STATIC)
        )
        assert (unnamed.status_code, unnamed.json()["error"]) == (400, "bad_name")
        nobody = await client.get("/api/voices")
        assert nobody.status_code == 401


async def test_voices_are_their_owners_alone(
    runtime: Runtime, owner: httpx.AsyncClient, wav: bytes
) -> None:
    """A person's voice is theirs on every token; another person and the static token see none."""
    alice = await person(runtime, owner, "alice")
    bob = await person(runtime, owner, "bob")
    alice_tokens = [await make_token(alice, "one"), await make_token(alice, "two")]
    bob_token = await make_token(bob)
    async with in_process_client(runtime) as client:
        alices = await transcribed(runtime, client, wav, token=alice_tokens[0])
        bobs = await transcribed(runtime, client, wav, token=bob_token)
        made = await client.post(
            "/api/voices",
            json={"job_id": alices, "speaker": "S1", "name": "Ann"},
            headers=bearer(alice_tokens[1]),
        )
        assert made.status_code == 201, made.text
        voice_id = made.json()["id"]
        # Bob cannot use Alice's recording, nor see, add to, rename or delete her voice.
        stolen = await client.post(
            "/api/voices",
            json={"job_id": alices, "speaker": "S1", "name": "Ann"},
            headers=bearer(bob_token),
        )
        assert (stolen.status_code, stolen.json()["error"]) == (404, "job_not_found")
        for token in (bob_token, STATIC):
            assert (await client.get("/api/voices", headers=bearer(token))).json() == {"voices": []}
        sample = await client.post(
            f"/api/voices/{voice_id}/samples",
            json={"job_id": bobs, "speaker": "S1"},
            headers=bearer(bob_token),
        )
        assert (sample.status_code, sample.json()["error"]) == (404, "voice_not_found")
        for answer in (
            await client.patch(
                f"/api/voices/{voice_id}", json={"name": "X"}, headers=bearer(bob_token)
            ),
            await client.delete(f"/api/voices/{voice_id}", headers=bearer(bob_token)),
        ):
            assert (answer.status_code, answer.json()["error"]) == (404, "voice_not_found")
        # Bob's next recording of the same (demo) voice is not named after Alice's voice.
        later = await transcribed(runtime, client, wav, token=bob_token)
        job = await runtime.services.jobs.get(later)
        assert [s.voice_id for s in job.speakers] == [None, None]
        mine = await transcribed(runtime, client, wav, token=alice_tokens[1])
        assert (await runtime.services.jobs.get(mine)).speakers[0].voice_id == voice_id
        listed = await client.get("/api/voices", headers=bearer(alice_tokens[0]))
        assert [v["id"] for v in listed.json()["voices"]] == [voice_id]


@pytest.fixture
async def open_runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime with no tokens: the API is open."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "open"),
        http=HttpConfig(host="127.0.0.1", port=8123),
        memory=MemoryConfig(speakers=2),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


async def test_an_open_api_keeps_no_anonymous_voices(open_runtime: Runtime) -> None:
    """Without a token a voice has no owner: 401 on every voices route, nothing kept."""
    async with in_process_client(open_runtime) as client:
        for answer in (
            await client.get("/api/voices"),
            await client.post("/api/voices", json={"job_id": "x", "speaker": "S1", "name": "A"}),
            await client.delete("/api/voices/abc"),
        ):
            assert (answer.status_code, answer.json()["error"]) == (401, "unauthorized")
