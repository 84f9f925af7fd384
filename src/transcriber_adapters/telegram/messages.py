"""Reading a Telegram message: which recording it carries, if any, and its file's extension.

Only the file's kind, ids, stated size and extension are kept: nothing of
the sender's, not even the file name (it may say who is speaking).
"""

from __future__ import annotations

from typing import Any

import attrs
from aiogram.types import Message

from transcriber_core.naming import extension_of

#: Extensions by MIME type, for files whose name gives none (voice and video notes have no name).
_EXTENSIONS = {
    "audio/aac": ".aac",
    "audio/amr": ".amr",
    "audio/flac": ".flac",
    "audio/m4a": ".m4a",
    "audio/mp3": ".mp3",
    "audio/mp4": ".m4a",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "audio/opus": ".opus",
    "audio/wav": ".wav",
    "audio/wave": ".wav",
    "audio/webm": ".webm",
    "audio/x-flac": ".flac",
    "audio/x-m4a": ".m4a",
    "audio/x-wav": ".wav",
    "video/3gpp": ".3gp",
    "video/mp4": ".mp4",
    "video/mpeg": ".mpeg",
    "video/quicktime": ".mov",
    "video/webm": ".webm",
    "video/x-matroska": ".mkv",
    "video/x-msvideo": ".avi",
}
#: What a file of each kind is when neither its name nor its MIME type says.
_DEFAULT_EXTENSIONS = {"voice": ".ogg", "video_note": ".mp4", "video": ".mp4"}


@attrs.frozen(kw_only=True)
class Recording:
    """The file of a message that carries a recording; nothing of the sender's but the extension."""

    #: voice, audio, video, video_note or document.
    kind: str
    file_id: str
    #: The same for every copy of one file, across messages and bots.
    file_unique_id: str
    #: The size Telegram states, when it does.
    declared_size: int | None
    #: From the file name or the MIME type; "" when neither tells.
    extension: str


def recording_of(message: Message) -> Recording | None:
    """The recording in ``message``, or None when it carries none.

    A voice message, an audio or video file, a video note, or a document
    with an audio or video MIME type is a recording; a GIF is not.
    """
    media: Any
    for kind in ("voice", "audio", "video", "video_note"):
        media = getattr(message, kind)
        if media is not None:
            break
    else:
        media = message.document
        kind = "document"
        # A GIF comes as an animation and a video/mp4 document at once, with no sound.
        if media is None or message.animation is not None or not _is_media(media.mime_type):
            return None
    name = getattr(media, "file_name", None)
    mime = getattr(media, "mime_type", None)
    extension = (
        extension_of(name) or _EXTENSIONS.get(mime or "") or _DEFAULT_EXTENSIONS.get(kind, "")
    )
    return Recording(
        kind=kind,
        file_id=media.file_id,
        file_unique_id=media.file_unique_id,
        declared_size=media.file_size,
        extension=extension,
    )


def _is_media(mime_type: str | None) -> bool:
    return mime_type is not None and mime_type.startswith(("audio/", "video/"))
