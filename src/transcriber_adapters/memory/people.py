"""``MemoryPeopleStore``: the workspace's people, invites, tokens and sessions in dicts (ADR 55)."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.errors import Conflict
from transcriber_core.people import (
    MAX_TOKENS_PER_PERSON,
    Invite,
    LinkCode,
    LinkedChat,
    Person,
    PersonSession,
    PersonToken,
    Role,
)
from transcriber_core.ports import Clock


class MemoryPeopleStore:
    """The people store in memory: for demos, tests and a single process.

    Behaves as ``SqlitePeopleStore`` does, down to the errors. The
    database's lock makes every method atomic, from tasks and threads alike,
    across every store on that ``database``; invites are judged by the
    database's clock, as the SQL stores judge them by theirs.
    """

    def __init__(
        self, clock: Clock | None = None, *, database: MemoryDatabase | None = None
    ) -> None:
        self._db = database_for(clock, database)
        self._lock = self._db.lock
        #: Names of the methods called so far, in order, for tests that need to look.
        self.calls: list[str] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget every person, invite, token, session and recorded call."""
        with self._lock:
            self._db.people.clear()
            self._db.invites.clear()
            self._db.person_tokens.clear()
            self._db.person_sessions.clear()
            self._db.link_codes.clear()
            self._db.person_chats.clear()
            self.calls.clear()

    def _active(self, person_id: str) -> Person | None:
        person = self._db.people.get(person_id)
        return person if person is not None and person.is_active else None

    async def invite(self, person: Person, *, token_hash: str, lifetime: timedelta) -> Invite:
        """Store the person and the invite; expiry from the database's clock."""
        with self._lock:
            self.calls.append("invite")
            taken = person.id in self._db.people or any(
                other.name == person.name for other in self._db.people.values()
            )
            if taken or token_hash in self._db.invites:
                raise Conflict()
            invite = Invite(
                token_hash=token_hash, person_id=person.id, expires=self._db.clock.now() + lifetime
            )
            self._db.people[person.id] = person
            self._db.invites[token_hash] = (invite, False)
            return invite

    async def accept_invite(self, token_hash: str, *, password_hash: str) -> Person | None:
        """Use the invite once and set the password; None when it cannot be used."""
        with self._lock:
            self.calls.append("accept_invite")
            found = self._db.invites.get(token_hash)
            if found is None:
                return None
            invite, used = found
            person = self._db.people.get(invite.person_id)
            if used or self._db.clock.now() >= invite.expires:
                return None
            if person is None or person.disabled is not None:
                return None
            self._db.invites[token_hash] = (invite, True)
            person = attrs.evolve(person, password_hash=password_hash)
            self._db.people[person.id] = person
            return person

    async def get_person(self, person_id: str) -> Person | None:
        """The person with this id, or None."""
        with self._lock:
            self.calls.append("get_person")
            return self._db.people.get(person_id)

    async def find_person(self, name: str) -> Person | None:
        """The person with this sign-in name, or None."""
        with self._lock:
            self.calls.append("find_person")
            return next((p for p in self._db.people.values() if p.name == name), None)

    async def list_people(self) -> list[Person]:
        """Every person, oldest first."""
        with self._lock:
            self.calls.append("list_people")
            return sorted(self._db.people.values(), key=lambda person: (person.created, person.id))

    async def find_owner(self) -> Person | None:
        """The owner, or None."""
        with self._lock:
            self.calls.append("find_owner")
            return next((p for p in self._db.people.values() if p.is_owner), None)

    async def create_owner(self, person: Person) -> bool:
        """Store the owner unless one exists; a name or id already stored raises ``Conflict``."""
        with self._lock:
            self.calls.append("create_owner")
            if any(other.is_owner for other in self._db.people.values()):
                return False
            if person.id in self._db.people or any(
                other.name == person.name for other in self._db.people.values()
            ):
                raise Conflict()
            self._db.people[person.id] = attrs.evolve(person, role=Role.OWNER)
            return True

    async def set_password(self, person_id: str, password_hash: str) -> bool:
        """Replace the person's hash and end their sessions, at once."""
        with self._lock:
            self.calls.append("set_password")
            person = self._db.people.get(person_id)
            if person is None:
                return False
            self._db.people[person_id] = attrs.evolve(person, password_hash=password_hash)
            self._end_sessions_of(person_id)
            return True

    def _end_sessions_of(self, person_id: str) -> None:
        sessions = self._db.person_sessions
        for key in [key for key, each in sessions.items() if each.person_id == person_id]:
            del sessions[key]

    async def disable_person(self, person_id: str, *, now: datetime) -> bool:
        """Disable the person, end their sessions and void their unused invites and codes."""
        with self._lock:
            self.calls.append("disable_person")
            person = self._db.people.get(person_id)
            if person is None or person.is_owner:
                return False
            if person.disabled is None:
                self._db.people[person_id] = attrs.evolve(person, disabled=now)
            self._end_sessions_of(person_id)
            invites = self._db.invites
            mine = [k for k, (i, used) in invites.items() if i.person_id == person_id and not used]
            for key in mine:
                del invites[key]
            codes = self._db.link_codes
            for key in [key for key, (each, _) in codes.items() if each.person_id == person_id]:
                del codes[key]
            return True

    async def set_person_language(self, person_id: str, language: str | None) -> bool:
        """Keep the person's language for the pages; False when unknown."""
        with self._lock:
            self.calls.append("set_person_language")
            person = self._db.people.get(person_id)
            if person is None:
                return False
            self._db.people[person_id] = attrs.evolve(person, language=language)
            return True

    async def enable_person(self, person_id: str) -> bool:
        """Let the person sign in again, their tokens deleted."""
        with self._lock:
            self.calls.append("enable_person")
            person = self._db.people.get(person_id)
            if person is None:
                return False
            self._db.people[person_id] = attrs.evolve(person, disabled=None)
            tokens = self._db.person_tokens
            for key in [key for key, each in tokens.items() if each.person_id == person_id]:
                del tokens[key]
            return True

    async def delete_person(self, person_id: str) -> bool:
        """Forget the person with their invites, tokens, sessions, codes and chat links."""
        with self._lock:
            self.calls.append("delete_person")
            db = self._db
            if db.people.pop(person_id, None) is None:
                return False
            for key in [k for k, (each, _) in db.invites.items() if each.person_id == person_id]:
                del db.invites[key]
            for key in [k for k, each in db.person_tokens.items() if each.person_id == person_id]:
                del db.person_tokens[key]
            sessions = db.person_sessions
            for key in [k for k, each in sessions.items() if each.person_id == person_id]:
                del sessions[key]
            for key in [k for k, (each, _) in db.link_codes.items() if each.person_id == person_id]:
                del db.link_codes[key]
            for chat in [k for k, each in db.person_chats.items() if each.person_id == person_id]:
                del db.person_chats[chat]
            return True

    async def make_link_code(
        self, person_id: str, *, code_hash: str, lifetime: timedelta
    ) -> LinkCode:
        """Store the person's one live code; expiry from the database's clock."""
        with self._lock:
            self.calls.append("make_link_code")
            codes = self._db.link_codes
            for key in [key for key, (each, _) in codes.items() if each.person_id == person_id]:
                del codes[key]
            if code_hash in codes:
                raise Conflict()
            code = LinkCode(
                code_hash=code_hash, person_id=person_id, expires=self._db.clock.now() + lifetime
            )
            codes[code_hash] = (code, False)
            return code

    async def use_link_code(self, code_hash: str, *, chat_id: int) -> Person | None:
        """Use the code once and link the chat to its active person."""
        with self._lock:
            self.calls.append("use_link_code")
            found = self._db.link_codes.get(code_hash)
            now = self._db.clock.now()
            if found is None or found[1] or now >= found[0].expires:
                return None
            person = self._active(found[0].person_id)
            if person is None:
                return None
            self._db.link_codes[code_hash] = (found[0], True)
            self._db.person_chats[chat_id] = LinkedChat(
                chat_id=chat_id, person_id=person.id, linked=now
            )
            return person

    async def person_for_chat(self, chat_id: int) -> Person | None:
        """The active person the chat is linked to, or None."""
        with self._lock:
            self.calls.append("person_for_chat")
            link = self._db.person_chats.get(chat_id)
            return None if link is None else self._active(link.person_id)

    async def list_linked_chats(self, person_id: str) -> list[LinkedChat]:
        """The person's linked chats, newest first."""
        with self._lock:
            self.calls.append("list_linked_chats")
            mine = [c for c in self._db.person_chats.values() if c.person_id == person_id]
        return sorted(mine, key=lambda chat: (chat.linked, chat.chat_id), reverse=True)

    async def unlink_chat(self, chat_id: int, *, person_id: str | None = None) -> bool:
        """Unlink the chat (only from ``person_id`` when given)."""
        with self._lock:
            self.calls.append("unlink_chat")
            link = self._db.person_chats.get(chat_id)
            if link is None or (person_id is not None and link.person_id != person_id):
                return False
            del self._db.person_chats[chat_id]
            return True

    async def add_token(self, token: PersonToken, *, limit: int = MAX_TOKENS_PER_PERSON) -> bool:
        """Store the token unless its person holds ``limit``; a stored hash or id: ``Conflict``."""
        with self._lock:
            self.calls.append("add_token")
            tokens = self._db.person_tokens
            if token.token_hash in tokens or any(t.id == token.id for t in tokens.values()):
                raise Conflict()
            if sum(t.person_id == token.person_id for t in tokens.values()) >= limit:
                return False
            tokens[token.token_hash] = token
            return True

    async def person_for_token(self, token_hash: str) -> Person | None:
        """The active person whose token this is, or None."""
        with self._lock:
            self.calls.append("person_for_token")
            token = self._db.person_tokens.get(token_hash)
            return None if token is None else self._active(token.person_id)

    async def list_tokens(self, person_id: str) -> list[PersonToken]:
        """The person's tokens, newest first."""
        with self._lock:
            self.calls.append("list_tokens")
            mine = [t for t in self._db.person_tokens.values() if t.person_id == person_id]
        return sorted(mine, key=lambda token: (token.created, token.id), reverse=True)

    async def revoke_token(self, person_id: str, token_id: str) -> bool:
        """Delete the token when it is the person's."""
        with self._lock:
            self.calls.append("revoke_token")
            for key, token in self._db.person_tokens.items():
                if token.id == token_id and token.person_id == person_id:
                    del self._db.person_tokens[key]
                    return True
            return False

    async def create_person_session(self, session: PersonSession) -> None:
        """Store the session; a stored ``id_hash`` raises ``Conflict``."""
        with self._lock:
            self.calls.append("create_person_session")
            key = session.login.id_hash
            if key in self._db.person_sessions:
                raise Conflict()
            self._db.person_sessions[key] = session

    async def get_person_session(self, id_hash: str) -> PersonSession | None:
        """The session of an active person, or None."""
        with self._lock:
            self.calls.append("get_person_session")
            session = self._db.person_sessions.get(id_hash)
            if session is None or self._active(session.person_id) is None:
                return None
            return session

    async def save_person_session(self, session: PersonSession) -> bool:
        """Write last seen, expiry and flash; False when the session is gone."""
        with self._lock:
            self.calls.append("save_person_session")
            key = session.login.id_hash
            stored = self._db.person_sessions.get(key)
            if stored is None:
                return False
            login = attrs.evolve(
                stored.login,
                last_seen=session.login.last_seen,
                expires=session.login.expires,
                flash=session.login.flash,
            )
            self._db.person_sessions[key] = attrs.evolve(stored, login=login)
            return True

    async def delete_person_session(self, id_hash: str) -> None:
        """End one session."""
        with self._lock:
            self.calls.append("delete_person_session")
            self._db.person_sessions.pop(id_hash, None)

    async def delete_expired_person_sessions(self, *, now: datetime) -> int:
        """Remove sessions over at ``now``; how many."""
        with self._lock:
            self.calls.append("delete_expired_person_sessions")
            sessions = self._db.person_sessions
            over = [key for key, each in sessions.items() if each.login.expires <= now]
            for key in over:
                del sessions[key]
            return len(over)

    async def close(self) -> None:
        """Nothing to release; the records stay readable for tests that look afterwards."""
        with self._lock:
            self.calls.append("close")
