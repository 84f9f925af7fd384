"""Stored names keep nothing of the sender's but a clean extension (acceptance 6)."""

from __future__ import annotations

import pytest

from transcriber_core.naming import chat_id_of, derived_file_id, extension_of


@pytest.mark.parametrize(
    ("filename", "extension"),
    [
        ("секретное-слово.mp3", ".mp3"),
        ("Voice.Message.OGG", ".ogg"),
        ("clip.mp4", ".mp4"),
        ("no-extension", ""),
        ("", ""),
        (None, ""),
        ("trailing.", ""),
        ("evil.mp3/../../x", ""),
        ("name.секрет", ""),
        ("long.abcdefghijk", ""),
        ("ten.abcdefghij", ".abcdefghij"),
        ("spaces.m p3", ""),
        (".hidden", ".hidden"),
    ],
)
def test_extension_of(filename: str | None, extension: str) -> None:
    """Only 1-10 ASCII letters or digits after the last dot survive, lower-cased."""
    assert extension_of(filename) == extension


def test_secret_word_never_survives() -> None:
    """Acceptance 6 at the naming level: the word is gone, the extension kept."""
    assert "секрет" not in extension_of("секретное-слово.mp3")


def test_derived_id_is_stable_per_job_and_role() -> None:
    """A retried step gets the same file id, so it replaces instead of adding a record."""
    assert derived_file_id("job-a", "converted") == derived_file_id("job-a", "converted")
    assert derived_file_id("job-a", "converted") != derived_file_id("job-a", "storage")
    assert derived_file_id("job-a", "converted") != derived_file_id("job-b", "converted")


def test_derived_id_is_url_safe_and_128_bits() -> None:
    """Derived ids carry 128 bits in 22 URL-safe characters and do not reveal the job id."""
    file_id = derived_file_id("job-a", "converted")
    assert len(file_id) == 22
    assert all(c.isalnum() or c in "-_" for c in file_id)
    assert "job-a" not in file_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5150", 5150),
        ("-1001234567890", -1001234567890),
        (str(2**63 - 1), 2**63 - 1),
        (str(-(2**63)), -(2**63)),
        (str(2**63), None),
        ("1" + "0" * 30, None),
        ("9" * 5000, None),
        ("", None),
        ("+5", None),
        ("5 ", None),
        ("\u0665", None),
    ],
)
def test_a_chat_id_in_a_path_is_one_a_database_can_hold(text: str, expected: int | None) -> None:
    """Digits past 64 bits (SQLite raised OverflowError: a 500) or not ASCII digits are no id."""
    assert chat_id_of(text) == expected
