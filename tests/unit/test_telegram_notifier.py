"""The Telegram notifier: splitting, documents, replies, and its errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from aiogram.exceptions import TelegramBadRequest

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from transcriber_adapters.telegram import (
    MESSAGE_LIMIT,
    TelegramNotifier,
    TelegramRefused,
    TelegramUnavailable,
    make_bot,
    send_reply,
    split_text,
)
from transcriber_adapters.telegram.notifier import CAPTION_CHARS, EMPTY_TEXT, caption_of
from transcriber_core.entities import Job, Origin, Speaker, State, Word
from transcriber_core.errors import NotifierUnavailable, TransientError
from transcriber_core.ports import Event

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHAT = 555
MESSAGE = 77


def job(*, text: str | None = None, error: str | None = None, origin: Origin | None = None) -> Job:
    """A job from message 77 in chat 555, with the fields a notice reads."""
    state = State.DONE if text is not None else State.FAILED if error else State.CONVERT
    return Job(
        id="job-1",
        state=state,
        origin=origin or Origin.telegram(CHAT, MESSAGE),
        text=text,
        error=error,
        created=NOW,
        updated=NOW,
    )


def utf16_units(text: str) -> int:
    """The length Telegram checks: UTF-16 code units, two for a character outside the BMP."""
    return len(text.encode("utf-16-le")) // 2


def words(count: int) -> str:
    """``count`` distinct words, so a lost or repeated one shows."""
    return " ".join(f"word{index}" for index in range(count))


@attrs.define
class Telegram:
    """A fake Bot API server and a notifier talking to it."""

    api: FakeBotApi
    notifier: TelegramNotifier


@pytest.fixture
async def telegram() -> AsyncIterator[Telegram]:
    async with FakeBotApi() as api:
        bot = make_bot(TOKEN, api.url)
        try:
            yield Telegram(api=api, notifier=TelegramNotifier(bot))
        finally:
            await close_bot(bot)


def test_short_text_is_one_piece() -> None:
    """A transcript under the limit is sent as it is, trimmed."""
    assert split_text("  hello world \n") == ["hello world"]


def test_blank_text_is_no_pieces() -> None:
    """A blank transcript makes no message (Telegram refuses empty ones)."""
    assert split_text(" \n\t ") == []


def test_pieces_fit_and_keep_every_word() -> None:
    """Long text is cut under 4,096 characters at spaces, losing and repeating nothing."""
    text = words(2000)
    pieces = split_text(text)
    assert len(pieces) > 1
    assert all(utf16_units(piece) <= MESSAGE_LIMIT for piece in pieces)
    assert " ".join(pieces) == text


def test_cut_prefers_a_line_break() -> None:
    """When the window holds a newline, the piece ends there rather than mid-line."""
    first = "a" * 3000
    second = words(400)
    pieces = split_text(f"{first}\n{second}")
    assert pieces[0] == first
    assert pieces[1].startswith("word0 word1")


def test_word_longer_than_the_limit_is_cut_hard() -> None:
    """Text without whitespace still fits: cut at the limit."""
    pieces = split_text("x" * 9000)
    assert [len(piece) for piece in pieces] == [4096, 4096, 808]


def test_limit_counts_utf16_units() -> None:
    """Characters outside the BMP count twice, as Telegram counts them."""
    pieces = split_text("😀" * 3000)
    assert [len(piece) for piece in pieces] == [2048, 952]


#: Texts whose last character straddles the limit: one unit under, at, and over it.
_BOUNDARY_TEXTS = [
    *("a" * n + "😀" for n in range(MESSAGE_LIMIT - 3, MESSAGE_LIMIT + 1)),
    *("a" * n + "😀b" for n in range(MESSAGE_LIMIT - 3, MESSAGE_LIMIT + 1)),
    "😀" * (MESSAGE_LIMIT // 2) + "a",
    "a" + "😀" * (MESSAGE_LIMIT // 2),
]


@pytest.mark.parametrize("text", _BOUNDARY_TEXTS, ids=lambda t: f"{utf16_units(t)}units")
def test_cut_near_a_surrogate_pair_fits_and_loses_nothing(text: str) -> None:
    """A two-unit character at the limit moves to the next piece; no piece passes 4,096 units."""
    pieces = split_text(text)
    assert [utf16_units(piece) for piece in pieces if utf16_units(piece) > MESSAGE_LIMIT] == []
    assert "".join(pieces) == text
    assert len(pieces) == (1 if utf16_units(text) <= MESSAGE_LIMIT else 2)


async def test_fake_bot_api_refuses_what_telegram_refuses(telegram: Telegram) -> None:
    """The fake answers 400 past 4,096 UTF-16 units and for a blank text, as Telegram does."""
    bot = telegram.notifier.bot
    with pytest.raises(TelegramBadRequest, match="message is too long"):
        await bot.send_message(CHAT, "a" * (MESSAGE_LIMIT - 1) + "😀")
    with pytest.raises(TelegramBadRequest, match="message text is empty"):
        await bot.send_message(CHAT, " \n ")
    with pytest.raises(TelegramRefused):
        await send_reply(bot, CHAT, MESSAGE, "😀" * (MESSAGE_LIMIT // 2) + "a")
    await send_reply(bot, CHAT, MESSAGE, "a" * (MESSAGE_LIMIT - 2) + "😀")
    assert [utf16_units(sent.text or "") for sent in telegram.api.sent_to(CHAT)] == [MESSAGE_LIMIT]


async def test_transcript_ending_in_a_surrogate_pair_at_the_limit_is_delivered(
    telegram: Telegram,
) -> None:
    """The issue's case, "a" * 4,095 + an emoji (4,097 units), arrives whole in two replies."""
    text = "a" * (MESSAGE_LIMIT - 1) + "😀"
    await telegram.notifier.notify(job(text=text), Event.DONE)
    delivered = await telegram.api.delivered(CHAT)
    assert [utf16_units(part) for part in delivered] == [MESSAGE_LIMIT - 1, 2]
    assert "".join(delivered) == text


