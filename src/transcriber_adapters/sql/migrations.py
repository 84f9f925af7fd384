"""Numbered schema migrations shipped as ``NNNN_name.sql`` files inside an adapter's package.

SQLite and PostgreSQL each have their own set (``sqlite/migrations/``,
``postgres/migrations/``); this module finds and orders them and says which
are pending (``pending``); each dialect's runner applies those in one
transaction under its own lock. Once
released a file is never edited: a change is a new file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

import attrs

from transcriber_core.errors import RepositoryUnavailable

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


def pending(wanted: Iterable[Migration], applied: Iterable[int]) -> list[Migration]:
    """The migrations of ``wanted`` not yet ``applied``, in version order; the one rule of both.

    A database holding a version newer than every one ``wanted`` knows was
    made by a later release, and is refused (``RepositoryUnavailable``, naming
    both versions) rather than opened by a program that cannot read it.
    """
    ordered = sorted(wanted, key=lambda migration: migration.version)
    done = set(applied)
    known = max((migration.version for migration in ordered), default=0)
    if done and max(done) > known:
        raise RepositoryUnavailable(
            f"the database schema is at version {max(done)}, made by a newer version of"
            f" transcriber than this one (up to {known}): run the newer release"
        )
    return [migration for migration in ordered if migration.version not in done]
