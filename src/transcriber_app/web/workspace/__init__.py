"""The workspace: the pages of the people the owner invited, under ``/w`` (SPEC §20, ADR 55).

``sessions.py`` keeps their server-side sessions, ``views.py`` answers the
pages (sign-in, set-password from an invite link, the recordings list, the
tokens), ``credentials.py`` makes ids and secrets and hashes them, and
``routes.py`` mounts the pages with the admin panel's security headers.
"""

from transcriber_app.web.workspace.routes import mount

__all__ = ["mount"]
