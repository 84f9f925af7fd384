"""The pages' language (SPEC §26, ADR 77): gettext catalogs, the choice per request, dates.

The workspace and the admin panel speak every language that has a catalog
in ``transcriber_app/locale/<code>/LC_MESSAGES/messages.po``, and English,
the language of the source strings. The ``.po`` files are read as they
are, at the first page in that language, and compiled in memory: no
``.mo`` is built or committed, so a clone, a wheel and the image are
alike, and a translator's new ``.po`` is a new language with no change
to the code (docs/translating.md).

One request, one language, held in a context variable:
``Languages`` (the middleware of both sides) sets it from the
``transcriber_language`` cookie, else ``Accept-Language``, else English;
a signed-in person's own choice (the owner's too), kept in their row,
overrides it (``use``, called by ``web/sessions.Sessions``). ``_`` and
``ngettext`` translate Python strings that reach a page; templates use
Jinja2's i18n extension with the same catalogs (``install``). JSON API
errors stay English: their ``code`` is the contract.
"""

from __future__ import annotations

import functools
import gettext
import re
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

import jinja2
from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_skeleton, format_timedelta
from babel.dates import format_time as babel_format_time
from babel.lists import format_list
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.types import Scope

from transcriber_app.web.middleware import AnswerHeaders

#: Where the catalogs are: ``<code>/LC_MESSAGES/messages.po`` for each language.
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
#: The language of the source strings, and of anyone whose wish no catalog meets.
DEFAULT = "en"
#: The cookie that keeps the choice of someone signed out (a signed-in person's is in their row).
COOKIE = "transcriber_language"
#: How long the cookie is kept: a year, renewed at each change.
COOKIE_SECONDS = 365 * 24 * 3600
#: The longest ``Accept-Language`` looked at; a longer one is cut there.
_MAX_ACCEPT = 500
_TAG = re.compile(r"[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*")

#: The answers that hold words: pages, their JSON, plain-text refusals.
_WORDED = ("text/html", "text/plain", "application/json")

_current: ContextVar[str] = ContextVar("transcriber_language", default=DEFAULT)


@functools.cache
def available() -> tuple[str, ...]:
    """The languages the pages speak: English first, then each catalog's code, sorted."""
    found = sorted(path.parent.parent.name for path in LOCALE_DIR.glob("*/LC_MESSAGES/*.po"))
    return (DEFAULT, *(code for code in found if code != DEFAULT))


@functools.cache
def translations(language: str) -> gettext.NullTranslations:
    """The compiled catalog of ``language`` (read once); English's is the source strings."""
    path = LOCALE_DIR / language / "LC_MESSAGES" / "messages.po"
    if language == DEFAULT or not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as po:
        catalog = read_po(po, locale=language)
    compiled = BytesIO()
    # A fuzzy entry is a guess nobody checked: the English string shows instead.
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


@functools.cache
def locale_of(language: str) -> Locale:
    """Babel's locale for ``language`` (``pt_BR`` and ``pt-BR`` alike)."""
    return Locale.parse(language.replace("-", "_"))


def display_name(language: str) -> str:
    """The language's name in itself, capitalised: "Русский", "English"."""
    name = locale_of(language).display_name or language
    return name[:1].upper() + name[1:]


def spoken_name(code: str) -> str:
    """A recognition language's name in the page's language ("Russian", "Русский"); else its code.

    Whisper's codes are ISO 639-1 and -3 (``ru``, ``haw``); one Babel does not
    know shows as the code itself.
    """
    try:
        name = Locale.parse(code).get_display_name(locale_of(current()))
    except (ValueError, UnknownLocaleError):
        return code
    return name[:1].upper() + name[1:] if name else code


def spoken_names(codes: Iterable[str]) -> list[tuple[str, str]]:
    """Each recognition language's code and its name for the reader, by name; bare codes last."""
    named = [(code, spoken_name(code)) for code in codes]
    return sorted(named, key=lambda pair: (pair[1] == pair[0], pair[1].casefold()))


def html_lang(language: str) -> str:
    """The BCP 47 tag for ``<html lang>``: ``pt-BR`` for the catalog ``pt_BR``."""
    return language.replace("_", "-")


def matching(wish: str | None) -> str | None:
    """The available language ``wish`` names (case and ``-``/``_`` forgiven), or None."""
    if not wish:
        return None
    wanted = wish.strip().replace("-", "_").lower()
    for code in available():
        if code.lower() == wanted:
            return code
    return None


def negotiate(accept_language: str | None) -> str:
    """The first language of an ``Accept-Language`` header we speak (by weight); else English.

    ``ru-RU`` finds ``ru``; ``*`` and tags no catalog has are passed over.
    """
    wishes: list[tuple[float, int, str]] = []
    for index, item in enumerate((accept_language or "")[:_MAX_ACCEPT].split(",")):
        tag, _semicolon, params = item.strip().partition(";")
        if not _TAG.fullmatch(tag):
            continue
        weight = 1.0
        for param in params.split(";"):
            key, _equals, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if weight > 0:
            wishes.append((-weight, index, tag))
    for _weight, _index, tag in sorted(wishes):
        found = matching(tag) or matching(tag.replace("_", "-").split("-")[0])
        if found is not None:
            return found
    return DEFAULT


def chosen(request: Request) -> str:
    """The request's language before anyone signs in: the cookie's, else the browser's."""
    return matching(request.cookies.get(COOKIE)) or negotiate(
        request.headers.get("accept-language")
    )


def current() -> str:
    """The language of the request being answered."""
    return _current.get()


