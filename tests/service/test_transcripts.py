"""``GET /api/jobs/{id}/transcript`` in each format, and its refusals, through the real server.

One service for the module, with an API token, an owner for the admin
panel, and a demo transcript of several sentences (a comma, markup
characters, Cyrillic, a word longer than a subtitle line) that the memory
recognizer times over a 20-second recording (ADR 34).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx
import pytest

from tests.support.admin import owner_client, service_with_owner
from tests.support.media import tone
from tests.support.service import Service
from tests.support.subtitles import parsed_srt, parsed_vtt

TOKEN = "transcripts-token-c2VjcmV0"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LONG_WORD = "Donaudampfschifffahrtselektrizitätenhauptbetriebswerk"
TEXT = (
    "Good morning, everyone. This is the demo transcript, read aloud over twenty seconds. "
    f"Markup like <b>bold</b> & ampersands stays text. {LONG_WORD} is one long word. "
    "Привет, мир: и это тоже работает. The last sentence ends the recording."
)
SENDER_NAME = "секретное-имя.mp3"
SECONDS = 20.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with one API token, an owner, and the demo text above."""
    config = {"memory": {"text": TEXT}, "http": {"api_tokens": [TOKEN]}}
    with service_with_owner(tmp_path_factory.mktemp("transcripts"), config=config) as started:
        yield started


@pytest.fixture
def client(service: Service) -> Iterator[httpx.Client]:
    """An httpx client on the service carrying the token."""
    with service.client(headers=AUTH) as http:
        yield http


@pytest.fixture(scope="module")
def done_job(service: Service, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The id of a job of a 20-second recording, uploaded under a sender's name, now done."""
    recording = tone(tmp_path_factory.mktemp("media") / "speech.mp3", SECONDS).read_bytes()
    with service.client(headers=AUTH) as http:
        answer = http.post("/api/audio", files={"file": (SENDER_NAME, recording, "audio/mpeg")})
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    assert service.wait_for_job(job_id, headers=AUTH, timeout=60.0)["state"] == "done"
    return job_id


@pytest.fixture(scope="module")
def failed_job(service: Service) -> str:
    """The id of a job whose upload was not audio, now failed."""
    with service.client(headers=AUTH) as http:
        answer = http.post("/api/audio", files={"file": ("x.mp3", b"not audio " * 200)})
    assert answer.status_code == 202, answer.text
    job_id: str = answer.json()["job_id"]
    assert service.wait_for_job(job_id, headers=AUTH)["state"] == "failed"
    return job_id


def fetch(client: httpx.Client, job_id: str, wanted: str | None) -> httpx.Response:
    """The transcript of ``job_id`` in ``wanted`` (no ``format`` when None)."""
    params = {} if wanted is None else {"format": wanted}
    return client.get(f"/api/jobs/{job_id}/transcript", params=params)


def assert_attachment(response: httpx.Response, job_id: str, extension: str) -> None:
    """A 200 attachment named by its dated default title, nothing of the sender's file name."""
    assert response.status_code == 200, response.text
    disposition = response.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="Recording of '), disposition
    assert disposition.endswith(f".{extension}")
    assert "имя" not in disposition


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    """The answer is the API's JSON error ``code`` with ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"] == code
    assert response.json()["message"]


def words_of(lines: list[list[str]]) -> str:
    """The text the cues show, on one line."""
    return " ".join(line for cue in lines for line in cue)


@pytest.mark.parametrize("wanted", ["txt", None])
def test_txt_is_the_transcript_as_plain_text(
    client: httpx.Client, done_job: str, wanted: str | None
) -> None:
    """``format=txt``, the default: the text and a newline, as UTF-8 plain text."""
    response = fetch(client, done_job, wanted)
    assert_attachment(response, done_job, "txt")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.content == f"{TEXT}\n".encode()


def test_srt_parses_and_its_cues_keep_the_rules(client: httpx.Client, done_job: str) -> None:
    """``format=srt``: SubRip that ``srt`` parses strictly, every cue within 2 x 42 and 7 s."""
    response = fetch(client, done_job, "srt")
    assert_attachment(response, done_job, "srt")
    assert response.headers["content-type"] == "application/x-subrip; charset=utf-8"
    found = parsed_srt(response.text)
    assert len(found) > 3
    shown = words_of([lines for _, _, lines in found])
    assert shown.replace(LONG_WORD[:42] + " ", LONG_WORD[:42]) == TEXT
    assert found[-1][1] <= SECONDS + 0.001


def test_vtt_parses_and_its_cues_keep_the_rules(client: httpx.Client, done_job: str) -> None:
    """``format=vtt``: WebVTT that ``webvtt-py`` reads, markup escaped, the same cues as SRT."""
    response = fetch(client, done_job, "vtt")
    assert_attachment(response, done_job, "vtt")
    assert response.headers["content-type"] == "text/vtt; charset=utf-8"
    assert response.text.startswith("WEBVTT\n\n")
    assert "Markup like &lt;b&gt;bold&lt;/b&gt;" in response.text
    assert "&amp; ampersands" in response.text
    found = parsed_vtt(response.text)
    assert found == parsed_srt(fetch(client, done_job, "srt").text)


def test_json_has_the_text_duration_words_and_segments(client: httpx.Client, done_job: str) -> None:
    """``format=json``: job id, text, duration, every word timed inside it, the cues as segments."""
    response = fetch(client, done_job, "json")
    assert_attachment(response, done_job, "json")
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"job_id", "text", "duration", "words", "segments"}
    assert (body["job_id"], body["text"]) == (done_job, TEXT)
    assert body["duration"] == pytest.approx(SECONDS, abs=0.1)
    assert [word["word"] for word in body["words"]] == TEXT.split()
    for word in body["words"]:
        assert set(word) == {"word", "start", "end"}
        assert 0 <= word["start"] <= word["end"] <= body["duration"] + 0.001
    cues = parsed_srt(fetch(client, done_job, "srt").text)
    assert [(s["start"], s["end"], s["text"]) for s in body["segments"]] == [
        (pytest.approx(start, abs=0.001), pytest.approx(end, abs=0.001), " ".join(lines))
        for start, end, lines in cues
    ]


@pytest.mark.parametrize("wanted", ["docx", "", "SRT", "srt "])
def test_an_unknown_format_is_400_naming_the_allowed_ones(
    client: httpx.Client, done_job: str, wanted: str
) -> None:
    """Any other ``format`` is 400 ``bad_format``, and the message lists txt, srt, vtt, json."""
    response = fetch(client, done_job, wanted)
    assert_error(response, 400, "bad_format")
    assert all(name in response.json()["message"] for name in ("txt", "srt", "vtt", "json"))


def test_an_unknown_job_is_404(client: httpx.Client) -> None:
    """A transcript of an id nobody was given is 404 ``job_not_found``, as for its status."""
    assert_error(fetch(client, "no-such-job", "srt"), 404, "job_not_found")


def test_a_failed_job_is_409_failed_with_its_reason(client: httpx.Client, failed_job: str) -> None:
    """A job that ended failed has no transcript: 409 ``failed`` with the status's reason."""
    reason = client.get(f"/api/status/{failed_job}").json()["error"]
    assert reason
    for wanted in ("txt", "srt", "vtt", "json"):
        response = fetch(client, failed_job, wanted)
        assert_error(response, 409, "failed")
        assert response.json()["message"].endswith(f"has no transcript: {reason}")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}], ids=["none", "wrong"])
