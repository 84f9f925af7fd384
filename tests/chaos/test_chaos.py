"""The chaos run in CI (issue 26): a short seeded run of ``tests/support/chaos.py``, ≤ 3 min.

serve + 3 workers on a private PostgreSQL, moto S3 on a fixed port, the fake
SpeechKit and Bot API and a webhook receiver; 30 uploads over 60 s while
the schedule of seed ``CHAOS_SEED`` (default 26) kills workers and the API
process, restarts PostgreSQL, stops S3 for 20 s, storms SpeechKit with 500s
and 429s and fills the workers' disk. Then every invariant must hold. A
failure prints the report; ``CHAOS_SEED=<seed>`` (or
``bench/chaos.py --seed <seed> --duration 60 --rate 0.5``) replays it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.chaos import KINDS, run

#: Under 3 minutes on a quiet 2-CPU box; the bound is for a box shared with other work.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

#: The seed CI runs; set CHAOS_SEED to replay another.
SEED = int(os.environ.get("CHAOS_SEED", "26"))


def test_a_deployment_under_seeded_faults_loses_nothing(tmp_path: Path) -> None:
    """Kills, a PostgreSQL restart, S3 down, SpeechKit storms, a full disk: every invariant held."""
    # Paced to a raised SpeechKit quota, as bench/chaos.py is. At SpeechKit's default 500
    # starts an hour the starts past the budget wait their turns one 7.2 s apart (ADR 61),
    # and with the faults' retries a run outlasted a fixed quiet deadline (CI, 2026-12-03: 41
    # of 50 recognised at 180 s, none lost); the quiet timeout now counts only time in which
    # nothing moved. Faults are what this run is for; pacing has its own tests
    # (test_parts_paced.py, test_speechkit_paths.py, the budget contract).
    report = run(
        SEED, tmp_path, duration=60.0, rate=0.5, quiet_timeout=180.0, starts_per_hour=36000
    )
    print(report.text())  # noqa: T201 - the evidence, shown with -s and on failure
    assert report.ok, report.text()
    # Every fault kind was injected and every fault was recovered from.
    assert {fault.kind for fault, _ in report.recoveries} == set(KINDS)
    assert all(took is not None for _, took in report.recoveries), report.text()
