"""The recognizer's Object Storage copies: removing one by its file id, a failure only logged."""

from __future__ import annotations

import logging
from typing import Any

from transcriber_core.errors import NotFound
from transcriber_core.naming import derived_file_id
from transcriber_core.services import Services

log = logging.getLogger("transcriber.copies")

#: The role of a job's Object Storage copy in its derived file id (``naming.derived_file_id``).
STORAGE_COPY = "storage"


def storage_copy_id(job_id: str) -> str:
    """The id of the job's copy for the recognizer: the same on every try, known before it exists.

    A job waiting in recognize (an empty budget, a 429) may hold a copy its
    row does not name yet; deleting the job finds it by this id (red team 3).
    """
    return derived_file_id(job_id, STORAGE_COPY)


async def remove_copy(services: Services, job_id: str, file_id: str, **extra: Any) -> None:
    """Delete the copy ``file_id`` from Object Storage and its record; gone already is fine.

    Any other failure is logged with ``job_id`` and ``extra`` (never the
    object key) and swallowed: the copy is orphaned, not the job.
    """
    store = services.recognizer_files
    if store is None:
        return
    try:
        record = await services.file_records.get_file(file_id)
        await store.delete(record)
        await services.file_records.delete_file(file_id)
    except NotFound:
        return
    except Exception as exc:  # noqa: BLE001 - the copy is orphaned, not the job
        log.warning(
            "storage_copy.delete_error",
            extra={"job_id": job_id, **extra, "error_type": type(exc).__name__},
        )
