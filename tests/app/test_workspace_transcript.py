"""The transcript page in-process: the words' markup, the audio with HTTP Range, renames.

The audio is served from local disk and from S3 (moto on 127.0.0.1), the
two file stores a deployment can have (``[storage] files``); each Range
case runs on both. Another person, or nobody's id, gets 404 for all of it.
"""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import attrs
import httpx
import pytest

from tests.app.test_workspace import csrf, invite, set_password
from tests.support.admin import in_process_client, log_in, make_owner
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, S3Config, StorageConfig
from transcriber_app.web.workspace.transcript import byte_range, version
from transcriber_core.entities import Job, Origin, Speaker, State, Word

#: The persons' password.
SECRET = "a long enough password"
#: The audio's size: several of the stores' mebibyte chunks, so a range crosses them.
SIZE = 2_500_000


def payload(size: int = SIZE) -> bytes:
    """Bytes whose every offset can be checked."""
    block = bytes(range(251))
    return (block * (size // len(block) + 1))[:size]


@pytest.fixture(params=["local", "s3"])
async def runtime(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock, moto_s3: MotoS3
) -> AsyncIterator[Runtime]:
    """A runtime whose file store is a local folder or an S3 bucket on moto."""
    storage = StorageConfig(data_dir=tmp_path / "data", files=request.param)
    s3 = S3Config(
        endpoint_url=moto_s3.endpoint_url,
        region=REGION,
        bucket=moto_s3.new_bucket(),
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
        path_style=True,
    )
    config = Config(storage=storage, s3=s3, http=HttpConfig(host="127.0.0.1", port=8123))
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.fixture
async def owner(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """The owner's client, logged in to the admin panel."""
    await make_owner(runtime)
    async with in_process_client(runtime) as client:
        answer = await log_in(client)
        assert answer.status_code == 303, answer.text
        yield client


async def signed_in(runtime: Runtime, owner: httpx.AsyncClient, name: str) -> httpx.AsyncClient:
    """A new person's client, signed in."""
    client = in_process_client(runtime)
    answer = await set_password(client, await invite(owner, name), SECRET)
    assert answer.status_code == 303, answer.text
    return client


async def owner_key(runtime: Runtime, name: str) -> str:
    """The owner key of the person called ``name``."""
    person = await runtime.people.find_person(name)
    assert person is not None
    return person.owner_key


async def done_job(
    runtime: Runtime,
    tmp_path: Path,
    owner: str,
    *,
    audio: bytes = b"",
    words: tuple[Word, ...] = (),
    speakers: tuple[Speaker, ...] = (),
    text: str = "",
    extension: str = ".ogg",
    converted: bool = True,
) -> Job:
    """A done job of ``owner`` whose converted audio (or only source) holds ``audio``."""
    services = runtime.services
    source = tmp_path / f"audio{extension}"
    source.write_bytes(audio or payload())
    record = await services.files.put(
        services.ids.new_id(), extension, source, now=services.clock.now()
    )
    now = services.clock.now()
    job = Job(
        id=services.ids.new_id(),
        state=State.DONE,
        origin=Origin.http(),
        converted_file_id=record.id if converted else None,
        source_file_id=None if converted else record.id,
        duration=60.0,
        text=text or " ".join(w.text for w in words),
        words=words,
        speakers=speakers,
        owner=owner,
        created=now,
        updated=now,
    )
    stored, _ = await services.jobs.create(job, files=[record])
    return stored


DIALOGUE = (
    Word(text="Hello", start=0.0, end=0.42, speaker="S1"),
    Word(text="<there>", start=0.5, end=0.9, speaker="S1"),
    Word(text="Hi.", start=1.2, end=1.5, speaker="S2"),
    Word(text="Fine", start=2.0, end=2.3, speaker="S1"),
)
SPEAKERS = (Speaker(id="S1", name="Speaker 1"), Speaker(id="S2", name="Speaker 2"))


@pytest.fixture
async def alice(runtime: Runtime, owner: httpx.AsyncClient) -> AsyncIterator[httpx.AsyncClient]:
    """The person alice, signed in."""
    client = await signed_in(runtime, owner, "alice")
    yield client
    await client.aclose()


async def test_byte_range_reads_each_form_of_one_range() -> None:
    """First bytes, a middle, an open end and a suffix; anything else is None (416)."""
    assert byte_range("bytes=0-99", 1000) == (0, 100)
    assert byte_range("bytes=400-499", 1000) == (400, 500)
    assert byte_range("bytes=100-", 1000) == (100, 1000)
    assert byte_range("bytes=-500", 1000) == (500, 1000)
    assert byte_range("bytes=-5000", 1000) == (0, 1000)
    assert byte_range("bytes=900-5000", 1000) == (900, 1000)
    for refused in (
        "bytes=1000-",
        "bytes=5-4",
        "bytes=-0",
        "bytes=-",
        "bytes=0-1,5-6",
        "items=0-1",
        "bytes=a-b",
        "bytes=" + "9" * 30 + "-",
    ):
        assert byte_range(refused, 1000) is None, refused
    assert byte_range("bytes=-1", 0) is None


async def test_media_answers_each_range_from_the_store(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """206 with Content-Range, Accept-Ranges and Content-Length for each range; 200 without."""
    data = payload()
    job = await done_job(runtime, tmp_path, await owner_key(runtime, "alice"), audio=data)
    url = f"/w/recordings/{job.id}/media"
    middle = (1_048_000, 2_100_000)
    cases = {
        "bytes=0-99": (0, 100),
        f"bytes={middle[0]}-{middle[1] - 1}": middle,
        "bytes=-500": (SIZE - 500, SIZE),
        "bytes=100-": (100, SIZE),
    }
    for header, (start, stop) in cases.items():
        answer = await alice.get(url, headers={"Range": header})
        assert answer.status_code == 206, header
        assert answer.headers["content-range"] == f"bytes {start}-{stop - 1}/{SIZE}"
        assert answer.headers["accept-ranges"] == "bytes"
        assert answer.headers["content-length"] == str(stop - start)
        assert answer.headers["content-type"] == "audio/ogg"
        assert answer.content == data[start:stop], header
    head = await alice.head(url, headers={"Range": "bytes=0-99"})
    assert head.status_code == 206
    assert head.headers["content-length"] == "100"
    assert head.content == b""
    whole = await alice.get(url)
    assert whole.status_code == 200
    assert whole.headers["content-length"] == str(SIZE)
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.content == data


async def test_media_refuses_a_range_it_cannot_serve(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """An unsatisfiable or invalid Range is 416 with ``Content-Range: bytes */SIZE``."""
    job = await done_job(runtime, tmp_path, await owner_key(runtime, "alice"))
    url = f"/w/recordings/{job.id}/media"
    for header in (f"bytes={SIZE}-", f"bytes={SIZE + 10}-{SIZE + 20}", "bytes=9-3", "nonsense"):
        answer = await alice.get(url, headers={"Range": header})
        assert answer.status_code == 416, header
        assert answer.headers["content-range"] == f"bytes */{SIZE}"


async def test_media_and_page_are_the_persons_alone(
    runtime: Runtime, owner: httpx.AsyncClient, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Another person gets 404 for the page, the audio and a rename; unknown ids too."""
    job = await done_job(
        runtime, tmp_path, await owner_key(runtime, "alice"), words=DIALOGUE, speakers=SPEAKERS
    )
    bob = await signed_in(runtime, owner, "bob")
    try:
        for path in (f"/w/recordings/{job.id}", f"/w/recordings/{job.id}/media"):
            assert (await alice.get(path)).status_code in (200, 206)
            assert (await bob.get(path)).status_code == 404
            assert (await bob.get(path, headers={"Range": "bytes=0-9"})).status_code == 404
        for unknown in ("A" * 22, "not an id!"):
            assert (await alice.get(f"/w/recordings/{unknown}/media")).status_code == 404
        page = await bob.get("/w/")
        renamed = await bob.post(
            f"/w/recordings/{job.id}/speakers",
            data={"csrf": csrf(page.text), "seen": version(job), "S1": "Mallory"},
        )
        assert renamed.status_code == 404
        assert (await runtime.services.jobs.get(job.id)).speakers == SPEAKERS
    finally:
        await bob.aclose()
    anonymous = in_process_client(runtime)
    async with anonymous:
        answer = await anonymous.get(f"/w/recordings/{job.id}/media")
        assert answer.status_code == 303
        assert "/w/login" in answer.headers["location"]


async def test_media_whose_bytes_are_gone_is_404(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Audio removed from the store answers 404 saying so, not a broken 200."""
    job = await done_job(runtime, tmp_path, await owner_key(runtime, "alice"))
    assert job.converted_file_id is not None
    record = await runtime.services.file_records.get_file(job.converted_file_id)
    await runtime.services.files.delete(record)
    answer = await alice.get(f"/w/recordings/{job.id}/media", headers={"Range": "bytes=0-9"})
    assert answer.status_code == 404
    assert "no longer stored" in answer.text


async def test_the_source_plays_when_there_is_no_converted_audio(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Without converted audio the source plays if browsers play its kind; else no player, 404."""
    key = await owner_key(runtime, "alice")
    played = await done_job(
        runtime, tmp_path, key, audio=b"ID3" + bytes(997), extension=".mp3", converted=False
    )
    page = await alice.get(f"/w/recordings/{played.id}")
    assert 'id="player"' in page.text
    answer = await alice.get(f"/w/recordings/{played.id}/media", headers={"Range": "bytes=0-2"})
    assert answer.status_code == 206
    assert answer.content == b"ID3"
    assert answer.headers["content-type"] == "audio/mpeg"

    unplayable = await done_job(runtime, tmp_path, key, extension=".mkv", converted=False)
    page = await alice.get(f"/w/recordings/{unplayable.id}")
    assert 'id="player"' not in page.text
    assert 'id="no-audio"' in page.text
    assert "player.js" not in page.text
    assert (await alice.get(f"/w/recordings/{unplayable.id}/media")).status_code == 404


_WORD = re.compile(
    r'<span class="w" data-i="(\d+)" data-start="([\d.]+)" data-end="([\d.]+)">([^<]*)</span>'
)


async def test_page_marks_up_each_word_in_turns_by_speaker(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Words are span.w with index and timings, in turns naming the speaker; text is escaped."""
    job = await done_job(
        runtime, tmp_path, await owner_key(runtime, "alice"), words=DIALOGUE, speakers=SPEAKERS
    )
    page = await alice.get(f"/w/recordings/{job.id}")
    assert page.status_code == 200
    body = page.text
    assert f'<article id="transcript" class="transcript words" data-job="{job.id}"' in body
    found = _WORD.findall(body)
    assert [(int(i), float(s), float(e), html.unescape(t)) for i, s, e, t in found] == [
        (i, w.start, w.end, w.text) for i, w in enumerate(DIALOGUE)
    ]
    assert "&lt;there&gt;" in body
    assert "<there>" not in body
    turns = re.findall(r'<p class="turn" data-speaker="(S\d)"><span class="speaker">([^<]+)<', body)
    assert turns == [("S1", "Speaker 1"), ("S2", "Speaker 2"), ("S1", "Speaker 1")]
    player = f'<audio id="player" controls preload="metadata" src="/w/recordings/{job.id}/media">'
    assert player in body
    assert '<script src="/w/static/player.js" defer></script>' in body
    assert "<script>" not in body
    script = await alice.get("/w/static/player.js")
    assert script.status_code == 200
    assert "aria-current" in script.text


async def test_a_job_with_only_text_shows_the_text(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Without word timings the page shows the transcript's text, with no word spans."""
    job = await done_job(runtime, tmp_path, await owner_key(runtime, "alice"), text="Only <text>.")
    body = (await alice.get(f"/w/recordings/{job.id}")).text
    assert '<p class="plain">Only &lt;text&gt;.</p>' in body
    assert 'class="w"' not in body


async def test_rename_is_saved_escaped_and_refused_when_stale(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A rename is saved and shown escaped; a form from before another change is 409, unsaved."""
    job = await done_job(
        runtime, tmp_path, await owner_key(runtime, "alice"), words=DIALOGUE, speakers=SPEAKERS
    )
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    token = csrf(page.text)
    seen = re.search(r'name="seen" value="([^"]+)"', page.text)
    assert seen is not None
    renamed = await alice.post(
        f"{url}/speakers", data={"csrf": token, "seen": seen[1], "S2": "<b>Petra</b>"}
    )
    assert renamed.status_code == 303
    stored = await runtime.services.jobs.get(job.id)
    assert stored.speakers[1] == Speaker(id="S2", name="<b>Petra</b>")
    shown = (await alice.get(url)).text
    assert '<span class="speaker">&lt;b&gt;Petra&lt;/b&gt;</span>' in shown
    assert "<b>Petra</b>" not in shown
    assert "Speaker renamed." in shown

    # The first page's stamp is stale now: its form changes nothing.
    stale = await alice.post(f"{url}/speakers", data={"csrf": token, "seen": seen[1], "S1": "Old"})
    assert stale.status_code == 409
    assert "changed since you opened the page" in stale.text
    assert (await runtime.services.jobs.get(job.id)).speakers == stored.speakers

    fresh = re.search(r'name="seen" value="([^"]+)"', stale.text)
    assert fresh is not None
    bad = await alice.post(f"{url}/speakers", data={"csrf": token, "seen": fresh[1], "S1": " "})
    assert bad.status_code == 400
    assert "must not be empty" in bad.text
    forged = await alice.post(f"{url}/speakers", data={"seen": fresh[1], "S1": "Forged"})
    assert forged.status_code == 403
    assert (await runtime.services.jobs.get(job.id)).speakers == stored.speakers


async def test_rename_racing_another_write_is_409(
    runtime: Runtime, alice: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write between the page's read and its save loses the compare-and-set: 409, unsaved."""
    job = await done_job(
        runtime, tmp_path, await owner_key(runtime, "alice"), words=DIALOGUE, speakers=SPEAKERS
    )
    url = f"/w/recordings/{job.id}"
    page = await alice.get(url)
    seen = re.search(r'name="seen" value="([^"]+)"', page.text)
    assert seen is not None
    jobs = runtime.services.jobs
    real_save = jobs.save_if_unchanged

    async def save_after_another(new: Job, *, seen: Job) -> None:
        other = attrs.evolve(
            seen,
            speakers=(SPEAKERS[0], Speaker(id="S2", name="Other")),
            updated=seen.updated + timedelta(seconds=1),
        )
        monkeypatch.setattr(jobs, "save_if_unchanged", real_save)
        await real_save(other, seen=seen)
        await real_save(new, seen=seen)

    monkeypatch.setattr(jobs, "save_if_unchanged", save_after_another)
    answer = await alice.post(
        f"{url}/speakers", data={"csrf": csrf(page.text), "seen": seen[1], "S1": "Diane"}
    )
    assert answer.status_code == 409
    assert [s.name for s in (await jobs.get(job.id)).speakers] == ["Speaker 1", "Other"]