async def test_accepted_replies_to_the_origin_message(telegram: Telegram) -> None:
    """The acknowledgement replies to the recording's message, and is sent if it was deleted."""
    await telegram.notifier.notify(job(), Event.ACCEPTED)
    [sent] = telegram.api.sent_to(CHAT)
    assert sent.reply_to == MESSAGE
    assert sent.allow_sending_without_reply


async def test_transcript_over_the_limit_is_split_into_replies(telegram: Telegram) -> None:
    """A transcript of two messages' length comes as two replies, in order."""
    text = words(900)  # about 7,000 characters
    await telegram.notifier.notify(job(text=text), Event.DONE)
    sent = telegram.api.sent_to(CHAT)
    assert len(sent) == 2
    assert all(message.reply_to == MESSAGE for message in sent)
    assert " ".join(message.text or "" for message in sent) == text


async def test_long_transcript_is_one_text_document(telegram: Telegram) -> None:
    """Past three messages' length: one UTF-8 .txt named by date and id, its opening as caption."""
    text = "Привет, мир. " * 1500  # about 19,500 characters
    done = job(text=text)
    await telegram.notifier.notify(done, Event.DONE)
    [sent] = telegram.api.sent_to(CHAT)
    assert sent.method == "senddocument"
    assert sent.filename == f"transcript-{done.created:%Y-%m-%d}-{done.id[:8]}.txt"
    assert sent.document == text.encode("utf-8")
    assert sent.text == caption_of(text)
    assert sent.reply_to == MESSAGE
    assert [label for label, _ in sent.buttons[0]] == ["SRT", "VTT"]


def test_the_caption_is_the_opening_cut_at_a_word() -> None:
    """A caption is the transcript's start, whole words, marked as cut; a short text whole."""
    long = "word " * 200
    caption = caption_of(long)
    assert caption.endswith("…")
    assert len(caption) <= CAPTION_CHARS + 1
    assert long.startswith(caption.removesuffix("…"))
    assert caption_of("  short text  ") == "short text"


async def test_buttons_go_under_the_last_part_only(telegram: Telegram) -> None:
    """A transcript in two messages carries its SRT and VTT buttons on the second."""
    await telegram.notifier.notify(job(text=words(900)), Event.DONE)
    first, last = telegram.api.sent_to(CHAT)
    assert first.buttons == ()
    assert [label for label, _ in last.buttons[0]] == ["SRT", "VTT"]


async def test_message_count_before_a_document_is_a_parameter(telegram: Telegram) -> None:
    """With max_messages=1, a two-message transcript already goes as a document."""
    notifier = TelegramNotifier(telegram.notifier.bot, max_messages=1)
    await notifier.notify(job(text=words(900)), Event.DONE)
    [sent] = telegram.api.sent_to(CHAT)
    assert sent.method == "senddocument"


