"""transcriber_app: composition — config, the server, the bot, the CLI.

The only place that knows which adapters exist.
"""

import importlib.metadata
import os

#: OpenBLAS (NumPy's BLAS) runs each call in the caller's thread, with no pool of its
#: own: its pool's fork handler waits for a call in flight on another thread, and a
#: fork (every ffmpeg this process starts) then hung the whole process (ADR 95). Read
#: once, when NumPy loads OpenBLAS: set before anything here imports NumPy.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

#: The name this project is published under on PyPI (ADR 47); ``transcriber`` there is
#: another project. Install lines and "extra missing" messages use it; the import
#: packages and the ``transcriber`` command keep their names.
DISTRIBUTION = "selfhosted-transcriber"


def version() -> str:
    """The installed distribution's version; ``0+source`` when run from a source tree."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+source"
