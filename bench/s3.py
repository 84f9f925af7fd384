"""A 1 GiB upload from disk through ``S3FileStore.put`` to moto's S3 server: speed, client memory.

Prints its figures; the numbers in docs/benchmarks.md come from here.

moto runs in its own process (``python -m moto.server`` on 127.0.0.1), so
the memory measured is the client's alone: this process, which writes the
file, opens the store and uploads. The file is random bytes from
``os.urandom``, written before the clock starts.

Figures, read from /proc/self/status:
- seconds for ``put`` (multipart: create, N parts, complete) and MiB/s;
- RSS before the upload (VmRSS, with the S3 client already open) and the
  peak during it (VmHWM, reset just before through /proc/self/clear_refs).

The server side is moto's werkzeug dev server in Python, so the speed is
moto's, not the client's or a real store's; the memory figure is the point.

Usage: .venv/bin/python bench/s3.py [--mib 1024] [--part-mib 8]
"""

# ruff: noqa: E402 - the imports must follow the sys.path fix below
from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py shares its name with the stdlib module ``queue``, which
# urllib3 (under botocore) imports: keep this folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import boto3
from botocore.config import Config

from transcriber_adapters.s3 import S3FileStore

MIB = 1024 * 1024
ACCESS_KEY_ID = "AKIDBENCHBENCHBENCH0"
SECRET_ACCESS_KEY = "bench-secret-that-signs-nothing-real"  # noqa: S105 - moto takes any key
BUCKET = "bench-bucket"
FILE_ID = "YmVuY2gtdXBsb2FkLWZpbGUtMDE"


def status_kib(field: str) -> int:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def reset_peak() -> bool:
    """Set VmHWM back to the current RSS (Linux >= 4.0); False when the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def moto_process() -> Iterator[str]:
    """moto's S3 server in a child process on 127.0.0.1; yields its endpoint URL."""
    port = free_port()
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    child = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(timeout=30)


def write_random(path: Path, size: int) -> None:
    """``size`` random bytes, a mebibyte at a time so writing costs no memory."""
    with path.open("wb") as writer:
        left = size
        while left > 0:
            piece = os.urandom(min(MIB, left))
            writer.write(piece)
            left -= len(piece)


async def upload(
    endpoint: str, source: Path, size: int, part_size: int
) -> tuple[float, int, int, bool]:
    """Put ``source``; return seconds, RSS before (KiB), peak RSS during (KiB), peak was reset."""
    store = S3FileStore(
        endpoint_url=endpoint,
        region="ru-central1",
        bucket=BUCKET,
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
        path_style=True,
        part_size=part_size,
        staging_dir=source.parent / "staging",
    )
    try:
        warm = source.with_name("warm.bin")
        warm.write_bytes(b"warm-up")
        await store.put("d2FybS11cA", ".bin", warm, now=datetime.now(UTC), move=True)
        before = status_kib("VmRSS")
        was_reset = reset_peak()
        started = time.perf_counter()
        record = await store.put(FILE_ID, ".ogg", source, now=datetime.now(UTC))
        seconds = time.perf_counter() - started
        peak = status_kib("VmHWM")
        assert record.size == size
        return seconds, before, peak, was_reset
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="file size in MiB")
    parser.add_argument("--part-mib", type=int, default=8, help="multipart part size in MiB")
    args = parser.parse_args()
    size = args.mib * MIB

    with tempfile.TemporaryDirectory(prefix="bench-s3-") as folder, moto_process() as endpoint:
        source = Path(folder) / "recording.bin"
        began = time.perf_counter()
        write_random(source, size)
        print(f"wrote {args.mib} MiB of os.urandom in {time.perf_counter() - began:.1f} s")
        admin = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
            config=Config(s3={"addressing_style": "path"}),
        )
        admin.create_bucket(Bucket=BUCKET)

        measured = asyncio.run(upload(endpoint, source, size, args.part_mib * MIB))
        seconds, before, peak, was_reset = measured

        head = admin.head_object(Bucket=BUCKET, Key=f"transcriber/{FILE_ID}.ogg")
        assert head["ContentLength"] == size, head["ContentLength"]
        parts = head["ETag"].strip('"').rsplit("-", 1)[-1]
        print(f"uploaded {args.mib} MiB in {parts} parts of {args.part_mib} MiB")
        print(f"time {seconds:.1f} s, {args.mib / seconds:.0f} MiB/s")
        print(f"client RSS before upload {before / 1024:.1f} MiB (S3 client open)")
        label = "peak during upload" if was_reset else "peak since start (reset refused)"
        print(f"client {label} {peak / 1024:.1f} MiB; growth {(peak - before) / 1024:.1f} MiB")
        print("goal: client peak RSS <= 150 MiB")


if __name__ == "__main__":
    main()
