"""A 1 GiB multipart upload to the running service over loopback: speed, memory, disk writes.

Prints its figures; the numbers in docs/benchmarks.md come from here.

The service runs as in production (``python -m transcriber_app serve``, a
subprocess, through ``tests/support/service.py``), with its data dir and
its TMPDIR on one filesystem so the staged upload is renamed into storage,
not copied. The client streams the multipart body from a generator (one
random mebibyte sent again and again) with a ``Content-Length``.

Figures, all read from /proc/<server pid>:
- seconds from the first byte sent to the 202, and MiB/s;
- server RSS before the upload (VmRSS), and its peak during the upload
  (VmHWM, reset through /proc/<pid>/clear_refs just before sending);
- bytes the server process wrote to disk (``write_bytes`` in /proc/<pid>/io)
  during the upload, as a ratio to the upload's size.

A/B: ``--variants stock,limited`` (the default) runs the same upload
against each HTTP protocol of ``bench/server_variants.py`` in turn, a fresh
server for each, alternating round by round so the disk's drift falls on
both; a summary per variant closes the run.

With ``--key`` each upload carries an Idempotency-Key (so the server also
computes its SHA-256) and is then sent again with the same key: the replay
is read and hashed, not written, and its time, CPU and disk writes are
printed too (ADR 21).

With ``--s3`` the service keeps its files in a bucket of moto's S3 server
(a child process on 127.0.0.1; ``[storage] files = "s3"``, ADR 33): the
202 then comes after the staged upload has been sent to the bucket part by
part, and the staging file is gone.

Usage: .venv/bin/python bench/upload.py [--mib 1024] [--chunk-kib 1024] [--rounds 1]
       [--variants stock,h11,limited] [--key] [--s3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support.service, the real-server harness

from bench.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY, moto_process  # noqa: E402
from bench.server_variants import VARIANTS, command  # noqa: E402
from tests.support.service import running_service  # noqa: E402 - needs ROOT on the path

MIB = 1024 * 1024
BOUNDARY = "bench-boundary-7c1d2b9e"


def multipart_body(size: int, chunk: bytes) -> tuple[int, Iterator[bytes]]:
    """The total length and the chunks of a form whose ``file`` field holds ``size`` bytes."""
    head = (
        f"--{BOUNDARY}\r\n"
        'Content-Disposition: form-data; name="file"; filename="bench.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        left = size
        while left > 0:
            piece = chunk if left >= len(chunk) else chunk[:left]
            yield piece
            left -= len(piece)
        yield tail

    return len(head) + size + len(tail), chunks()


def proc_status(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/<pid>/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak(pid: int) -> None:
    """Make VmHWM start again from the current RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def write_bytes(pid: int) -> int:
    """Bytes the process caused to be written to storage so far."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    raise KeyError("write_bytes")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def s3_config(endpoint: str, bucket: str) -> dict[str, Any]:
    """The ``[s3]`` section for a fresh bucket on moto at ``endpoint``."""
    import boto3  # noqa: PLC0415 - only with --s3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY_ID,
        aws_secret_access_key=SECRET_ACCESS_KEY,
    ).create_bucket(Bucket=bucket)
    return {
        "endpoint_url": endpoint,
        "bucket": bucket,
        "access_key_id": ACCESS_KEY_ID,
        "secret_access_key": SECRET_ACCESS_KEY,
        "path_style": True,
    }


def upload_once(
    variant: str,
    size: int,
    chunk: bytes,
    round_no: int,
    *,
    key: bool = False,
    s3_endpoint: str | None = None,
) -> tuple[float, float, float]:
    """One upload to a fresh server running ``variant``; MiB/s, peak RSS and its growth (MiB)."""
    mib = size / MIB
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config: dict[str, Any] = {
            "storage": {"max_record_bytes": 8 * 1024 * MIB},
            # The convert step of random bytes fails fast; keep it from retrying during the run.
            "queue": {"max_attempts": 1},
        }
        if s3_endpoint is not None:
            config["storage"]["files"] = "s3"
            config["s3"] = s3_config(s3_endpoint, f"bench-{variant}-{round_no}")
        env = {"AWS_EC2_METADATA_DISABLED": "true"}
        with running_service(root, config=config, command=command(variant), env=env) as service:
            pid = service.pid
            same_fs = service.temp_dir.stat().st_dev == service.data_dir.parent.stat().st_dev
            # No timeout: the figure is how long the upload takes, however long.
            with httpx.Client(base_url=service.base_url, timeout=None) as client:  # noqa: S113
                startup_peak = proc_status(pid, "VmHWM")
                reset_peak(pid)
                baseline = proc_status(pid, "VmRSS")
                written_before = write_bytes(pid)
                cpu_before = cpu_seconds(pid)
                length, body = multipart_body(size, chunk)
                headers = {
                    "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
                    "Content-Length": str(length),
                }
                if key:
                    headers["Idempotency-Key"] = f"bench-{round_no}"
                started = time.perf_counter()
                response = client.post("/api/audio", content=body, headers=headers)
                seconds = time.perf_counter() - started
                written = write_bytes(pid) - written_before
                cpu = cpu_seconds(pid) - cpu_before
                peak = proc_status(pid, "VmHWM")
                assert response.status_code == 202, response.text
                if key:
                    replay(client, pid, size, chunk, headers)
            staged = sum(path.stat().st_size for path in (service.data_dir / "tmp").iterdir())
            service.stop()
    print(
        f"round {round_no} {variant}: {mib:.0f} MiB in {seconds:.2f} s"
        f" = {mib / seconds:.0f} MiB/s; server CPU {cpu:.2f} s ({cpu / seconds:.0%} of one core)"
    )
    print(
        f"  start-up peak {startup_peak / MIB:.1f} MiB; RSS before {baseline / MIB:.1f} MiB,"
        f" peak during the upload {peak / MIB:.1f} MiB (+{(peak - baseline) / MIB:.1f} MiB);"
        f" disk writes {written / size:.3f} x the upload; one filesystem: {same_fs};"
        f" staging bytes left after the 202: {staged}"
    )
    return mib / seconds, peak / MIB, (peak - baseline) / MIB


def replay(
    client: httpx.Client, pid: int, size: int, chunk: bytes, headers: dict[str, str]
) -> None:
    """Send the same upload again with its key and print what the replay cost the server."""
    written_before = write_bytes(pid)
    cpu_before = cpu_seconds(pid)
    _, body = multipart_body(size, chunk)
    started = time.perf_counter()
    response = client.post("/api/audio", content=body, headers=headers)
    seconds = time.perf_counter() - started
    assert response.status_code == 202, response.text
    assert response.headers["idempotent-replayed"] == "true"
    cpu = cpu_seconds(pid) - cpu_before
    written = write_bytes(pid) - written_before
    print(
        f"  replay: {size / MIB / seconds:.0f} MiB/s; server CPU {cpu:.2f} s;"
        f" disk writes {written / size:.3f} x the upload"
    )


def run(
    mib: int,
    chunk_kib: int,
    rounds: int,
    variants: list[str],
    *,
    key: bool = False,
    s3: bool = False,
) -> None:
    """Upload ``rounds`` times to each variant in turn, print each run and a summary."""
    size = mib * MIB
    chunk = os.urandom(chunk_kib * 1024)
    results: dict[str, list[tuple[float, float, float]]] = {variant: [] for variant in variants}
    with contextlib.ExitStack() as stack:
        endpoint = stack.enter_context(moto_process()) if s3 else None
        for round_no in range(1, rounds + 1):
            for variant in variants:
                results[variant].append(
                    upload_once(variant, size, chunk, round_no, key=key, s3_endpoint=endpoint)
                )
    print(f"summary, {rounds} round(s) of {mib} MiB:")
    for variant, runs in results.items():
        speeds = [speed for speed, _, _ in runs]
        print(
            f"  {variant:8} MiB/s min {min(speeds):.0f} median {statistics.median(speeds):.0f}"
            f" max {max(speeds):.0f}; peak RSS max {max(peak for _, peak, _ in runs):.1f} MiB"
            f" (growth max +{max(growth for _, _, growth in runs):.1f} MiB)"
        )


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="recording size in MiB")
    parser.add_argument("--chunk-kib", type=int, default=1024, help="client write size in KiB")
    parser.add_argument("--rounds", type=int, default=1, help="uploads per variant")
    parser.add_argument(
        "--variants",
        default="stock,limited",
        help=f"comma-separated HTTP protocols to compare, of {', '.join(VARIANTS)}",
    )
    parser.add_argument(
        "--key", action="store_true", help="send an Idempotency-Key, then replay each upload"
    )
    parser.add_argument(
        "--s3", action="store_true", help='[storage] files = "s3" on a moto server (ADR 33)'
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    run(args.mib, args.chunk_kib, args.rounds, variants, key=args.key, s3=args.s3)


if __name__ == "__main__":
    main()
