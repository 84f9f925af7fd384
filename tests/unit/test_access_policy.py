"""The pure session and login back-off decisions of ``transcriber_core.policy`` (ADR 17)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from transcriber_core.entities import LoginFailures, SessionLogin
from transcriber_core.policy import (
    AccessSettings,
    login_backoff,
    login_failed,
    login_wait,
    session_expiry,
    session_is_live,
    session_touched,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = AccessSettings()
SECOND = timedelta(seconds=1)


def _session(last_seen: datetime) -> SessionLogin:
    return SessionLogin(
        id_hash="h",
        csrf="c",
        created=T0,
        last_seen=last_seen,
        expires=session_expiry(T0, last_seen, SETTINGS),
    )


@pytest.mark.parametrize(("count", "seconds"), [(1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (99, 60)])
def test_each_failure_doubles_the_wait_up_to_the_cap(count: int, seconds: int) -> None:
    """1 s after the first wrong password, doubling, never more than a minute."""
    assert login_backoff(count, SETTINGS) == timedelta(seconds=seconds)


def test_a_client_never_seen_may_try() -> None:
    """No failures, no wait."""
    assert login_wait(None, T0, SETTINGS) is None


def test_the_wait_counts_from_the_last_failure() -> None:
    """After three failures the client waits 4 s from the last one, then may try."""
    failures = LoginFailures(client="c", count=3, last=T0)
    assert login_wait(failures, T0 + SECOND, SETTINGS) == 3 * SECOND
    assert login_wait(failures, T0 + 4 * SECOND, SETTINGS) is None


def test_old_failures_are_forgotten() -> None:
    """A client quiet for ``login_forget`` starts afresh: its next failure is the first."""
    failures = LoginFailures(client="c", count=30, last=T0)
    later = T0 + SETTINGS.login_forget
    assert login_wait(failures, later, SETTINGS) is None
    assert login_failed("c", failures, later, SETTINGS).count == 1
    assert login_failed("c", failures, T0 + SECOND, SETTINGS).count == 31


def test_session_expiry_is_idle_or_absolute_whichever_first() -> None:
    """Idle time counts from the last request, the lifetime from the login."""
    assert session_expiry(T0, T0, SETTINGS) == T0 + SETTINGS.session_idle
    late = T0 + SETTINGS.session_lifetime - timedelta(minutes=5)
    assert session_expiry(T0, late, SETTINGS) == T0 + SETTINGS.session_lifetime


def test_a_session_is_refused_from_its_expiry_on() -> None:
    """Live up to the microsecond before ``expires``, dead at it."""
    session = _session(T0)
    assert session_is_live(session, session.expires - timedelta(microseconds=1))
    assert not session_is_live(session, session.expires)


def test_last_seen_is_written_at_most_once_a_minute() -> None:
    """A page view within the touch interval writes nothing; later ones move the expiry."""
    session = _session(T0)
    assert session_touched(session, T0 + 59 * SECOND, SETTINGS) is None
    touched = session_touched(session, T0 + timedelta(minutes=1), SETTINGS)
    assert touched is not None
    assert touched.last_seen == T0 + timedelta(minutes=1)
    assert touched.expires == T0 + timedelta(minutes=1) + SETTINGS.session_idle


def test_settings_refuse_a_touch_longer_than_the_idle_time() -> None:
    """A touch interval past the idle time would end busy sessions; it is refused."""
    with pytest.raises(ValueError, match="session_touch"):
        AccessSettings(session_touch=timedelta(hours=2))
