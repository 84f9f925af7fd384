"""The Telegram status message (SPEC §21, ADR 51): sent once, edited as the job moves, paced.

Real aiogram HTTP against the fake Bot API; the pace is a memory budget on a manual clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from tests.support.fake_bot_api import TOKEN, FakeBotApi, close_bot
from transcriber_adapters.memory import ManualClock
from transcriber_adapters.memory.budgets import MemoryBudgetStore
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_adapters.telegram.buttons import document_name
from transcriber_adapters.telegram.notifier import (
    ACCEPTED_TEXT,
    CONVERTING_TEXT,
    FETCHING_TEXT,
    LONG_TEXT,
    MESSAGE_LIMIT,
    status_text,
)
from transcriber_core.entities import Job, Origin, State
from transcriber_core.errors import NotifierUnavailable
from transcriber_core.policy import CHAT_EDIT_INTERVAL
from transcriber_core.ports import Event, Standing

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHAT = 556
MESSAGE = 78


def job(state: State = State.CONVERT, **fields: object) -> Job:
    """A job from message 78 in chat 556."""
    return Job(
        id="job-s",
        state=state,
        origin=Origin.telegram(CHAT, MESSAGE),
        created=NOW,
        updated=NOW,
        **fields,  # type: ignore[arg-type]
    )


@attrs.define
class Chat:
    """The fake Bot API, a notifier paced by a budget store, and the clock of that store."""

    api: FakeBotApi
    notifier: TelegramNotifier
    clock: ManualClock


@pytest.fixture
async def chat() -> AsyncIterator[Chat]:
    clock = ManualClock(NOW)
    async with FakeBotApi() as api:
        bot = make_bot(TOKEN, api.url)
        notifier = TelegramNotifier(bot, budgets=MemoryBudgetStore(clock))
        try:
            yield Chat(api=api, notifier=notifier, clock=clock)
        finally:
            await close_bot(bot)


def test_the_text_says_where_the_job_stands() -> None:
    """Queued with its place, converting, recognising with percent and time left, or parts."""
    assert status_text(job(), Standing(queue_position=3)) == "Got it. Queued: 3 ahead of it."
    assert status_text(job(), Standing(queue_position=0), Event.ACCEPTED) == ACCEPTED_TEXT
    assert status_text(job(), Standing()) == CONVERTING_TEXT
    recognising = job(State.RECOGNIZE)
    assert status_text(recognising, Standing()) == "Recognising…"
    assert status_text(recognising, Standing(percent=42)) == "Recognising… 42 %"
    assert (
        status_text(recognising, Standing(percent=42, eta_seconds=80.4))
        == "Recognising… 42 %, about 1:20 left"
    )
    split = Standing(parts_done=1, parts_total=3, queue_position=0)
    assert status_text(job(State.CHECK), split) == "Recognising: 1 of 3 parts done."
    fetching = job(State.FETCH)
    assert status_text(fetching, Standing(queue_position=0), Event.ACCEPTED) == ACCEPTED_TEXT
    assert status_text(fetching, Standing()) == FETCHING_TEXT


async def test_accepted_sends_the_status_message_and_progress_edits_it(chat: Chat) -> None:
    """One message replying to the recording; each later notice edits it, none is sent anew."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    [sent] = chat.api.sent_to(CHAT)
    assert (sent.message_id, sent.reply_to, sent.text) == (first, MESSAGE, ACCEPTED_TEXT)
    recognising = job(State.RECOGNIZE)
    again = await chat.notifier.notify(
        recognising, Event.PROGRESS, standing=Standing(message_id=first, percent=10)
    )
    assert again == first
    [edited] = chat.api.sent_to(CHAT)
    assert (edited.text, edited.history) == ("Recognising… 10 %", (ACCEPTED_TEXT,))


async def test_edits_of_one_chat_are_paced_through_the_budget(chat: Chat) -> None:
    """Within 3 s a progress edit is skipped and the end waits; after the wait it goes through."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    standing = Standing(message_id=first, percent=10)
    await chat.notifier.notify(job(State.RECOGNIZE), Event.PROGRESS, standing=standing)
    chat.clock.advance(timedelta(seconds=1))
    later = attrs.evolve(standing, percent=20)
    assert await chat.notifier.notify(job(State.RECOGNIZE), Event.PROGRESS, standing=later) == first
    assert chat.api.sent_to(CHAT)[0].text == "Recognising… 10 %", "the early edit is left out"
    done = job(State.DONE, text="the quick brown fox")
    with pytest.raises(NotifierUnavailable) as refused:
        await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    wait = refused.value.retry_after
    assert wait is not None
    # The rest of the interval, rounded up to the budget's millisecond.
    assert (
        timedelta(0)
        <= wait - (CHAT_EDIT_INTERVAL - timedelta(seconds=1))
        < timedelta(milliseconds=2)
    )
    assert chat.api.sent_to(CHAT)[0].text == "Recognising… 10 %"
    chat.clock.advance(CHAT_EDIT_INTERVAL)
    await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    assert chat.api.sent_to(CHAT)[0].text == "the quick brown fox"


async def test_done_edits_the_status_message_into_the_transcript(chat: Chat) -> None:
    """The transcript replaces the status; a repeated edit (a retry) is no error."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    done = job(State.DONE, text="the quick brown fox")
    standing = Standing(message_id=first)
    assert await chat.notifier.notify(done, Event.DONE, standing=standing) == first
    chat.clock.advance(CHAT_EDIT_INTERVAL)
    assert await chat.notifier.notify(done, Event.DONE, standing=standing) == first
    [shown] = chat.api.sent_to(CHAT)
    assert shown.text == "the quick brown fox"
    assert [text for row in shown.buttons for text, _ in row] == ["SRT", "VTT"]


