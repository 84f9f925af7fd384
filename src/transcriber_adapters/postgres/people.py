"""``PostgresPeopleStore``: the workspace's people, invites, tokens and sessions on PostgreSQL.

The same statements as SQLite's (``sqlite/people.py``) in PostgreSQL's
dialect. An invite's expiry is the database's clock (``NOW_SQL``: every
host judges one link alike, ADR 32); its use is one statement (a CTE that
marks the invite used and sets the password), so of racing uses exactly one
changes a row (ADR 55).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import LiteralString

from transcriber_adapters.postgres.clock import NOW_SQL, now_param
from transcriber_adapters.postgres.connection import Database
from transcriber_adapters.postgres.statements import ROWS
from transcriber_adapters.sql.people import (
    LINKED_CHAT_COLUMNS,
    PERSON_COLUMNS,
    PERSON_SESSION_COLUMNS,
    TOKEN_COLUMNS,
    PeopleRows,
)
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

_ROWS = PeopleRows(ROWS)
_PERSON = ", ".join(PERSON_COLUMNS)
_PEOPLE_PERSON = ", ".join(f"people.{column}" for column in PERSON_COLUMNS)
_TOKEN = ", ".join(TOKEN_COLUMNS)
_SESSION = ", ".join(PERSON_SESSION_COLUMNS)
_SESSIONS_SESSION = ", ".join(f"person_sessions.{column}" for column in PERSON_SESSION_COLUMNS)

_INSERT_PERSON = (
    f"INSERT INTO people ({_PERSON})"
    " VALUES (%(id)s, %(name)s, %(password_hash)s, %(created)s, %(disabled)s, %(role)s,"
    " %(language)s)"
)
#: One owner at most, however many processes race through setup: the partial unique
#: index of 0019 turns a second into "not created"; a name already stored still raises.
_INSERT_OWNER = f"{_INSERT_PERSON} ON CONFLICT (role) WHERE role = 'owner' DO NOTHING"
_FIND_OWNER = f"SELECT {_PERSON} FROM people WHERE role = 'owner'"
_SET_PASSWORD = "UPDATE people SET password_hash = %(password_hash)s WHERE id = %(id)s"  # noqa: S105
_INSERT_INVITE = (
    "INSERT INTO person_invites (token_hash, person_id, expires, used)"
    f" VALUES (%(token_hash)s, %(person_id)s, {NOW_SQL} + %(lifetime)s, NULL) RETURNING expires"
)
#: The check, the use and the password in one statement: a second use finds ``used`` set.
_ACCEPT = (
    f"WITH used AS (UPDATE person_invites SET used = {NOW_SQL}"
    f" WHERE token_hash = %(token_hash)s AND used IS NULL AND expires > {NOW_SQL}"
    " AND person_id IN (SELECT id FROM people WHERE disabled IS NULL) RETURNING person_id)"
    " UPDATE people SET password_hash = %(password_hash)s FROM used"
    f" WHERE people.id = used.person_id RETURNING {_PEOPLE_PERSON}"
)
_GET_PERSON = f"SELECT {_PERSON} FROM people WHERE id = %(id)s"
_FIND_PERSON = f"SELECT {_PERSON} FROM people WHERE name = %(name)s"
_LIST_PEOPLE = f"SELECT {_PERSON} FROM people ORDER BY created, id"
_SET_LANGUAGE = "UPDATE people SET language = %(language)s WHERE id = %(id)s"
#: The owner is never disabled: the statement does not touch the owner's row.
_DISABLE = (
    "UPDATE people SET disabled = coalesce(disabled, %(now)s) WHERE id = %(id)s AND role = 'person'"
)
_END_SESSIONS_OF = "DELETE FROM person_sessions WHERE person_id = %(id)s"
#: Taken first in ``add_token``'s transaction: adds for one person wait for each other here.
#: NO KEY UPDATE, so the foreign keys' checks (KEY SHARE) of the person's other rows go on.
_LOCK_PERSON = "SELECT 1 FROM people WHERE id = %(person_id)s FOR NO KEY UPDATE"
#: Disabling voids what the person has not used yet: Enable must not revive it (SPEC §29).
_VOID_INVITES_OF = "DELETE FROM person_invites WHERE person_id = %(id)s AND used IS NULL"
_VOID_CODES_OF = "DELETE FROM person_link_codes WHERE person_id = %(id)s"
#: Counted after the lock, in a statement of its own: under READ COMMITTED its snapshot
#: holds every token committed before the lock was granted.
_INSERT_TOKEN = (
    f"INSERT INTO person_tokens ({_TOKEN})"
    " SELECT %(id)s, %(token_hash)s, %(person_id)s, %(label)s, %(created)s"
    " WHERE (SELECT count(*) FROM person_tokens WHERE person_id = %(person_id)s) < %(limit)s"
)
_ACTIVE = "people.password_hash IS NOT NULL AND people.disabled IS NULL"
_PERSON_FOR_TOKEN = (
    f"SELECT {_PEOPLE_PERSON} FROM person_tokens"
    " JOIN people ON people.id = person_tokens.person_id"
    f" WHERE person_tokens.token_hash = %(token_hash)s AND {_ACTIVE}"
)
_LIST_TOKENS = (
    f"SELECT {_TOKEN} FROM person_tokens WHERE person_id = %(person_id)s"
    " ORDER BY created DESC, id DESC"
)
_REVOKE_TOKEN = "DELETE FROM person_tokens WHERE person_id = %(person_id)s AND id = %(id)s"  # noqa: S105 - SQL
_INSERT_SESSION = (
    f"INSERT INTO person_sessions ({_SESSION}) VALUES (%(person_id)s, %(id_hash)s, %(csrf)s,"
    " %(created)s, %(last_seen)s, %(expires)s, %(flash)s)"
)
_GET_SESSION = (
    f"SELECT {_SESSIONS_SESSION} FROM person_sessions"
    " JOIN people ON people.id = person_sessions.person_id"
    f" WHERE person_sessions.id_hash = %(id_hash)s AND {_ACTIVE}"
)
#: An UPDATE, never an upsert: a sign-out racing a page view stays a sign-out.
_SAVE_SESSION = (
    "UPDATE person_sessions SET last_seen = %(last_seen)s, expires = %(expires)s,"
    " flash = %(flash)s WHERE id_hash = %(id_hash)s"
)
_DELETE_SESSION = "DELETE FROM person_sessions WHERE id_hash = %(id_hash)s"
_DELETE_EXPIRED = "DELETE FROM person_sessions WHERE expires <= %(now)s"
#: A person forgotten (ADR 90): their rows in every table that names them, then them.
_DELETE_PERSON: tuple[LiteralString, ...] = (
    "DELETE FROM person_invites WHERE person_id = %(id)s",
    "DELETE FROM person_tokens WHERE person_id = %(id)s",
    "DELETE FROM person_sessions WHERE person_id = %(id)s",
    "DELETE FROM person_link_codes WHERE person_id = %(id)s",
    "DELETE FROM person_chats WHERE person_id = %(id)s",
    "DELETE FROM people WHERE id = %(id)s",
)
_ENABLE = "UPDATE people SET disabled = NULL WHERE id = %(id)s"
_END_TOKENS_OF = "DELETE FROM person_tokens WHERE person_id = %(id)s"
_END_CODES_OF = "DELETE FROM person_link_codes WHERE person_id = %(person_id)s"
_INSERT_CODE = (
    "INSERT INTO person_link_codes (code_hash, person_id, expires, used)"
    f" VALUES (%(code_hash)s, %(person_id)s, {NOW_SQL} + %(lifetime)s, NULL) RETURNING expires"
)
#: The check, the use and the link in one statement: a second use finds ``used`` set.
_USE_CODE = (
    f"WITH used AS (UPDATE person_link_codes SET used = {NOW_SQL}"
    f" WHERE code_hash = %(code_hash)s AND used IS NULL AND expires > {NOW_SQL}"
    " AND person_id IN (SELECT id FROM people WHERE"
    " password_hash IS NOT NULL AND disabled IS NULL) RETURNING person_id),"
    " linked AS (INSERT INTO person_chats (chat_id, person_id, linked)"
    f" SELECT %(chat_id)s, person_id, {NOW_SQL} FROM used"
    " ON CONFLICT (chat_id) DO UPDATE SET person_id = excluded.person_id,"
    " linked = excluded.linked RETURNING person_id)"
    f" SELECT {_PEOPLE_PERSON} FROM people JOIN linked ON people.id = linked.person_id"
)
_PERSON_FOR_CHAT = (
    f"SELECT {_PEOPLE_PERSON} FROM person_chats"
    " JOIN people ON people.id = person_chats.person_id"
    f" WHERE person_chats.chat_id = %(chat_id)s AND {_ACTIVE}"
)
_LIST_CHATS = (
    f"SELECT {', '.join(LINKED_CHAT_COLUMNS)} FROM person_chats"
    " WHERE person_id = %(person_id)s ORDER BY linked DESC, chat_id DESC"
)
_UNLINK = "DELETE FROM person_chats WHERE chat_id = %(chat_id)s"
_UNLINK_OF = "DELETE FROM person_chats WHERE chat_id = %(chat_id)s AND person_id = %(person_id)s"


class PostgresPeopleStore:
    """The ``PeopleStore`` port on a PostgreSQL ``Database`` (shared with the other stores)."""

    def __init__(self, database: Database, *, clock: Clock | None = None) -> None:
        """Use ``database``'s pool; invites judged by ``clock`` when given, else the database's."""
        self._db = database
        self._clock = clock
        #: True when ``open`` made the database, so ``close`` closes it too.
        self._owns_database = False

    @classmethod
    async def open(cls, url: str, *, clock: Clock | None = None) -> PostgresPeopleStore:
        """A store on a pool of its own to ``url``, migrated; ``close`` closes both."""
        store = cls(await Database.open(url, pool_size=2), clock=clock)
        store._owns_database = True
        return store

    async def invite(self, person: Person, *, token_hash: str, lifetime: timedelta) -> Invite:
        """Store the person and the invite in one transaction; expiry on the database's clock."""
        async with self._db.transaction() as conn:
            await conn.execute(_INSERT_PERSON, _ROWS.person_params(person))
            params = {
                "token_hash": token_hash,
                "person_id": person.id,
                "lifetime": lifetime,
                "now": now_param(self._clock),
            }
            cursor = await conn.execute(_INSERT_INVITE, params)
            row = await cursor.fetchone()
        if row is None:  # pragma: no cover - an INSERT … RETURNING returns its row
            raise AssertionError("the invite was not stored")
        return Invite(token_hash=token_hash, person_id=person.id, expires=row[0])

    async def accept_invite(self, token_hash: str, *, password_hash: str) -> Person | None:
        """Use the invite once and set the password, in one statement."""
        params = {
            "token_hash": token_hash,
            "password_hash": password_hash,
            "now": now_param(self._clock),
        }
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_ACCEPT, params)
            row = await cursor.fetchone()
        return None if row is None else _ROWS.person_from_row(row)

    async def get_person(self, person_id: str) -> Person | None:
        """The person with this id, or None."""
        row = await self._db.fetchone(_GET_PERSON, {"id": person_id})
        return None if row is None else _ROWS.person_from_row(row)

    async def find_person(self, name: str) -> Person | None:
        """The person with this sign-in name, or None."""
        row = await self._db.fetchone(_FIND_PERSON, {"name": name})
        return None if row is None else _ROWS.person_from_row(row)

    async def list_people(self) -> list[Person]:
        """Every person, oldest first."""
        return [_ROWS.person_from_row(row) for row in await self._db.fetchall(_LIST_PEOPLE)]

    async def find_owner(self) -> Person | None:
        """The owner, or None."""
        row = await self._db.fetchone(_FIND_OWNER, {})
        return None if row is None else _ROWS.person_from_row(row)

    async def create_owner(self, person: Person) -> bool:
        """Insert the owner unless one exists; a name already stored raises ``Conflict``."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_INSERT_OWNER, _ROWS.person_params(person))
        return cursor.rowcount == 1

    async def set_password(self, person_id: str, password_hash: str) -> bool:
        """Replace the hash and delete the person's sessions, in one transaction."""
        async with self._db.transaction() as conn:
            params = {"password_hash": password_hash, "id": person_id}
            cursor = await conn.execute(_SET_PASSWORD, params)
            await conn.execute(_END_SESSIONS_OF, {"id": person_id})
        return cursor.rowcount == 1

    async def disable_person(self, person_id: str, *, now: datetime) -> bool:
        """Disable the person, delete their sessions and unused invites and codes, at once."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_DISABLE, {"id": person_id, "now": now})
            if cursor.rowcount != 1:
                return False
            await conn.execute(_END_SESSIONS_OF, {"id": person_id})
            await conn.execute(_VOID_INVITES_OF, {"id": person_id})
            await conn.execute(_VOID_CODES_OF, {"id": person_id})
        return cursor.rowcount == 1

    async def set_person_language(self, person_id: str, language: str | None) -> bool:
        """Keep the person's language for the pages; False when unknown."""
        return await self._db.execute(_SET_LANGUAGE, {"id": person_id, "language": language}) == 1

    async def enable_person(self, person_id: str) -> bool:
        """Let the person sign in again and delete their tokens, in one transaction."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_ENABLE, {"id": person_id})
            await conn.execute(_END_TOKENS_OF, {"id": person_id})
        return cursor.rowcount == 1

    async def delete_person(self, person_id: str) -> bool:
        """Forget the person with their invites, tokens, sessions, codes and chat links."""
        async with self._db.transaction() as conn:
            for statement in _DELETE_PERSON:
                cursor = await conn.execute(statement, {"id": person_id})
        return cursor.rowcount == 1

    async def make_link_code(
        self, person_id: str, *, code_hash: str, lifetime: timedelta
    ) -> LinkCode:
        """Replace the person's codes by this one; expiry on the database's clock."""
        params = {
            "code_hash": code_hash,
            "person_id": person_id,
            "lifetime": lifetime,
            "now": now_param(self._clock),
        }
        async with self._db.transaction() as conn:
            await conn.execute(_END_CODES_OF, {"person_id": person_id})
            cursor = await conn.execute(_INSERT_CODE, params)
            row = await cursor.fetchone()
        if row is None:  # pragma: no cover - an INSERT … RETURNING returns its row
            raise AssertionError("the link code was not stored")
        return LinkCode(code_hash=code_hash, person_id=person_id, expires=row[0])

    async def use_link_code(self, code_hash: str, *, chat_id: int) -> Person | None:
        """Use the code once and link the chat, in one statement."""
        params = {"code_hash": code_hash, "chat_id": chat_id, "now": now_param(self._clock)}
        async with self._db.transaction() as conn:
            cursor = await conn.execute(_USE_CODE, params)
            row = await cursor.fetchone()
        return None if row is None else _ROWS.person_from_row(row)

    async def person_for_chat(self, chat_id: int) -> Person | None:
        """The active person the chat is linked to, or None."""
        row = await self._db.fetchone(_PERSON_FOR_CHAT, {"chat_id": chat_id})
        return None if row is None else _ROWS.person_from_row(row)

    async def list_linked_chats(self, person_id: str) -> list[LinkedChat]:
        """The person's linked chats, newest first."""
        rows = await self._db.fetchall(_LIST_CHATS, {"person_id": person_id})
        return [_ROWS.linked_chat_from_row(row) for row in rows]

    async def unlink_chat(self, chat_id: int, *, person_id: str | None = None) -> bool:
        """Unlink the chat (only from ``person_id`` when given)."""
        if person_id is None:
            return await self._db.execute(_UNLINK, {"chat_id": chat_id}) == 1
        params = {"chat_id": chat_id, "person_id": person_id}
        return await self._db.execute(_UNLINK_OF, params) == 1

    async def add_token(self, token: PersonToken, *, limit: int = MAX_TOKENS_PER_PERSON) -> bool:
        """Insert the token unless its person holds ``limit``; a stored hash or id: ``Conflict``."""
        params = {**_ROWS.token_params(token), "limit": limit}
        async with self._db.transaction() as conn:
            await conn.execute(_LOCK_PERSON, params)
            cursor = await conn.execute(_INSERT_TOKEN, params)
        return cursor.rowcount == 1

    async def person_for_token(self, token_hash: str) -> Person | None:
        """The active person whose token this is, or None."""
        row = await self._db.fetchone(_PERSON_FOR_TOKEN, {"token_hash": token_hash})
        return None if row is None else _ROWS.person_from_row(row)

    async def list_tokens(self, person_id: str) -> list[PersonToken]:
        """The person's tokens, newest first."""
        rows = await self._db.fetchall(_LIST_TOKENS, {"person_id": person_id})
        return [_ROWS.token_from_row(row) for row in rows]

    async def revoke_token(self, person_id: str, token_id: str) -> bool:
        """Delete the token when it is the person's."""
        params = {"person_id": person_id, "id": token_id}
        return await self._db.execute(_REVOKE_TOKEN, params) == 1

    async def create_person_session(self, session: PersonSession) -> None:
        """Insert the session; a stored ``id_hash`` raises ``Conflict``."""
        await self._db.execute(_INSERT_SESSION, _ROWS.session_params(session))

    async def get_person_session(self, id_hash: str) -> PersonSession | None:
        """The session of an active person, or None."""
        row = await self._db.fetchone(_GET_SESSION, {"id_hash": id_hash})
        return None if row is None else _ROWS.session_from_row(row)

    async def save_person_session(self, session: PersonSession) -> bool:
        """Update last seen, expiry and flash; False when the session is gone."""
        return await self._db.execute(_SAVE_SESSION, _ROWS.session_params(session)) == 1

    async def delete_person_session(self, id_hash: str) -> None:
        """End one session."""
        await self._db.execute(_DELETE_SESSION, {"id_hash": id_hash})

    async def delete_expired_person_sessions(self, *, now: datetime) -> int:
        """Remove sessions over at ``now``; how many."""
        return await self._db.execute(_DELETE_EXPIRED, {"now": now})

    async def close(self) -> None:
        """Close the pool ``open`` made; a shared ``Database`` is closed by whoever opened it."""
        if self._owns_database:
            self._owns_database = False
            await self._db.close()