def use(language: str | None) -> None:
    """Answer the rest of this request in ``language`` when we speak it (a person's choice)."""
    found = matching(language)
    if found is not None:
        _current.set(found)


def cookie(language: str) -> str:
    """The ``Set-Cookie`` value that keeps ``language`` in this browser for a year."""
    return f"{COOKIE}={language}; Path=/; Max-Age={COOKIE_SECONDS}; HttpOnly; SameSite=Lax"


def switched(language: str, target: str) -> RedirectResponse:
    """303 back to ``target`` (a checked local path), the cookie keeping ``language``."""
    answer = RedirectResponse(target, status_code=303)
    answer.headers.append("set-cookie", cookie(language))
    return answer


def _(message: str, **variables: Any) -> str:
    """``message`` in the request's language; ``%(name)s`` filled from ``variables``."""
    text = translations(current()).gettext(message)
    return text % variables if variables else text


def N_(message: str) -> str:  # noqa: N802 - gettext's name for it, which extraction knows
    """Mark ``message`` for the catalogs where no request is at hand; ``_`` translates it later."""
    return message


def ngettext(singular: str, plural: str, n: int, **variables: Any) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the request's language; ``%(num)d`` is n."""
    text = translations(current()).ngettext(singular, plural, n)
    return text % {"num": n, **variables}


def choices() -> list[dict[str, str]]:
    """The header's language picker: each language's code, name (in itself) and tag."""
    return [
        {"code": code, "name": display_name(code), "lang": html_lang(code)} for code in available()
    ]


# -- dates, durations, numbers ----------------------------------------------------------


#: Where a language's dates follow one of its regions: English as SPEC §26 writes it,
#: "5 Dec 2026, 09:44", day first and a 24-hour clock (en_GB's CLDR patterns).
_DATES_OF = {"en": "en_GB"}


def _dates_locale() -> Locale:
    """The locale whose patterns write the request's dates."""
    code = current()
    return locale_of(_DATES_OF.get(code, code))


def format_when(moment: datetime | None) -> str:
    """A stored time in full, UTC to the millisecond: "5 Dec 2026, 09:44:05.123 UTC"; or "—"."""
    if moment is None:
        return "—"
    locale = _dates_locale()
    day = format_date(moment.astimezone(UTC), "medium", locale=locale)
    clock = babel_format_time(moment, "HH:mm:ss.SSS", tzinfo=UTC, locale=locale)
    return f"{day}, {clock} UTC"


def format_short_when(moment: datetime | None) -> str:
    """A list's narrow column: day, month and time, UTC ("5 Dec, 09:44", "5 дек., 09:44")."""
    if moment is None:
        return "—"
    return _day_and_minute("MMMd", moment)


def format_day(moment: datetime) -> str:
    """A date and minute in words, UTC: "5 Dec 2026, 09:44" (English)."""
    return _day_and_minute("yMMMd", moment)


def _day_and_minute(day_skeleton: str, moment: datetime) -> str:
    """The day by ``day_skeleton`` and the 24-hour minute, joined as the language joins them."""
    locale = _dates_locale()
    day = format_skeleton(day_skeleton, moment, tzinfo=UTC, locale=locale)
    clock = babel_format_time(moment, "HH:mm", tzinfo=UTC, locale=locale)
    return str(locale.datetime_formats["short"]).format(clock, day)


def format_span(seconds: float | None) -> str:
    """A duration in words, rounded to its largest unit: "3 minutes", "2 часа"; or "—"."""
    if seconds is None:
        return "—"
    return format_timedelta(
        timedelta(seconds=seconds), threshold=1.0, format="long", locale=locale_of(current())
    )


def format_number(value: float) -> str:
    """A number with the language's separators: "1,234.5", "1 234,5"."""
    return format_decimal(value, locale=locale_of(current()))


def quoted_list(words: Sequence[str]) -> str:
    """Words each in the language's quotes, listed as it lists them: “a”, “b” and “c”."""
    quoted = [_("“%(word)s”", word=word) for word in words]
    return format_list(quoted, locale=locale_of(current())) if quoted else ""


def format_tenths(value: float) -> str:
    """Seconds to a tenth, without grouping: "3501.0", "3501,0"."""
    return format_decimal(value, format="0.0", locale=locale_of(current()))


# -- the Jinja side ---------------------------------------------------------------------


def install(env: jinja2.Environment) -> None:
    """Give ``env`` the i18n extension, reading the request's catalog at each call."""
    env.add_extension("jinja2.ext.i18n")
    # {% trans %} blocks are joined into one line, as babel.cfg extracts them.
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_callables(  # type: ignore[attr-defined]
        lambda message: translations(current()).gettext(message),
        lambda singular, plural, n: translations(current()).ngettext(singular, plural, n),
        newstyle=True,
    )
    env.globals["language"] = current
    env.globals["html_lang"] = lambda: html_lang(current())
    env.globals["language_choices"] = choices


class Languages(AnswerHeaders):
    """Sets the request's language (cookie, else ``Accept-Language``) and says it in answers."""

    async def enter(self, scope: Scope) -> None:
        """Hold the language for everything that answers this request."""
        _current.set(chosen(Request(scope)))

    async def edit(self, scope: Scope, headers: MutableHeaders) -> None:
        """A page's or its JSON's ``Content-Language``; ``Vary`` tells caches it depends on it.

        Stylesheets and scripts are the same in every language: left as they are.
        """
        if not headers.get("content-type", "").startswith(_WORDED):
            return
        headers["content-language"] = html_lang(current())
        headers.add_vary_header("Accept-Language")
        headers.add_vary_header("Cookie")
