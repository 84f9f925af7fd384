"""The workspace's voices in-process (SPEC §25): Remember this voice, the Voices page, whose."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.app.test_voices_api import TEXT, transcribed
from tests.app.test_workspace import csrf, make_token, owner, person
from tests.support.admin import in_process_client
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, MemoryConfig, StorageConfig

__all__ = ["owner"]  # the workspace's owner fixture, used to invite people here


@pytest.fixture
async def runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose demo labels two voices; steps run by the test."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
        memory=MemoryConfig(text=TEXT, speakers=2),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.fixture
def wav(tmp_path: Path) -> bytes:
    """A short real recording."""
    return tone(tmp_path / "tone.wav", 1.0).read_bytes()


def _speaker_names(page: str) -> list[str]:
    """The speakers' names in the rename forms of a recording page."""
    return re.findall(r'id="speaker-S\d+" name="S\d+" value="([^"]*)"', page)


async def test_remember_a_voice_and_see_it_named_in_the_next_recording(
    runtime: Runtime, owner: httpx.AsyncClient, wav: bytes, tmp_path: Path
) -> None:
    """Remember S2 on one page: the next recording's page names it; the Voices page renames it."""
    alice = await person(runtime, owner, "alice")
    token = await make_token(alice)
    async with in_process_client(runtime) as api:
        first = await transcribed(runtime, api, wav, token=token)
        page = await alice.get(f"/w/recordings/{first}")
        assert page.text.count("Remember this voice") == 2
        answer = await alice.post(
            f"/w/recordings/{first}/voices",
            data={"csrf": csrf(page.text), "speaker": "S2", "name": "Diane"},
        )
        assert answer.status_code == 303, answer.text
        shown = await alice.get(f"/w/recordings/{first}")
        assert _speaker_names(shown.text) == ["Speaker 1", "Diane"]
        assert "Voice remembered as Diane" in shown.text
        assert shown.text.count("Remember this voice") == 1
        second = await transcribed(runtime, api, wav, token=token)
    later = await alice.get(f"/w/recordings/{second}")
    assert _speaker_names(later.text) == ["Speaker 1", "Diane"]
    assert "remembered voice" in later.text
    listing = await alice.get("/w/voices")
    assert "Diane" in listing.text
    voice_id = re.search(r'/w/voices/([^/"]+)/rename', listing.text)
    assert voice_id is not None
    # "or add it to" one of one's voices: a sample, and that speaker named after it.
    added = await alice.post(
        f"/w/recordings/{second}/voices",
        data={"csrf": csrf(later.text), "speaker": "S1", "voice": voice_id[1]},
    )
    assert added.status_code == 303
    assert _speaker_names((await alice.get(f"/w/recordings/{second}")).text) == [
        "Diane",
        "Diane",
    ]
    assert 'data-label="Samples">2</td>' in (await alice.get("/w/voices")).text
    renamed = await alice.post(
        f"/w/voices/{voice_id[1]}/rename", data={"csrf": csrf(listing.text), "name": "Dee"}
    )
    assert renamed.status_code == 303
    assert 'value="Dee"' in (await alice.get("/w/voices")).text
    # Recordings named before keep the name they were given.
    assert "Diane" in (await alice.get(f"/w/recordings/{second}")).text
    deleted = await alice.post(f"/w/voices/{voice_id[1]}/delete", data={"csrf": csrf(listing.text)})
    assert deleted.status_code == 303
    assert "No voices yet." in (await alice.get("/w/voices")).text
    with sqlite3.connect(tmp_path / "data" / "transcriber.db") as conn:
        assert conn.execute("SELECT count(*) FROM voices").fetchone() == (0,)


async def test_another_person_reaches_none_of_it(
    runtime: Runtime, owner: httpx.AsyncClient, wav: bytes
) -> None:
    """Bob cannot remember Alice's speaker, nor rename or delete her voice; her list is hers."""
    alice = await person(runtime, owner, "alice")
    bob = await person(runtime, owner, "bob")
    token = await make_token(alice)
    async with in_process_client(runtime) as api:
        first = await transcribed(runtime, api, wav, token=token)
    page = await alice.get(f"/w/recordings/{first}")
    await alice.post(
        f"/w/recordings/{first}/voices",
        data={"csrf": csrf(page.text), "speaker": "S1", "name": "Ann"},
    )
    listing = await alice.get("/w/voices")
    voice_id = re.search(r'/w/voices/([^/"]+)/rename', listing.text)
    assert voice_id is not None
    bobs = await bob.get("/w/voices")
    assert "No voices yet." in bobs.text
    token_of_bob = csrf(bobs.text)
    stolen = await bob.post(
        f"/w/recordings/{first}/voices",
        data={"csrf": token_of_bob, "speaker": "S1", "name": "Ann"},
    )
    assert stolen.status_code == 404
    for action, data in (("rename", {"name": "X"}), ("delete", {})):
        answer = await bob.post(
            f"/w/voices/{voice_id[1]}/{action}", data={"csrf": token_of_bob, **data}
        )
        assert answer.status_code == 404
    assert "Ann" in (await alice.get("/w/voices")).text
