"""The pages' catalogs (ADR 77): every string translated, the template current, the choice rules.

The strings are extracted here with Babel, as ``scripts/translations`` does
with ``babel.cfg``, and compared with each ``messages.po``: a string added
to a template or a ``_()`` call without its translation fails, and so does
a fuzzy (unchecked) entry, an obsolete one, or one no string uses any more.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from transcriber_app.web import language

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")
#: A moment to format: 5 December 2026, 09:44:05.123 UTC.
MOMENT = datetime(2026, 12, 5, 9, 44, 5, 123_000, tzinfo=UTC)


def extracted() -> set[str | tuple[str, str]]:
    """Every message id the templates and the Python of the pages hold, by ``babel.cfg``."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config)
    found: set[str | tuple[str, str]] = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        ROOT, method_map, options_map
    ):
        found.add(message if isinstance(message, str) else (message[0], message[1]))
    return found


def catalog(code: str) -> Catalog:
    """The ``messages.po`` of ``code`` as Babel reads it."""
    path = language.LOCALE_DIR / code / "LC_MESSAGES" / "messages.po"
    with path.open("rb") as po:
        return read_po(po, locale=code)


def key(message_id: object) -> str | tuple[str, str]:
    """A catalog entry's id in the form ``extracted`` gives."""
    if isinstance(message_id, str):
        return message_id
    assert isinstance(message_id, tuple | list)
    return (message_id[0], message_id[1])


def in_language(code: str, call: Callable[[], T]) -> T:
    """``call()`` as if a request in ``code`` were answered, without touching this context."""

    def run() -> T:
        language.use(code)
        return call()

    return contextvars.copy_context().run(run)


@pytest.fixture(scope="module")
def strings() -> set[str | tuple[str, str]]:
    """The extracted ids, once for the module."""
    return extracted()


def test_the_pages_speak_english_and_russian() -> None:
    """English is the source; Russian has a catalog (a new ``.po`` adds a language)."""
    assert language.available()[0] == "en"
    assert "ru" in language.available()


def test_extraction_finds_the_strings_of_templates_and_python(
    strings: set[str | tuple[str, str]],
) -> None:
    """The check below is only as good as the extraction: it sees all three kinds of source."""
    assert "Your recordings" in strings  # a template's {{ _() }}
    assert "Wrong name or password." in strings  # a Python _()
    assert ("%(num)s word", "%(num)s words") in strings  # a plural
    assert "Saved." in strings  # a script's word, through workspace/strings.py
    assert any("<kbd>Space</kbd>" in s for s in strings if isinstance(s, str))  # {% trans %}


@pytest.mark.parametrize("code", [code for code in language.available() if code != "en"])
def test_every_string_has_a_checked_translation(
    code: str, strings: set[str | tuple[str, str]]
) -> None:
    """Each string has a non-fuzzy translation with the same placeholders; nothing stale."""
    book = catalog(code)
    entries = {key(m.id): m for m in book if m.id}
    missing = sorted(map(str, strings - entries.keys()))
    assert not missing, f"untranslated in {code} (run scripts/translations): {missing}"
    stale = sorted(map(str, entries.keys() - strings))
    assert not stale, f"no string uses these {code} entries (run scripts/translations): {stale}"
    assert not book.obsolete, f"obsolete entries in {code}: {sorted(book.obsolete)}"
    fuzzy = sorted(str(k) for k, m in entries.items() if m.fuzzy)
    assert not fuzzy, f"fuzzy (unchecked) entries in {code}: {fuzzy}"
    empty = sorted(
        str(k)
        for k, m in entries.items()
        if not (all(m.string) if isinstance(m.string, tuple | list) else m.string)
    )
    assert not empty, f"empty translations in {code}: {empty}"
    problems = [(str(m.id), [str(e) for e in errors]) for m, errors in book.check() if errors]
    assert not problems, f"placeholders differ in {code}: {problems}"


