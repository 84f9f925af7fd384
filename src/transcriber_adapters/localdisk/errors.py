"""The one place where ``OSError`` becomes a core error.

Its text carries paths, so it is dropped (reference: Privacy). A full disk or
an exceeded quota is the service's condition (``DiskFull``), not the job's.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from transcriber_core.errors import DiskFull, StorageUnavailable, TranscriberError

#: errno values that mean "no room": the service's condition, not the recording's.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


@contextlib.contextmanager
def storage_errors(missing: TranscriberError | None = None) -> Iterator[None]:
    """Turn ``OSError`` into ``StorageUnavailable`` (or ``missing`` for a missing file).

    ENOSPC and EDQUOT become ``DiskFull``: the job waits for space without
    spending an attempt (reference: Limits).

    The OS text names the path, so only the error's generic meaning
    survives, and the original is not chained (reference: Privacy).
    """
    try:
        yield
    except FileNotFoundError:
        if missing is not None:
            raise missing from None
        raise StorageUnavailable("the file store could not find a file it expected") from None
    except OSError as exc:
        if exc.errno in NO_SPACE_ERRNOS:
            raise DiskFull(f"the file store has no space left: {os.strerror(exc.errno)}") from None
        reason = os.strerror(exc.errno) if exc.errno is not None else "unknown error"
        raise StorageUnavailable(f"the file store failed: {reason}") from None
