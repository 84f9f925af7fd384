"""Staging files: fresh, random-named, private, and removed however the block using one ends.

``staging_path`` makes one in a store's staging dir (``<data_dir>/tmp`` in
the service); ``clear_staging_dir`` empties that dir at start-up of what a
killed process left there (ADR 21).
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


def clear_staging_dir(directory: Path) -> int:
    """Make ``directory`` (0700) and empty it of what a killed process left; how many entries.

    Only safe while no other process stages files there: the service holds
    the data dir's lock (``datadir.claim``) before calling it.
    """
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    removed = 0
    for entry in directory.iterdir():
        # A folder is never made here by us; whatever one holds is a leftover too.
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed += 1
    return removed


def remove_now(path: Path) -> None:
    """Unlink ``path`` if it is there, synchronously so no cancellation can skip it."""
    with storage_errors():
        path.unlink(missing_ok=True)
