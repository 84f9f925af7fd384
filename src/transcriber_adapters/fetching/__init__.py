"""Links in (SPEC §28): the ``MediaFetcher`` on yt-dlp and the guard its connections go through.

``guard`` needs nothing but the standard library; ``ytdlp`` needs the
``links`` extra (yt-dlp), imported when a link is first checked.
"""

from transcriber_adapters.fetching.guard import AddressGuard, AddressRule
from transcriber_adapters.fetching.ytdlp import YtDlpFetcher

__all__ = ["AddressGuard", "AddressRule", "YtDlpFetcher"]
