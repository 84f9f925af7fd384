"""A recording's title (SPEC §26, ADR 79): what is kept, what is refused, what is shown."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from transcriber_app.web.transcripts import content_disposition
from transcriber_contracts.repository_support import make_job
from transcriber_core.errors import OptionRefused
from transcriber_core.rendering import TranscriptFormat
from transcriber_core.titles import MAX_TITLE_CHARS, clean_title, default_title, shown_title

SENT = datetime(2026, 12, 5, 9, 44, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("  Standup  ", "Standup"),
        ("Встреча «Диана» 😀", "Встреча «Диана» 😀"),
        ("x" * MAX_TITLE_CHARS, "x" * MAX_TITLE_CHARS),
        (" " + "x" * (MAX_TITLE_CHARS - 2) + " ", "x" * (MAX_TITLE_CHARS - 2)),
    ],
)
def test_a_title_is_trimmed_and_an_empty_one_is_none(raw: str | None, kept: str | None) -> None:
    """Spaces around go; nothing left is no title."""
    assert clean_title(raw) == kept


@pytest.mark.parametrize(
    "raw",
    [
        "x" * (MAX_TITLE_CHARS + 1),
        " " + "x" * MAX_TITLE_CHARS,
        "two\nlines",
        "tab\there",
        "nul\x00",
        "rtl\u202eevil",
    ],
)
def test_a_long_title_or_one_with_control_characters_is_refused(raw: str) -> None:
    """Past 200 characters as sent, a control or format character: ``bad_title``, unrepeated."""
    with pytest.raises(OptionRefused) as refused:
        clean_title(raw)
    assert (refused.value.code, refused.value.field) == ("bad_title", "title")
    assert raw not in refused.value.message


def test_without_a_title_the_recording_is_named_by_its_date() -> None:
    """The dated default reads as SPEC §26 shows it; a title is shown as it is."""
    assert default_title(SENT) == "Recording of 5 Dec 2026, 09:44"
    assert shown_title(None, SENT) == "Recording of 5 Dec 2026, 09:44"
    assert shown_title("Standup", SENT) == "Standup"


def test_a_download_is_named_by_its_title_in_rfc_6266_form() -> None:
    """UTF-8 ``filename*`` with the title; an ASCII ``filename``: the title, or the job's id."""
    russian = make_job(title="Встреча: план/итоги", created=SENT)
    header = content_disposition(russian, TranscriptFormat.SRT)
    assert header == (
        f"attachment; filename=\"{russian.id}.srt\"; filename*=UTF-8''"
        "%D0%92%D1%81%D1%82%D1%80%D0%B5%D1%87%D0%B0_%20%D0%BF%D0%BB%D0%B0%D0%BD_"
        "%D0%B8%D1%82%D0%BE%D0%B3%D0%B8.srt"
    )
    untitled = make_job(created=SENT)
    assert content_disposition(untitled, TranscriptFormat.TXT) == (
        'attachment; filename="Recording of 5 Dec 2026, 09_44.txt";'
        " filename*=UTF-8''Recording%20of%205%20Dec%202026%2C%2009_44.txt"
    )
    quoted = make_job(title='say "hi" \\ bye', created=SENT)
    assert 'filename="say _hi_ _ bye.txt"' in content_disposition(quoted, TranscriptFormat.TXT)
