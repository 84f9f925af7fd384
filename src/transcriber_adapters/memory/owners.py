"""``MemoryOwnerStore``: the owner, sessions and login failures in dicts, as SQLite keeps them."""

from __future__ import annotations

from datetime import datetime

import attrs

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.entities import LoginFailures, OwnerSession
from transcriber_core.errors import Conflict


class MemoryOwnerStore:
    """The owner store in memory: for demos, tests and a single process.

    Behaves as ``SqliteOwnerStore`` does, down to the errors. The
    database's lock makes every method atomic, from tasks and from threads
    alike, across every store on that ``database``. The owner store keeps
    its callers' ``now`` (API processes only, ADR 30).
    """

    def __init__(self, *, database: MemoryDatabase | None = None) -> None:
        self._db = database_for(None, database)
        self._lock = self._db.lock
        #: Names of the methods called so far, in order, for tests that need to look.
        self.calls: list[str] = []

    @property
    def database(self) -> MemoryDatabase:
        """The data this store works on; give it to another store to share it."""
        return self._db

    def reset(self) -> None:
        """Forget the owner, every session, every failure and every recorded call."""
        with self._lock:
            self._db.owner_hash = None
            self._db.sessions.clear()
            self._db.failures.clear()
            self.calls.clear()

    async def get_owner_hash(self) -> str | None:
        """The owner's password hash, or None while no owner exists."""
        with self._lock:
            self.calls.append("get_owner_hash")
            return self._db.owner_hash

    async def create_owner(self, password_hash: str, *, now: datetime) -> bool:
        """Store the owner's password hash; False, storing nothing, when an owner exists."""
        with self._lock:
            self.calls.append("create_owner")
            if self._db.owner_hash is not None:
                return False
            self._db.owner_hash = password_hash
            return True

    async def change_password(self, password_hash: str, *, now: datetime) -> bool:
        """Replace the owner's hash and end every session, at once; False when no owner exists."""
        with self._lock:
            self.calls.append("change_password")
            if self._db.owner_hash is None:
                return False
            self._db.owner_hash = password_hash
            self._db.sessions.clear()
            return True

    async def create_session(self, session: OwnerSession) -> None:
        """Store a new session; an ``id_hash`` already stored raises ``Conflict``."""
        with self._lock:
            self.calls.append("create_session")
            if session.id_hash in self._db.sessions:
                raise Conflict()
            self._db.sessions[session.id_hash] = session

    async def get_session(self, id_hash: str) -> OwnerSession | None:
        """The session stored under ``id_hash``, expired or not; None when there is none."""
        with self._lock:
            self.calls.append("get_session")
            return self._db.sessions.get(id_hash)

    async def save_session(self, session: OwnerSession) -> bool:
        """Write the session's ``last_seen``, ``expires`` and ``flash``; False when it is gone."""
        with self._lock:
            self.calls.append("save_session")
            stored = self._db.sessions.get(session.id_hash)
            if stored is None:
                return False
            self._db.sessions[session.id_hash] = attrs.evolve(
                stored, last_seen=session.last_seen, expires=session.expires, flash=session.flash
            )
            return True

    async def delete_session(self, id_hash: str) -> None:
        """End one session; nothing happens when it does not exist."""
        with self._lock:
            self.calls.append("delete_session")
            self._db.sessions.pop(id_hash, None)

    async def delete_expired_sessions(self, *, now: datetime) -> int:
        """Remove the sessions whose ``expires`` is not after ``now``; how many there were."""
        with self._lock:
            self.calls.append("delete_expired_sessions")
            over = [key for key, session in self._db.sessions.items() if session.expires <= now]
            for key in over:
                del self._db.sessions[key]
            return len(over)

    async def get_login_failures(self, client: str) -> LoginFailures | None:
        """The failures counted for ``client``, or None."""
        with self._lock:
            self.calls.append("get_login_failures")
            return self._db.failures.get(client)

    async def save_login_failures(
        self, failures: LoginFailures, *, previous: LoginFailures | None
    ) -> bool:
        """Store ``failures`` if what is stored for its client is still ``previous``."""
        if previous is not None and previous.client != failures.client:
            raise ValueError("previous failures belong to another client")
        with self._lock:
            self.calls.append("save_login_failures")
            if self._db.failures.get(failures.client) != previous:
                return False
            self._db.failures[failures.client] = failures
            return True

    async def clear_login_failures(self, client: str) -> None:
        """Forget ``client``'s failures."""
        with self._lock:
            self.calls.append("clear_login_failures")
            self._db.failures.pop(client, None)

    async def forget_login_failures(self, *, before: datetime) -> int:
        """Remove failures last counted before ``before``; how many clients were forgotten."""
        with self._lock:
            self.calls.append("forget_login_failures")
            old = [client for client, seen in self._db.failures.items() if seen.last < before]
            for client in old:
                del self._db.failures[client]
            return len(old)

    async def close(self) -> None:
        """Nothing to release; the records stay readable for tests that look afterwards."""
        with self._lock:
            self.calls.append("close")
