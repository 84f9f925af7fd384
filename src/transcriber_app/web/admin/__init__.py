"""The admin panel (reference: Admin panel): Jinja2 pages under ``/admin`` for the owner.

One module per concern:

- ``rendering``: the Jinja environment, its filters, pages, messages, URLs;
- ``security``: the headers on every answer and the guards every view
  wears (owner only, CSRF-checked form), each written once;
- ``account``: setup with the startup link (a name and a password), the
  reset link, the password change (signing in is the one door's, ADR 76);
- ``jobs``: the jobs list, a job's detail and the owner's state change;
- ``files``: file download, streamed from the store that holds the copy;
- ``routes``: the routes and middleware mounted under ``/admin``.

Sessions live in the database (``web/sessions.py``, ADR 17); the rules the
panel applies to jobs (revive, what a change clears) live in the core
(``transcriber_core.edits``, ``transitions``).
"""

from __future__ import annotations

from transcriber_app.web.admin.routes import mount

__all__ = ["mount"]