async def test_a_long_transcript_begins_in_the_status_message(chat: Chat) -> None:
    """Two messages' worth: the status becomes the first, the second replies to the recording."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    text = ("word " * (MESSAGE_LIMIT // 5)).strip() + "\n" + "tail " * 100
    done = job(State.DONE, text=text.strip())
    await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    status, rest = chat.api.sent_to(CHAT)
    assert status.message_id == first
    assert status.text is not None
    assert status.text.startswith("word word")
    assert rest.reply_to == MESSAGE
    assert rest.body.startswith("tail")
    assert (status.buttons, bool(rest.buttons)) == ((), True), "SRT/VTT under the last only"


async def test_a_transcript_for_a_document_says_so_in_the_status(chat: Chat) -> None:
    """Past three messages the status says a file comes, and the file replies to the recording."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    long_text = "Длинная расшифровка записи. " * 600
    done = job(State.DONE, text=long_text)
    await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    status, document = chat.api.sent_to(CHAT)
    assert status.text == LONG_TEXT
    assert (document.filename, document.reply_to) == (document_name(done, "txt"), MESSAGE)
    assert [text for row in document.buttons for text, _ in row] == ["SRT", "VTT"]


async def test_a_failure_edits_the_status_with_its_reason(chat: Chat) -> None:
    """A failed job's status message says why."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    failed = job(State.FAILED, error="the recording has no audio stream")
    await chat.notifier.notify(failed, Event.FAILED, standing=Standing(message_id=first))
    [shown] = chat.api.sent_to(CHAT)
    assert shown.text is not None
    assert "no audio stream" in shown.text


async def test_a_status_message_that_is_gone_is_sent_anew(chat: Chat) -> None:
    """An edit of a message Telegram no longer has sends a new status message; its id is kept."""
    answer = await chat.notifier.notify(
        job(State.RECOGNIZE), Event.PROGRESS, standing=Standing(message_id=999)
    )
    [sent] = chat.api.sent_to(CHAT)
    assert (answer, sent.reply_to, sent.text) == (sent.message_id, MESSAGE, "Recognising…")


async def test_without_a_standing_progress_is_ignored(chat: Chat) -> None:
    """A caller that keeps no status message sends no progress at all."""
    assert await chat.notifier.notify(job(State.RECOGNIZE), Event.PROGRESS) is None
    assert chat.api.sent_to(CHAT) == []


async def test_flood_control_on_an_edit_carries_telegrams_retry_after(chat: Chat) -> None:
    """editMessageText answered 429: the core is told Telegram's wait, and the text is unchanged."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    chat.api.fail_next("editMessageText", 429, "Too Many Requests: retry after 9", retry_after=9)
    done = job(State.DONE, text="the quick brown fox")
    with pytest.raises(NotifierUnavailable) as refused:
        await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    assert refused.value.retry_after == timedelta(seconds=9)
    assert chat.api.sent_to(CHAT)[0].text == ACCEPTED_TEXT
    chat.clock.advance(timedelta(seconds=9))
    await chat.notifier.notify(done, Event.DONE, standing=Standing(message_id=first))
    assert chat.api.sent_to(CHAT)[0].text == "the quick brown fox"


async def test_a_split_recordings_parts_show_in_order(chat: Chat) -> None:
    """Parts done 1, 2 of 3 are shown in that order, each edit after the chat's pace."""
    first = await chat.notifier.notify(job(), Event.ACCEPTED, standing=Standing())
    shown = []
    for done in (1, 2):
        chat.clock.advance(CHAT_EDIT_INTERVAL)
        standing = Standing(message_id=first, parts_done=done, parts_total=3)
        await chat.notifier.notify(job(State.CHECK), Event.PROGRESS, standing=standing)
        shown.append(chat.api.sent_to(CHAT)[0].text)
    assert shown == ["Recognising: 1 of 3 parts done.", "Recognising: 2 of 3 parts done."]
