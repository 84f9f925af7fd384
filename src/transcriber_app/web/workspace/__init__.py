"""The workspace: the pages of the people the owner invited, under ``/w`` (SPEC §20, ADR 55).

``sessions.py`` keeps their server-side sessions, ``views.py`` answers the
pages (sign-in, set-password from an invite link, the tokens) and holds
their guards, ``live.py`` the list of recordings and the JSON its script
polls, ``upload.py`` the upload page and the endpoint it posts to (the
API's own intake, ADR 64), ``transcript.py`` and ``corrections.py`` a
recording's page, ``credentials.py`` makes ids and secrets and hashes them,
and ``routes.py`` mounts the pages with the admin panel's security headers.
"""

from transcriber_app.web.workspace.routes import mount

__all__ = ["mount"]
