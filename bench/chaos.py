"""The chaos bench (issue 26): a deployment under seeded faults for a while, then its invariants.

serve + 3 workers on a private PostgreSQL this run starts, moto S3 on a
fixed port, the fake SpeechKit and Bot API, a webhook receiver checking
signatures (tests/support/chaos.py, the same run as tests/chaos in CI,
longer). Uploads come over HTTP and Telegram at ``--rate`` per second for
``--duration`` seconds while each fault kind strikes ``--rounds`` times
(kills twice as often) at moments drawn from ``--seed``: SIGKILL of a worker
or of serve (restarted at once), ``pg_ctl restart -m immediate``, S3 down
``--outage`` seconds, SpeechKit answering 500 and 429 for ``--storm``
seconds each, the workers' disk (a tmpfs) full for ``--disk`` seconds.

Prints the seed, what it injected, each invariant's figure, and the time
from each fault's end until every process answered /health 200 and work
went on (p50 and max per kind). Exits 1 when an invariant broke;
``--seed`` replays the same schedule and uploads. Needs root (the tmpfs)
and PostgreSQL's initdb and pg_ctl.

Usage: .venv/bin/python bench/chaos.py [--seed N] [--duration 600] [--rate 1] [--rounds 4]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/queue.py would shadow the stdlib ``queue``; the repository root holds tests.support.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402 - after the path
import logging  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
from collections import defaultdict  # noqa: E402

from tests.support.chaos import Fault, Report, run  # noqa: E402


def recovery_table(report: Report, *, alone: bool = False) -> list[str]:
    """Per fault kind: how many, and p50 and max seconds from its end to full recovery.

    ``alone``: only the faults no other fault overlapped, from their start to
    their recovery: a fault struck while another one's outage lasts can only
    recover with it, so the first table counts the other's time too.
    """
    by_kind: dict[str, list[float]] = defaultdict(list)
    lost: dict[str, int] = defaultdict(int)
    for fault, took in report.recoveries:
        if alone and (took is None or overlapped(report, fault, took)):
            continue
        if took is None:
            lost[fault.kind] += 1
        else:
            by_kind[fault.kind].append(took)
    what = "faults no other overlapped" if alone else "every fault"
    lines = [f"recovery, {what} (its end to every /health 200 and work going on):"]
    everything = [took for times in by_kind.values() for took in times]
    for kind in sorted(set(by_kind) | set(lost)):
        times = by_kind.get(kind, [])
        p50 = f"{statistics.median(times):5.1f}" if times else "    -"
        worst = f"{max(times):5.1f}" if times else "    -"
        extra = f", {lost[kind]} not recovered" if lost.get(kind) else ""
        lines.append(
            f"  {kind:17} n={len(times) + lost.get(kind, 0):2}  p50 {p50} s  max {worst} s{extra}"
        )
    if everything:
        lines.append(
            f"  {'all':17} n={len(everything):2}  p50 {statistics.median(everything):5.1f} s"
            f"  max {max(everything):5.1f} s"
        )
    return lines


def overlapped(report: Report, fault: Fault, took: float) -> bool:
    """Whether another planned fault was under way between ``fault``'s start and its recovery."""
    until = fault.at + fault.seconds + took
    return any(
        other is not fault and other.at < until and other.at + other.seconds > fault.at
        for other in report.plan.faults
    )


def main() -> int:
    """Run the bench; 0 when every invariant held."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="default: a random one, printed")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of uploads")
    parser.add_argument("--rate", type=float, default=1.0, help="uploads per second")
    parser.add_argument("--rounds", type=int, default=None, help="default: one per 150 s")
    parser.add_argument("--outage", type=float, default=20.0, help="seconds S3 is down")
    parser.add_argument("--storm", type=float, default=15.0, help="seconds of each SpeechKit storm")
    parser.add_argument("--disk", type=float, default=10.0, help="seconds the disk is full")
    parser.add_argument("--quiet-timeout", type=float, default=180.0)
    parser.add_argument(
        "--starts-per-hour",
        type=int,
        default=36000,
        help="SpeechKit async starts per hour the service paces to (its real quota is 500,"
        " which admits ~0.1 uploads/s; the fake has none)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the run's folder (logs)")
    args = parser.parse_args()
    # moto's server logs every request; the report is what this prints.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    rounds = args.rounds or max(1, round(args.duration / 150))
    root = Path(tempfile.mkdtemp(prefix=f"chaos-{seed}-"))
    print(
        f"chaos: seed {seed}, SpeechKit quota {args.starts_per_hour} starts/h, run folder {root}",
        flush=True,
    )
    try:
        report = run(
            seed,
            root / "run",
            duration=args.duration,
            rate=args.rate,
            rounds=rounds,
            quiet_timeout=args.quiet_timeout,
            starts_per_hour=args.starts_per_hour,
            outage_seconds=args.outage,
            storm_seconds=args.storm,
            disk_seconds=args.disk,
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(report.text())
    print("\n".join(recovery_table(report)))
    print("\n".join(recovery_table(report, alone=True)))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
