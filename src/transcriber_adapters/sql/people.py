"""Rows of the people's tables to records and back, written once for both SQL adapters (ADR 55).

The columns are SQLite's 0018 and PostgreSQL's 0009 (the role: 0028, 0019), in the order every
statement selects them. Times travel as each dialect's ``RowMapping`` says
(SQLite: INTEGER microseconds; PostgreSQL: ``timestamptz``); a session's
login part is mapped by ``RowMapping``'s ``session_params`` and
``session_from_row``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, LiteralString

from transcriber_adapters.sql.rows import SESSION_COLUMNS, RowMapping
from transcriber_core.people import LinkedChat, Person, PersonSession, PersonToken, Role

#: Columns of ``people`` in the order reads return them.
PERSON_COLUMNS: tuple[LiteralString, ...] = (
    "id",
    "name",
    "password_hash",
    "created",
    "disabled",
    "role",
    # SQLite's 0032, PostgreSQL's 0023.
    "language",
)
#: Columns of ``person_tokens`` in the order reads return them.
TOKEN_COLUMNS: tuple[LiteralString, ...] = ("id", "token_hash", "person_id", "label", "created")
#: Columns of ``person_chats`` (SQLite's 0022, PostgreSQL's 0013) in the order reads return them.
LINKED_CHAT_COLUMNS: tuple[LiteralString, ...] = ("chat_id", "person_id", "linked")
#: Columns of ``person_sessions`` in the order reads return them: the person, then the login.
PERSON_SESSION_COLUMNS: tuple[LiteralString, ...] = ("person_id", *SESSION_COLUMNS)


def _same(value: Any) -> Any:
    return value


class PeopleRows:
    """Rows and parameters of people, tokens and sessions for one dialect."""

    def __init__(
        self,
        rows: RowMapping,
        *,
        time_to_db: Callable[[datetime], Any] = _same,
        time_from_db: Callable[[Any], datetime] = _same,
    ) -> None:
        """Map logins with ``rows`` and times with ``time_to_db``/``time_from_db``."""
        self._rows = rows
        self._to_db = time_to_db
        self._from_db = time_from_db

    def person_params(self, person: Person) -> dict[str, Any]:
        """The named parameters of every ``people`` column for ``person``."""
        return {
            "id": person.id,
            "name": person.name,
            "password_hash": person.password_hash,
            "created": self._to_db(person.created),
            "disabled": None if person.disabled is None else self._to_db(person.disabled),
            "role": person.role.value,
            "language": person.language,
        }

    def person_from_row(self, row: Sequence[Any]) -> Person:
        """The person of a row selected in ``PERSON_COLUMNS`` order."""
        person_id, name, password_hash, created, disabled, role, language = row
        return Person(
            id=person_id,
            name=name,
            password_hash=password_hash,
            created=self._from_db(created),
            disabled=None if disabled is None else self._from_db(disabled),
            role=Role(role),
            language=language,
        )

    def token_params(self, token: PersonToken) -> dict[str, Any]:
        """The named parameters of every ``person_tokens`` column for ``token``."""
        return {
            "id": token.id,
            "token_hash": token.token_hash,
            "person_id": token.person_id,
            "label": token.label,
            "created": self._to_db(token.created),
        }

    def token_from_row(self, row: Sequence[Any]) -> PersonToken:
        """The token of a row selected in ``TOKEN_COLUMNS`` order."""
        token_id, token_hash, person_id, label, created = row
        return PersonToken(
            id=token_id,
            token_hash=token_hash,
            person_id=person_id,
            label=label,
            created=self._from_db(created),
        )

    def session_params(self, session: PersonSession) -> dict[str, Any]:
        """The named parameters of every ``person_sessions`` column for ``session``."""
        return {"person_id": session.person_id, **self._rows.session_params(session.login)}

    def session_from_row(self, row: Sequence[Any]) -> PersonSession:
        """The session of a row selected in ``PERSON_SESSION_COLUMNS`` order."""
        return PersonSession(person_id=row[0], login=self._rows.session_from_row(row[1:]))

    def linked_chat_from_row(self, row: Sequence[Any]) -> LinkedChat:
        """The link of a row selected in ``LINKED_CHAT_COLUMNS`` order."""
        chat_id, person_id, linked = row
        return LinkedChat(chat_id=chat_id, person_id=person_id, linked=self._from_db(linked))
