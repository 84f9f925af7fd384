"""Speakers through the real server: the ``speakers`` field, the offline diarizer, renames.

One service for the module (memory recognizer, real ffmpeg, the offline
diarizer of the ``diarization`` extra) and one espeak-ng dialogue of two
voices; the demo recognizer times its words across the recording, and the
diarizer tells who speaks when in the real audio (SPEC §18).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.admin import owner_client, post_form, service_with_owner
from tests.support.dialogue import conversation
from tests.support.service import Service

TOKEN = "speakers-token-c2VjcmV0"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with one API token; speakers are off unless a recording asks."""
    config = {"memory": {"text": "One two three four. Five six seven eight."}}
    config["http"] = {"api_tokens": [TOKEN]}  # type: ignore[dict-item]
    with service_with_owner(tmp_path_factory.mktemp("speakers"), config=config) as started:
        yield started


@pytest.fixture
def client(service: Service) -> Iterator[httpx.Client]:
    """An httpx client on the service carrying the token."""
    with service.client(headers=AUTH) as http:
        yield http


@pytest.fixture(scope="module")
def dialogue_job(service: Service, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A two-voice dialogue sent with speakers=2, now done."""
    made = conversation(tmp_path_factory.mktemp("dialogue") / "talk.ogg", voices=2, turns=2)
    with service.client(headers=AUTH) as http:
        answer = http.post(
            "/api/audio",
            files={"file": ("talk.ogg", made.audio.read_bytes(), "audio/ogg")},
            data={"speakers": "2"},
        )
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    assert service.wait_for_job(job_id, headers=AUTH, timeout=90.0)["state"] == "done"
    return job_id


def test_dialogue_gets_two_speakers(client: httpx.Client, dialogue_job: str) -> None:
    """The transcript names two speakers; the first words are S1's and the last S2's."""
    document = client.get(f"/api/jobs/{dialogue_job}/transcript", params={"format": "json"})
    assert document.status_code == 200
    body = document.json()
    assert body["speakers"] == [
        {"id": "S1", "name": "Speaker 1"},
        {"id": "S2", "name": "Speaker 2"},
    ]
    assert body["words"][0]["speaker"] == "S1"
    assert body["words"][-1]["speaker"] == "S2"
    assert {segment["speaker"] for segment in body["segments"]} == {"S1", "S2"}


def test_status_shows_speakers_and_renames(client: httpx.Client, dialogue_job: str) -> None:
    """``/api/status`` lists the job's speakers with their names, a rename included."""
    before = client.get(f"/api/status/{dialogue_job}").json()["speakers"]
    assert [speaker["id"] for speaker in before] == ["S1", "S2"]
    client.patch(f"/api/jobs/{dialogue_job}/speakers", json={"S2": "Petra"})
    try:
        after = client.get(f"/api/status/{dialogue_job}").json()["speakers"]
        assert after[1] == {"id": "S2", "name": "Petra"}
    finally:  # the module's other tests read S2's own name
        client.patch(f"/api/jobs/{dialogue_job}/speakers", json={"S2": before[1]["name"]})


@pytest.mark.parametrize("value", ["0", "11", "many", "2.0"])
def test_bad_speakers_refused(client: httpx.Client, value: str) -> None:
    """A ``speakers`` value other than auto, off or 1 to 10 is 400 bad_speakers, no job made."""
    answer = client.post(
        "/api/audio", files={"file": ("a.ogg", b"x" * 100)}, data={"speakers": value}
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "bad_speakers"
    assert "1 to 10" in answer.json()["message"]


def test_rename_shows_in_every_format(client: httpx.Client, dialogue_job: str) -> None:
    """After a rename every format shows the new name; the other speaker keeps its own."""
    answer = client.patch(f"/api/jobs/{dialogue_job}/speakers", json={"S1": "Diane"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["speakers"][0] == {"id": "S1", "name": "Diane"}
    url = f"/api/jobs/{dialogue_job}/transcript"
    assert client.get(url, params={"format": "txt"}).text.startswith("Diane: ")
    assert "Speaker 2: " in client.get(url, params={"format": "txt"}).text
    assert "Diane: " in client.get(url, params={"format": "srt"}).text
    assert "<v Diane>" in client.get(url, params={"format": "vtt"}).text
    assert client.get(url, params={"format": "json"}).json()["speakers"][0]["name"] == "Diane"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('{"S9": "Bob"}', "no speaker"),
        ('{"S1": "' + "x" * 65 + '"}', "64 characters"),
        ('{"S1": "a\\u0007b"}', "control characters"),
        ('["S1"]', "JSON object"),
        ("not json", "must be JSON"),
        ("{}", "at least one"),
    ],
)
def test_rename_refused(client: httpx.Client, dialogue_job: str, body: str, problem: str) -> None:
    """A bad rename is 400 bad_speakers naming the problem, and changes no name."""
    before = client.get(f"/api/jobs/{dialogue_job}/transcript", params={"format": "json"}).json()
    answer = client.patch(
        f"/api/jobs/{dialogue_job}/speakers",
        content=body,
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "bad_speakers"
    assert problem in answer.json()["message"]
    after = client.get(f"/api/jobs/{dialogue_job}/transcript", params={"format": "json"}).json()
    assert after["speakers"] == before["speakers"]


def test_rename_unknown_job(client: httpx.Client) -> None:
    """Renaming the speakers of a job nobody has is 404 job_not_found."""
    answer = client.patch("/api/jobs/no-such-job/speakers", json={"S1": "Diane"})
    assert answer.status_code == 404
    assert answer.json()["error"] == "job_not_found"


async def test_admin_page_shows_and_renames_speakers(service: Service, dialogue_job: str) -> None:
    """The owner sees the speakers on the job page and renames one; the API sees the name."""
    page_path = f"/admin/jobs/{dialogue_job}"
    async with owner_client(service) as owner:
        page = await owner.get(page_path)
        assert 'id="job-speakers"' in page.text
        assert 'name="S2"' in page.text
        answer = await post_form(owner, page_path, f"{page_path}/speakers", S2="Marc <the host>")
        assert answer.status_code == 303
        after = await owner.get(page_path)
        assert "Speakers renamed." in after.text
        assert 'value="Marc &lt;the host&gt;"' in after.text
        refused = await post_form(owner, page_path, f"{page_path}/speakers", S2="x" * 65)
        assert refused.status_code == 303
        assert "at most 64 characters" in (await owner.get(page_path)).text
        url = f"/api/jobs/{dialogue_job}/transcript"
        names = await owner.get(url, params={"format": "json"}, headers=AUTH)
    assert names.json()["speakers"][1] == {"id": "S2", "name": "Marc <the host>"}
