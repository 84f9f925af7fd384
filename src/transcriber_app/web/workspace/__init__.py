"""The workspace: the pages of the people the owner invited and the owner's, under ``/w`` (ADR 55).

Sessions are the service's one kind (``web/sessions.py``, ADR 76);
``views.py`` answers the pages (the one sign-in form, also at ``/``,
set-password from an invite link, the tokens) and holds
their guards, ``live.py`` the list of recordings and the JSON its script
polls, ``upload.py`` the upload page and the endpoint it posts to (the
API's own intake, ADR 64), ``transcript.py`` and ``corrections.py`` a
recording's page, ``credentials.py`` makes ids and secrets and hashes them,
and ``routes.py`` mounts the pages with the admin panel's security headers.
"""

from transcriber_app.web.workspace.routes import front_door, mount

__all__ = ["front_door", "mount"]
