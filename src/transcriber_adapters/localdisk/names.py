"""Names of stored files: checked ids and extensions, so no name can leave its store's folder."""

from __future__ import annotations

import re

_FILE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_EXTENSION = re.compile(r"(\.[a-z0-9]{1,10})?")


def check_extension(extension: str) -> str:
    """``extension`` unchanged when it is "" or a dot and 1-10 of ``[a-z0-9]``; else ValueError."""
    if not _EXTENSION.fullmatch(extension):
        raise ValueError("an extension is a dot and 1 to 10 lower-case letters or digits")
    return extension


def stored_name(file_id: str, extension: str) -> str:
    """``<file_id><extension>``, refusing anything that could leave the store's folder."""
    if not _FILE_ID.fullmatch(file_id):
        raise ValueError("a file id is 1 to 128 URL-safe characters")
    return file_id + check_extension(extension)
