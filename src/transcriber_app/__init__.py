"""transcriber_app: composition — config, the server, the bot, the CLI.

The only place that knows which adapters exist.
"""

import importlib.metadata

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