def test_the_template_for_translators_is_current(strings: set[str | tuple[str, str]]) -> None:
    """``messages.pot``, which a new language starts from, holds exactly today's strings."""
    with (language.LOCALE_DIR / "messages.pot").open("rb") as pot:
        template = read_po(pot)
    assert {key(m.id) for m in template if m.id} == strings, "run scripts/translations"


def test_each_language_is_named_in_itself() -> None:
    """The header's picker names languages, capitalised, in their own words; never by code."""
    names = {choice["code"]: choice["name"] for choice in language.choices()}
    assert names["en"] == "English"
    assert names["ru"] == "Русский"
    for code in language.available():
        assert names[code][:1].isupper()
        assert names[code] != code


def test_a_catalog_translates_in_its_language_only() -> None:
    """The same call gives Russian in a Russian request and English in any other."""
    assert in_language("ru", lambda: language._("Your recordings")) == "Ваши записи"
    assert in_language("en", lambda: language._("Your recordings")) == "Your recordings"
    assert language._("Your recordings") == "Your recordings"  # no request: English
    words = [
        in_language("ru", lambda n=n: language.ngettext("%(num)s word", "%(num)s words", n))
        for n in (1, 3, 5, 21)
    ]
    assert words == ["1 слово", "3 слова", "5 слов", "21 слово"]


def test_every_state_has_a_russian_name() -> None:
    """Each job state the pages show is named in Russian, none left as its code."""
    from transcriber_app.web.admin.rendering import state_name  # noqa: PLC0415
    from transcriber_core.entities import State  # noqa: PLC0415

    untranslated = [
        s.value for s in State if in_language("ru", lambda s=s: state_name(s.value)) == s.value
    ]
    assert untranslated == []


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7", "ru"),
        ("RU", "ru"),
        ("en-GB,en;q=0.9,ru;q=0.8", "en"),
        ("de-DE,de;q=0.9", "en"),
        ("de;q=1.0, ru;q=0.5", "ru"),
        ("ru;q=0, en;q=0.1", "en"),
        ("en;q=0.2, ru;q=0.9", "ru"),
        ("*", "en"),
        ("", "en"),
        (None, "en"),
        ("ru;q=abc", "en"),
        ("<script>, ru", "ru"),
        ("x" * 600 + ",ru", "en"),
    ],
)
def test_accept_language_picks_a_language_we_speak(header: str | None, expected: str) -> None:
    """The browser's list, by weight; a region finds its language; anything else is English."""
    assert language.negotiate(header) == expected


def test_dates_and_durations_follow_the_language() -> None:
    """The same moment and length read as each language writes them; UTC stays said."""

    def formatted() -> tuple[str, ...]:
        return (
            language.format_when(MOMENT),
            language.format_short_when(MOMENT),
            language.format_day(MOMENT),
            language.format_span(190),
            language.format_number(1234.5),
        )

    english, russian = in_language("en", formatted), in_language("ru", formatted)
    assert english == (
        "5 Dec 2026, 09:44:05.123 UTC",
        "5 Dec, 09:44",
        "5 Dec 2026, 09:44",
        "3 minutes",
        "1,234.5",
    )
    assert russian == (
        "5 дек. 2026\N{NARROW NO-BREAK SPACE}г., 09:44:05.123 UTC",
        "5 дек., 09:44",
        "5 дек. 2026\N{NARROW NO-BREAK SPACE}г., 09:44",
        "3 минуты",
        "1\N{NO-BREAK SPACE}234,5",
    )
    assert in_language("ru", lambda: language.format_when(None)) == "—"


def test_recognition_languages_are_named_in_the_pages_language() -> None:
    """The upload page's list: names in the reader's language, sorted; unknown codes kept."""
    english = in_language("en", lambda: language.spoken_names(["ru", "en", "de"]))
    assert english == [("en", "English"), ("de", "German"), ("ru", "Russian")]
    russian = in_language("ru", lambda: language.spoken_names(["ru", "en", "zz"]))
    assert russian == [("en", "Английский"), ("ru", "Русский"), ("zz", "zz")]
