"""CPU that uvicorn's httptools protocol and ours spend on a request body, without the network.

Prints its figures; the numbers in docs/benchmarks.md come from here.

Each protocol gets a stand-in transport and an app that reads the body to
the end; one request's headers, then ``--mib`` MiB of body in
``--read-kib`` KiB reads, each followed by one pass of the event loop (as
uvloop would hand them over). The figure is process CPU time for the body:
what the header limits cost an upload once the headers are done, apart
from the disk, the client and the machine's other load.

Usage: .venv/bin/python bench/http_protocol.py [--mib 1024] [--read-kib 64] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from transcriber_app.config import HttpConfig
from transcriber_app.web.connections import protocol_for

KIB = 1024


async def drain_app(scope: Any, receive: Any, send: Any) -> None:
    """Read the whole body, then answer 200."""
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


class StandInTransport(asyncio.Transport):
    """A transport that drops what is written and says where it is connected."""

    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """Local and peer addresses, as a TCP transport gives them."""
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(
            name, default
        )

    def write(self, data: Any) -> None:
        """Drop the answer."""

    def is_closing(self) -> bool:
        """Whether ``close`` was called."""
        return self.closing

    def close(self) -> None:
        """Remember the close."""
        self.closing = True

    def pause_reading(self) -> None:
        """Nothing to pause."""

    def resume_reading(self) -> None:
        """Nothing to resume."""


async def body_cpu(protocol_class: type[HttpToolsProtocol], mib: int, read_kib: int) -> float:
    """CPU seconds ``protocol_class`` spends receiving ``mib`` MiB of one request's body."""
    config = uvicorn.Config(drain_app, lifespan="off", log_config=None)
    config.load()
    protocol = protocol_class(config, ServerState(), {})
    protocol.connection_made(StandInTransport())
    read = b"x" * (read_kib * KIB)
    reads = mib * KIB // read_kib
    protocol.data_received(
        b"POST /api/audio HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
        % (reads * len(read))
    )
    await asyncio.sleep(0)
    started = time.process_time()
    for _ in range(reads):
        protocol.data_received(read)
        await asyncio.sleep(0)
    return time.process_time() - started


async def main_async(mib: int, read_kib: int, rounds: int) -> None:
    """Alternate the two protocols ``rounds`` times; print each figure."""
    variants = {"stock": HttpToolsProtocol, "ours": protocol_for(HttpConfig())}
    for round_no in range(1, rounds + 1):
        for name, protocol_class in variants.items():
            seconds = await body_cpu(protocol_class, mib, read_kib)
            print(
                f"round {round_no} {name}: {seconds:.3f} s CPU, {mib} MiB in {read_kib} KiB reads"
            )


def main() -> None:
    """Parse the arguments and run on uvloop, as the service does."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="body size in MiB")
    parser.add_argument("--read-kib", type=int, default=64, help="bytes per read, in KiB")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each protocol")
    args = parser.parse_args()
    import uvloop  # noqa: PLC0415 - the service's loop

    uvloop.run(main_async(args.mib, args.read_kib, args.rounds))


if __name__ == "__main__":
    main()
