"""Local disk, shared by the stores that keep files on it (filesystem, memory, s3, telegram).

One module per concern:

* ``names``: stored names from checked ids and extensions, never from a sender.
* ``errors``: the one place where ``OSError`` becomes a core error.
* ``durable``: put bytes under a final name whole or not at all, private to
  the service's user (files 0600, folders 0700).
* ``staging``: fresh files in a store's staging dir, removed on every exit
  (``datadir`` sweeps what a killed process left there; ADR 21, 38).
"""

from transcriber_adapters.localdisk.durable import (
    CHUNK_SIZE,
    DIR_MODE,
    FILE_MODE,
    PARTIAL_PREFIX,
    copy_into,
    fsync_directory,
    move_into,
)
from transcriber_adapters.localdisk.errors import NO_SPACE_ERRNOS, storage_errors
from transcriber_adapters.localdisk.names import check_extension, stored_name
from transcriber_adapters.localdisk.staging import (
    STAGING_PREFIX,
    remove_now,
    staging_folder,
    staging_path,
)

__all__ = [
    "CHUNK_SIZE",
    "DIR_MODE",
    "FILE_MODE",
    "NO_SPACE_ERRNOS",
    "PARTIAL_PREFIX",
    "STAGING_PREFIX",
    "check_extension",
    "copy_into",
    "fsync_directory",
    "move_into",
    "remove_now",
    "staging_folder",
    "staging_path",
    "storage_errors",
    "stored_name",
]
