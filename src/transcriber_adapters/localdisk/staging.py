"""Staging files: fresh, random-named, private, and removed however the block using one ends.

``staging_path`` makes one in a store's staging dir (in the service, this
process's own folder in ``<data_dir>/tmp``: ``datadir`` makes it and sweeps
what killed processes left there; ADR 21, 38).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from transcriber_adapters.localdisk.durable import DIR_MODE
from transcriber_adapters.localdisk.errors import storage_errors
from transcriber_adapters.localdisk.names import check_extension

#: Prefix of staging files in a staging dir.
STAGING_PREFIX = "transcriber-"


@contextlib.asynccontextmanager
async def staging_path(directory: Path, extension: str) -> AsyncIterator[Path]:
    """A new empty file ``transcriber-<random><extension>`` in ``directory``, mode 0600.

    ``directory`` is made (0700) when missing. Whoever uses the file may
    write, replace or move it; whatever is at the path on exit is removed,
    however the block ends.
    """
    check_extension(extension)
    # Made in this thread, not in a worker: a cancellation between creating
    # the file and learning its name would leak it. mkstemp is one syscall,
    # and O_EXCL with mode 0600 keeps everyone else away from it; the folder
    # is there already but after a first start or a hand clean-up.
    with storage_errors():
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # noqa: ASYNC240 - see above
        handle, name = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=extension, dir=directory)
        os.close(handle)
    path = Path(name)
    try:
        yield path
    finally:
        remove_now(path)


@contextlib.asynccontextmanager
async def staging_folder(directory: Path) -> AsyncIterator[Path]:
    """A new empty folder ``transcriber-<random>`` in ``directory``, mode 0700.

    Whatever is in it on exit is removed with it, however the block ends (a
    link's download, SPEC §28: nothing is left behind a refused or cancelled fetch).
    """
    # Made and removed in this thread, as ``staging_path``'s file is: no cancellation
    # can fall between making the folder and learning its name, or skip its removal.
    with storage_errors():
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # noqa: ASYNC240 - see above
        path = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=directory))
    try:
        yield path
    finally:
        with storage_errors():
            shutil.rmtree(path, ignore_errors=True)


def remove_now(path: Path) -> None:
    """Unlink ``path`` if it is there, synchronously so no cancellation can skip it."""
    with storage_errors():
        path.unlink(missing_ok=True)
