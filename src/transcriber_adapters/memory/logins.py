"""``MemoryLoginThrottle``: the sign-in's back-off in a dict, as SQLite keeps it."""

from __future__ import annotations

from datetime import datetime

from transcriber_adapters.memory.database import MemoryDatabase, database_for
from transcriber_core.entities import LoginFailures


class MemoryLoginThrottle:
    """The login throttle in memory: for demos, tests and a single process.

    Behaves as ``SqliteLoginThrottle`` does. The database's lock makes every
    method atomic, from tasks and from threads alike, across every store on
    that ``database``. The throttle keeps its callers' ``now`` (API
    processes only, ADR 30).
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
        """Forget every failure and every recorded call."""
        with self._lock:
            self._db.failures.clear()
            self.calls.clear()

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