async def test_empty_transcript_says_no_speech(telegram: Telegram) -> None:
    """A done job with no text gets a sentence saying so, not an empty message."""
    await telegram.notifier.notify(job(text="  "), Event.DONE)
    assert await telegram.api.delivered(CHAT) == [EMPTY_TEXT]


async def test_transcript_is_sent_as_plain_text(telegram: Telegram) -> None:
    """Markup-like text arrives verbatim: no parse mode turns it into formatting or an error."""
    await telegram.notifier.notify(job(text="<b>1 < 2</b> *not bold*"), Event.DONE)
    assert await telegram.api.delivered(CHAT) == ["<b>1 < 2</b> *not bold*"]


async def test_transcript_with_speakers_is_sent_in_turns(telegram: Telegram) -> None:
    """A labelled transcript arrives as a paragraph per turn, each behind its speaker's name."""
    labelled = attrs.evolve(
        job(text="Hello there. Hi."),
        words=(
            Word(text="Hello", start=0.0, end=0.4, speaker="S1"),
            Word(text="there.", start=0.5, end=0.9, speaker="S1"),
            Word(text="Hi.", start=1.0, end=1.3, speaker="S2"),
        ),
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Speaker 2")),
    )
    await telegram.notifier.notify(labelled, Event.DONE)
    assert await telegram.api.delivered(CHAT) == ["Diane: Hello there.\n\nSpeaker 2: Hi."]


async def test_http_origin_makes_no_request(telegram: Telegram) -> None:
    """A job uploaded over HTTP is not notified: nothing is sent to Telegram at all."""
    await telegram.notifier.notify(job(text="hi", origin=Origin.http()), Event.DONE)
    assert telegram.api.calls == []


async def test_concurrent_notices_to_one_chat_keep_call_order(telegram: Telegram) -> None:
    """An acknowledgement started first is delivered first, even if the transcript is ready."""
    await asyncio.gather(
        telegram.notifier.notify(job(), Event.ACCEPTED),
        telegram.notifier.notify(job(text=words(900)), Event.DONE),
        telegram.notifier.notify(job(error="third"), Event.FAILED),
    )
    delivered = await telegram.api.delivered(CHAT)
    assert len(delivered) == 4
    assert delivered[1].startswith("word0 ")
    assert "third" in delivered[3]


async def test_rate_limit_is_transient_with_its_wait(telegram: Telegram) -> None:
    """A 429 becomes a transient core error that carries Telegram's retry_after."""
    telegram.api.fail_next("sendMessage", 429, "Too Many Requests: retry after 7", retry_after=7)
    with pytest.raises(TelegramUnavailable) as caught:
        await telegram.notifier.notify(job(), Event.ACCEPTED)
    assert isinstance(caught.value, NotifierUnavailable)
    assert caught.value.retry_after == timedelta(seconds=7)


async def test_server_error_is_transient(telegram: Telegram) -> None:
    """A 5xx from the Bot API is worth trying again."""
    telegram.api.fail_next("sendMessage", 502, "Bad Gateway")
    with pytest.raises(TelegramUnavailable):
        await telegram.notifier.notify(job(), Event.ACCEPTED)


async def test_blocked_bot_is_a_refusal(telegram: Telegram) -> None:
    """A user who blocked the bot (403) is a refusal, not something to retry."""
    telegram.api.fail_next("sendMessage", 403, "Forbidden: bot was blocked by the user")
    with pytest.raises(TelegramRefused) as caught:
        await telegram.notifier.notify(job(), Event.ACCEPTED)
    assert not isinstance(caught.value, TransientError)


async def test_unreachable_server_is_transient_and_names_no_url(telegram: Telegram) -> None:
    """A dead connection is transient; its message and chain carry no URL or token."""
    await telegram.api.close()
    with pytest.raises(TelegramUnavailable) as caught:
        await telegram.notifier.notify(job(), Event.ACCEPTED)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert TOKEN not in caught.value.message
    assert "127.0.0.1" not in caught.value.message


def test_max_messages_must_be_positive() -> None:
    """A notifier that could never send a transcript as messages is refused at construction."""
    with pytest.raises(ValueError, match="max_messages"):
        TelegramNotifier(make_bot(TOKEN), max_messages=0)
