"""``SqlitePeopleStore``: the workspace's people, invites, tokens and sessions in the SQLite file.

The same database as the job repository (the process's one
``SqliteDatabase``). An invite's expiry is stamped and judged by the
store's clock, read in the connection thread under the write lock, as
leases are (ADR 30); a use of an invite is one ``UPDATE … RETURNING`` under
``BEGIN IMMEDIATE``, so of two processes racing on one link exactly one
sets the password (ADR 55).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import Any, LiteralString

from transcriber_adapters.sql.people import (
    LINKED_CHAT_COLUMNS,
    PERSON_COLUMNS,
    PERSON_SESSION_COLUMNS,
    TOKEN_COLUMNS,
    PeopleRows,
)
from transcriber_adapters.sqlite.connection import SqliteStore
from transcriber_adapters.sqlite.schema import immediate
from transcriber_adapters.sqlite.statements import ROWS
from transcriber_adapters.sqlite.times import from_db, to_db
from transcriber_core.people import (
    MAX_TOKENS_PER_PERSON,
    Invite,
    LinkCode,
    LinkedChat,
    Person,
    PersonSession,
    PersonToken,
)
from transcriber_core.ports import Clock

_ROWS = PeopleRows(ROWS, time_to_db=to_db, time_from_db=from_db)
_PERSON = ", ".join(PERSON_COLUMNS)
_TOKEN = ", ".join(TOKEN_COLUMNS)
_SESSION = ", ".join(PERSON_SESSION_COLUMNS)

_INSERT_PERSON = (
    f"INSERT INTO people ({_PERSON})"
    " VALUES (:id, :name, :password_hash, :created, :disabled, :role, :language)"
)
#: One owner at most: the partial unique index of 0028 turns a second into "not created",
#: while a name already stored still raises.
_INSERT_OWNER = f"{_INSERT_PERSON} ON CONFLICT (role) WHERE role = 'owner' DO NOTHING"
_FIND_OWNER = f"SELECT {_PERSON} FROM people WHERE role = 'owner'"
_INSERT_INVITE = (
    "INSERT INTO person_invites (token_hash, person_id, expires, used)"
    " VALUES (:token_hash, :person_id, :expires, NULL)"
)
#: The check and the use in one statement: a second use finds ``used`` set and changes nothing.
_USE_INVITE = (
    "UPDATE person_invites SET used = :now"
    " WHERE token_hash = :token_hash AND used IS NULL AND expires > :now"
    " AND person_id IN (SELECT id FROM people WHERE disabled IS NULL)"
    " RETURNING person_id"
)
_SET_PASSWORD = (
    f"UPDATE people SET password_hash = :password_hash WHERE id = :id RETURNING {_PERSON}"
)
_GET_PERSON = f"SELECT {_PERSON} FROM people WHERE id = :id"
_FIND_PERSON = f"SELECT {_PERSON} FROM people WHERE name = :name"
_LIST_PEOPLE = f"SELECT {_PERSON} FROM people ORDER BY created, id"
_SET_LANGUAGE = "UPDATE people SET language = :language WHERE id = :id"
#: The owner is never disabled: the statement does not touch the owner's row.
_DISABLE = (
    "UPDATE people SET disabled = coalesce(disabled, :now) WHERE id = :id AND role = 'person'"
)
_END_SESSIONS_OF = "DELETE FROM person_sessions WHERE person_id = :id"
#: Disabling voids what the person has not used yet: Enable must not revive it (SPEC §29).
_VOID_INVITES_OF = "DELETE FROM person_invites WHERE person_id = :id AND used IS NULL"
_VOID_CODES_OF = "DELETE FROM person_link_codes WHERE person_id = :id"
#: The count and the insert in one statement, under ``BEGIN IMMEDIATE``: a second writer
#: waits for the lock and then counts the first one's token.
_INSERT_TOKEN = (
    f"INSERT INTO person_tokens ({_TOKEN}) SELECT :id, :token_hash, :person_id, :label, :created"
    " WHERE (SELECT count(*) FROM person_tokens WHERE person_id = :person_id) < :limit"
)
_ACTIVE = "people.password_hash IS NOT NULL AND people.disabled IS NULL"
_PERSON_FOR_TOKEN = (
    f"SELECT {', '.join('people.' + c for c in PERSON_COLUMNS)} FROM person_tokens"
    f" JOIN people ON people.id = person_tokens.person_id"
    f" WHERE person_tokens.token_hash = :token_hash AND {_ACTIVE}"
)
_LIST_TOKENS = (
    f"SELECT {_TOKEN} FROM person_tokens WHERE person_id = :person_id"
    " ORDER BY created DESC, id DESC"
)
_REVOKE_TOKEN = "DELETE FROM person_tokens WHERE person_id = :person_id AND id = :id"  # noqa: S105 - SQL
_INSERT_SESSION = (
    f"INSERT INTO person_sessions ({_SESSION}) VALUES"
    " (:person_id, :id_hash, :csrf, :created, :last_seen, :expires, :flash)"
)
_GET_SESSION = (
    f"SELECT {', '.join('person_sessions.' + c for c in PERSON_SESSION_COLUMNS)}"
    " FROM person_sessions JOIN people ON people.id = person_sessions.person_id"
    f" WHERE person_sessions.id_hash = :id_hash AND {_ACTIVE}"
)
#: An UPDATE, never an upsert: a sign-out racing a page view stays a sign-out.
_SAVE_SESSION = (
    "UPDATE person_sessions SET last_seen = :last_seen, expires = :expires, flash = :flash"
    " WHERE id_hash = :id_hash"
)
_DELETE_SESSION = "DELETE FROM person_sessions WHERE id_hash = :id_hash"
_DELETE_EXPIRED = "DELETE FROM person_sessions WHERE expires <= :now"
#: A person forgotten (ADR 90): their rows in every table that names them, then them.
_DELETE_PERSON: tuple[LiteralString, ...] = (
    "DELETE FROM person_invites WHERE person_id = :id",
    "DELETE FROM person_tokens WHERE person_id = :id",
    "DELETE FROM person_sessions WHERE person_id = :id",
    "DELETE FROM person_link_codes WHERE person_id = :id",
    "DELETE FROM person_chats WHERE person_id = :id",
    "DELETE FROM people WHERE id = :id",
)
_ENABLE = "UPDATE people SET disabled = NULL WHERE id = :id"
_END_TOKENS_OF = "DELETE FROM person_tokens WHERE person_id = :id"
_END_CODES_OF = "DELETE FROM person_link_codes WHERE person_id = :person_id"
_INSERT_CODE = (
    "INSERT INTO person_link_codes (code_hash, person_id, expires, used)"
    " VALUES (:code_hash, :person_id, :expires, NULL)"
)
#: The check and the use in one statement: a second use finds ``used`` set and changes nothing.
_USE_CODE = (
    "UPDATE person_link_codes SET used = :now"
    " WHERE code_hash = :code_hash AND used IS NULL AND expires > :now"
    " AND person_id IN (SELECT id FROM people WHERE"
    " password_hash IS NOT NULL AND disabled IS NULL)"
    " RETURNING person_id"
)
_LINK_CHAT = (
    "INSERT INTO person_chats (chat_id, person_id, linked) VALUES (:chat_id, :person_id, :now)"
    " ON CONFLICT (chat_id) DO UPDATE SET person_id = excluded.person_id, linked = excluded.linked"
)
_CHAT = ", ".join(LINKED_CHAT_COLUMNS)
_PERSON_FOR_CHAT = (
    f"SELECT {', '.join('people.' + c for c in PERSON_COLUMNS)} FROM person_chats"
    " JOIN people ON people.id = person_chats.person_id"
    f" WHERE person_chats.chat_id = :chat_id AND {_ACTIVE}"
)
_LIST_CHATS = (
    f"SELECT {_CHAT} FROM person_chats WHERE person_id = :person_id"
    " ORDER BY linked DESC, chat_id DESC"
)
_UNLINK = "DELETE FROM person_chats WHERE chat_id = :chat_id"
_UNLINK_OF = "DELETE FROM person_chats WHERE chat_id = :chat_id AND person_id = :person_id"


class SqlitePeopleStore(SqliteStore):
    """The ``PeopleStore`` port on a SQLite file; ``await SqlitePeopleStore.open()`` makes one."""

    _what = "the people store"

    async def invite(self, person: Person, *, token_hash: str, lifetime: timedelta) -> Invite:
        """Store the person and the invite in one transaction; expiry from the store's clock."""
        return await self._call(_invite, person, token_hash, lifetime, self._clock)

    async def accept_invite(self, token_hash: str, *, password_hash: str) -> Person | None:
        """Use the invite once and set the password, in one write transaction."""
        return await self._call(_accept, token_hash, password_hash, self._clock)

    async def get_person(self, person_id: str) -> Person | None:
        """The person with this id, or None."""
        return await self._call(_one_person, _GET_PERSON, {"id": person_id})

    async def find_person(self, name: str) -> Person | None:
        """The person with this sign-in name, or None."""
        return await self._call(_one_person, _FIND_PERSON, {"name": name})

    async def list_people(self) -> list[Person]:
        """Every person, oldest first."""
        return await self._call(_all_people)

    async def find_owner(self) -> Person | None:
        """The owner, or None."""
        return await self._call(_one_person, _FIND_OWNER, {})

    async def create_owner(self, person: Person) -> bool:
        """Insert the owner unless one exists; a name already stored raises ``Conflict``."""
        params = _ROWS.person_params(person)
        return await self._call(_execute, _INSERT_OWNER, params) == 1

    async def set_password(self, person_id: str, password_hash: str) -> bool:
        """Replace the hash and delete the person's sessions, in one transaction."""
        return await self._call(_set_password, person_id, password_hash)

    async def disable_person(self, person_id: str, *, now: datetime) -> bool:
        """Disable the person, delete their sessions and unused invites and codes, at once."""
        return await self._call(_disable, person_id, now)

    async def set_person_language(self, person_id: str, language: str | None) -> bool:
        """Keep the person's language for the pages; False when unknown."""
        params = {"id": person_id, "language": language}
        return await self._call(_execute, _SET_LANGUAGE, params) == 1

    async def enable_person(self, person_id: str) -> bool:
        """Let the person sign in again and delete their tokens, in one transaction."""
        return await self._call(_enable, person_id)

    async def delete_person(self, person_id: str) -> bool:
        """Forget the person with their invites, tokens, sessions, codes and chat links."""
        return await self._call(_delete_person, person_id)

    async def make_link_code(
        self, person_id: str, *, code_hash: str, lifetime: timedelta
    ) -> LinkCode:
        """Replace the person's codes by this one; expiry from the store's clock."""
        return await self._call(_make_code, person_id, code_hash, lifetime, self._clock)

    async def use_link_code(self, code_hash: str, *, chat_id: int) -> Person | None:
        """Use the code once and link the chat, in one write transaction."""
        return await self._call(_use_code, code_hash, chat_id, self._clock)

    async def person_for_chat(self, chat_id: int) -> Person | None:
        """The active person the chat is linked to, or None."""
        return await self._call(_one_person, _PERSON_FOR_CHAT, {"chat_id": chat_id})

    async def list_linked_chats(self, person_id: str) -> list[LinkedChat]:
        """The person's linked chats, newest first."""
        return await self._call(_chats, person_id)

    async def unlink_chat(self, chat_id: int, *, person_id: str | None = None) -> bool:
        """Unlink the chat (only from ``person_id`` when given)."""
        if person_id is None:
            return await self._call(_execute, _UNLINK, {"chat_id": chat_id}) == 1
        params = {"chat_id": chat_id, "person_id": person_id}
        return await self._call(_execute, _UNLINK_OF, params) == 1

    async def add_token(self, token: PersonToken, *, limit: int = MAX_TOKENS_PER_PERSON) -> bool:
        """Insert the token unless its person holds ``limit``; a stored hash or id: ``Conflict``."""
        return await self._call(_add_token, {**_ROWS.token_params(token), "limit": limit})

    async def person_for_token(self, token_hash: str) -> Person | None:
        """The active person whose token this is, or None."""
        return await self._call(_one_person, _PERSON_FOR_TOKEN, {"token_hash": token_hash})

    async def list_tokens(self, person_id: str) -> list[PersonToken]:
        """The person's tokens, newest first."""
        return await self._call(_tokens, person_id)

    async def revoke_token(self, person_id: str, token_id: str) -> bool:
        """Delete the token when it is the person's."""
        params = {"person_id": person_id, "id": token_id}
        return await self._call(_execute, _REVOKE_TOKEN, params) == 1

    async def create_person_session(self, session: PersonSession) -> None:
        """Insert the session; a stored ``id_hash`` raises ``Conflict``."""
        await self._call(_execute, _INSERT_SESSION, _ROWS.session_params(session))

    async def get_person_session(self, id_hash: str) -> PersonSession | None:
        """The session of an active person, or None."""
        return await self._call(_get_session, id_hash)

    async def save_person_session(self, session: PersonSession) -> bool:
        """Update last seen, expiry and flash; False when the session is gone."""
        params = _ROWS.session_params(session)
        for column in ("person_id", "csrf", "created"):
            del params[column]
        return await self._call(_execute, _SAVE_SESSION, params) == 1

    async def delete_person_session(self, id_hash: str) -> None:
        """End one session."""
        await self._call(_execute, _DELETE_SESSION, {"id_hash": id_hash})

    async def delete_expired_person_sessions(self, *, now: datetime) -> int:
        """Remove sessions over at ``now``; how many."""
        return await self._call(_execute, _DELETE_EXPIRED, {"now": to_db(now)})


