"""Numbered schema migrations shipped as ``NNNN_name.sql`` files inside an adapter's package.

SQLite and PostgreSQL each have their own set (``sqlite/migrations/``,
``postgres/migrations/``); this module only finds and orders them. Once
released a file is never edited: a change is a new file.
"""

from __future__ import annotations

import re
from importlib import resources

import attrs

_MIGRATION_NAME = re.compile(r"(\d{4})_[a-z0-9_]+\.sql")


@attrs.frozen(kw_only=True)
class Migration:
    """One numbered schema change."""

    version: int
    name: str
    sql: str


def shipped(package: str) -> list[Migration]:
    """The migrations in ``package``'s ``migrations`` folder, in version order."""
    folder = resources.files(package).joinpath("migrations")
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.fullmatch(entry.name)
        if match is None:
            continue
        found.append(
            Migration(
                version=int(match.group(1)),
                name=entry.name,
                sql=entry.read_text(encoding="utf-8"),
            )
        )
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError("two shipped migrations have the same number")
    return found