def test_the_transcript_needs_the_token_like_the_status(
    service: Service, done_job: str, headers: dict[str, str]
) -> None:
    """Without a configured token the route is 401 before it looks at the format or the job."""
    with service.client(headers=headers) as anonymous:
        for wanted in ("srt", "docx"):
            response = fetch(anonymous, done_job, wanted)
            assert_error(response, 401, "unauthorized")
            assert response.headers["www-authenticate"] == "Bearer"


async def test_the_admin_job_page_links_each_format_once_the_job_is_done(
    service: Service, client: httpx.Client, done_job: str
) -> None:
    """The owner's job page offers txt, srt, vtt and json; each link answers what the API does."""
    async with owner_client(service) as owner:
        page = await owner.get(f"/admin/jobs/{done_job}")
        links = re.findall(r'href="(/admin/jobs/[^"]+/transcript\?format=\w+)"', page.text)
        assert [link.rsplit("=", 1)[1] for link in links] == ["txt", "srt", "vtt", "json"]
        for link in links:
            download = await owner.get(link)
            wanted = link.rsplit("=", 1)[1]
            from_api = fetch(client, done_job, wanted)
            assert download.status_code == 200, download.text
            assert download.content == from_api.content
            assert download.headers["content-type"] == from_api.headers["content-type"]
            disposition = download.headers["content-disposition"]
            assert disposition == from_api.headers["content-disposition"]
        refused = await owner.get(f"/admin/jobs/{done_job}/transcript", params={"format": "doc"})
        assert refused.status_code == 400


async def test_the_admin_page_of_an_unfinished_job_has_no_transcript_links(
    service: Service, failed_job: str
) -> None:
    """A failed job's page links no transcript and says why; its transcript route answers 409."""
    async with owner_client(service) as owner:
        reason = (await owner.get(f"/api/status/{failed_job}", headers=AUTH)).json()["error"]
        page = await owner.get(f"/admin/jobs/{failed_job}")
        assert page.status_code == 200
        assert "/transcript?format=" not in page.text
        assert "No transcript yet" not in page.text
        said = re.search(r'<p class="empty" id="no-transcript">([^<]*)</p>', page.text)
        assert said is not None
        assert html.unescape(said[1]) == f"The job failed and has no transcript: {reason}."
        direct = await owner.get(f"/admin/jobs/{failed_job}/transcript", params={"format": "srt"})
        assert direct.status_code == 409
        assert direct.text.strip() == f"The job failed and has no transcript: {reason}."


async def test_anonymous_admin_transcript_downloads_are_refused(
    service: Service, done_job: str
) -> None:
    """Without the owner's session the panel's transcript route is 403 and shows nothing."""
    async with httpx.AsyncClient(base_url=service.base_url) as anonymous:
        response = await anonymous.get(
            f"/admin/jobs/{done_job}/transcript", params={"format": "txt"}
        )
    assert response.status_code == 403
    assert "demo transcript" not in response.text
