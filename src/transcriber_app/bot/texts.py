"""What the bot says when it does not take a recording, or already has it.

The acknowledgement and the transcript itself are the notifier's
(``transcriber_adapters.telegram.notifier``): ``submit`` tells it ``accepted``.
"""

from __future__ import annotations

from transcriber_core.entities import Job, State

HELP_TEXT = (
    "Send me a voice message, an audio or video file, or a video note, "
    "and I will reply with its text."
)
REFUSED_TEXT = "Sorry, this bot is private and does not take recordings from this chat."
TOO_LARGE_TEXT = (
    "This file is too large: I can download files up to {limit}. "
    "Please send a shorter or smaller recording."
)
DOWNLOAD_FAILED_TEXT = "I could not download this file from Telegram. Please send it again."
UNAVAILABLE_TEXT = "I cannot take this recording right now. Please send it again in a few minutes."
#: The reply while the service is short of disk space (the HTTP intake's 507).
NO_ROOM_TEXT = (
    "I cannot take recordings right now: the service is short of disk space."
    " Please send it again later."
)
#: What a second copy of a recording is told, by the state of the first one's job.
DUPLICATE_TEXTS = {
    State.DONE: "I already transcribed this recording: see my reply to the first one.",
    State.FAILED: "I already tried this recording and could not transcribe it: {error}",
    State.DEAD: "I already tried this recording and gave up after repeated errors.",
}
DUPLICATE_IN_PROGRESS_TEXT = (
    "I already have this recording; its text will come as a reply to the first one."
)


def too_large_text(max_file_bytes: int) -> str:
    """The refusal of a file over the limit, naming the limit in whole megabytes."""
    return TOO_LARGE_TEXT.format(limit=f"{max_file_bytes // (1024 * 1024)} MB")


def duplicate_text(job: Job) -> str:
    """The reply to a recording already sent to this chat, by what became of the first copy."""
    text = DUPLICATE_TEXTS.get(job.state, DUPLICATE_IN_PROGRESS_TEXT)
    return text.format(error=job.error or "no reason recorded")