# The operations below run on the connection thread; each takes the connection first.


def _execute(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> int:
    return conn.execute(sql, params).rowcount


def _invite(
    conn: sqlite3.Connection, person: Person, token_hash: str, lifetime: timedelta, clock: Clock
) -> Invite:
    with immediate(conn):
        expires = clock.now() + lifetime
        conn.execute(_INSERT_PERSON, _ROWS.person_params(person))
        params = {"token_hash": token_hash, "person_id": person.id, "expires": to_db(expires)}
        conn.execute(_INSERT_INVITE, params)
    return Invite(token_hash=token_hash, person_id=person.id, expires=expires)


def _accept(
    conn: sqlite3.Connection, token_hash: str, password_hash: str, clock: Clock
) -> Person | None:
    with immediate(conn):
        now = to_db(clock.now())
        used = conn.execute(_USE_INVITE, {"now": now, "token_hash": token_hash}).fetchall()
        if not used:
            return None
        params = {"password_hash": password_hash, "id": used[0][0]}
        rows = conn.execute(_SET_PASSWORD, params).fetchall()
    return _ROWS.person_from_row(rows[0]) if rows else None


def _one_person(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> Person | None:
    rows = conn.execute(sql, params).fetchall()
    return _ROWS.person_from_row(rows[0]) if rows else None


def _all_people(conn: sqlite3.Connection) -> list[Person]:
    return [_ROWS.person_from_row(row) for row in conn.execute(_LIST_PEOPLE)]


def _set_password(conn: sqlite3.Connection, person_id: str, password_hash: str) -> bool:
    # One transaction: no moment exists where the new password is set and an old
    # session still opens pages, nor where sessions are gone but the old password works.
    with immediate(conn):
        params = {"password_hash": password_hash, "id": person_id}
        changed = len(conn.execute(_SET_PASSWORD, params).fetchall())
        conn.execute(_END_SESSIONS_OF, {"id": person_id})
    return changed == 1


def _disable(conn: sqlite3.Connection, person_id: str, now: datetime) -> bool:
    # One transaction: no moment exists where the person is disabled and a session still
    # opens, nor an invite or link code that Enable would bring back (SPEC §29).
    with immediate(conn):
        changed = conn.execute(_DISABLE, {"id": person_id, "now": to_db(now)}).rowcount
        if not changed:
            return False
        conn.execute(_END_SESSIONS_OF, {"id": person_id})
        conn.execute(_VOID_INVITES_OF, {"id": person_id})
        conn.execute(_VOID_CODES_OF, {"id": person_id})
    return changed == 1


def _delete_person(conn: sqlite3.Connection, person_id: str) -> bool:
    with immediate(conn):
        for statement in _DELETE_PERSON:
            changed = conn.execute(statement, {"id": person_id}).rowcount
    return changed == 1


def _add_token(conn: sqlite3.Connection, params: dict[str, Any]) -> bool:
    # The write lock first: a deferred transaction would count under a snapshot another
    # writer may commit past before this one's insert.
    with immediate(conn):
        return conn.execute(_INSERT_TOKEN, params).rowcount == 1


def _tokens(conn: sqlite3.Connection, person_id: str) -> list[PersonToken]:
    rows = conn.execute(_LIST_TOKENS, {"person_id": person_id})
    return [_ROWS.token_from_row(row) for row in rows]


def _get_session(conn: sqlite3.Connection, id_hash: str) -> PersonSession | None:
    rows = conn.execute(_GET_SESSION, {"id_hash": id_hash}).fetchall()
    return _ROWS.session_from_row(rows[0]) if rows else None


def _enable(conn: sqlite3.Connection, person_id: str) -> bool:
    # One transaction: the person is never active with a token from before the disabling.
    with immediate(conn):
        changed = conn.execute(_ENABLE, {"id": person_id}).rowcount
        conn.execute(_END_TOKENS_OF, {"id": person_id})
    return changed == 1


def _make_code(
    conn: sqlite3.Connection, person_id: str, code_hash: str, lifetime: timedelta, clock: Clock
) -> LinkCode:
    with immediate(conn):
        expires = clock.now() + lifetime
        conn.execute(_END_CODES_OF, {"person_id": person_id})
        params = {"code_hash": code_hash, "person_id": person_id, "expires": to_db(expires)}
        conn.execute(_INSERT_CODE, params)
    return LinkCode(code_hash=code_hash, person_id=person_id, expires=expires)


def _use_code(
    conn: sqlite3.Connection, code_hash: str, chat_id: int, clock: Clock
) -> Person | None:
    with immediate(conn):
        now = to_db(clock.now())
        used = conn.execute(_USE_CODE, {"now": now, "code_hash": code_hash}).fetchall()
        if not used:
            return None
        person_id = used[0][0]
        conn.execute(_LINK_CHAT, {"chat_id": chat_id, "person_id": person_id, "now": now})
        rows = conn.execute(_GET_PERSON, {"id": person_id}).fetchall()
    return _ROWS.person_from_row(rows[0]) if rows else None


def _chats(conn: sqlite3.Connection, person_id: str) -> list[LinkedChat]:
    rows = conn.execute(_LIST_CHATS, {"person_id": person_id})
    return [_ROWS.linked_chat_from_row(row) for row in rows]
