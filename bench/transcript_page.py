"""The transcript page of a 3-hour recording (issue 23, ADR 56): render, size, interactivity.

Builds a synthetic done job directly in a SQLite runtime: 3 hours, about
30,000 words in turns of three speakers, its converted audio a 3-hour
8 kHz WAV of silence (86 MB, so seeking goes through HTTP Range). Then:

- server render: ``GET /w/recordings/{id}`` in-process (the job's read from
  SQLite included), p50 and p95 over ``--runs``; the page's size, raw and gzipped;
- in Debian Chromium over a real uvicorn on 127.0.0.1: time to interactive
  (navigation start to the end of DOMContentLoaded, when the deferred
  ``player.js`` has indexed the words and attached its handlers), p50 over
  ``--loads``, and the long tasks (> 50 ms) seen while loading;
- during ``--play`` seconds of playback from 1:30:00: the long tasks, and
  how many words were lit (``aria-current``) in that time.

Usage: .venv/bin/python bench/transcript_page.py [--words 30000] [--runs 20] [--loads 5] [--play 8]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/queue.py would shadow the stdlib ``queue``; the repository root holds tests.support.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402 - after the path
import asyncio  # noqa: E402
import gzip  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import wave  # noqa: E402
from typing import Any  # noqa: E402

import uvicorn  # noqa: E402
from tests.app.test_workspace import SECRET, csrf, invite, set_password  # noqa: E402
from tests.service.test_admin_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.support.admin import OWNER_NAME, PASSWORD, in_process_client, make_owner  # noqa: E402
from tests.support.service import free_port  # noqa: E402

from transcriber_app.bootstrap import Runtime, build  # noqa: E402
from transcriber_app.config import Config, HttpConfig, StorageConfig  # noqa: E402
from transcriber_app.web import create_app  # noqa: E402
from transcriber_core.entities import Job, Origin, Speaker, State, Word  # noqa: E402

#: The recording's length: 3 hours.
SECONDS = 3 * 3600
#: What the synthetic speakers say, a word at a time.
SENTENCE = (
    "the harbour boats leave at dawn and come back by noon with fish for market while gulls "
    "follow them over grey water we talked about weather prices nets engines children school "
    "winter storms old captains new rules quota season"
)
VOCABULARY = SENTENCE.split()


def silent_wav(path: Path, seconds: int, rate: int = 8000) -> Path:
    """``seconds`` of 8-bit mono silence at ``rate`` Hz."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        second = b"\x80" * rate
        for _ in range(seconds):
            out.writeframesraw(second)
    return path


def synthetic_words(count: int, seconds: float, seed: int = 23) -> tuple[Word, ...]:
    """``count`` words spread over ``seconds``: sentences of 6 to 16, turns of 1 to 6 sentences."""
    rng = random.Random(seed)
    step = seconds / count
    words: list[Word] = []
    speaker, sentences_left, sentence_left = 1, rng.randint(1, 6), rng.randint(6, 16)
    for index in range(count):
        start = index * step
        text = rng.choice(VOCABULARY)
        sentence_left -= 1
        if sentence_left == 0:
            text += rng.choice((".", ".", "?"))
            sentence_left = rng.randint(6, 16)
            sentences_left -= 1
        words.append(Word(text=text, start=start, end=start + step * 0.8, speaker=f"S{speaker}"))
        if sentences_left == 0:
            speaker = speaker % 3 + 1
            sentences_left = rng.randint(1, 6)
    return tuple(words)


async def make_job(runtime: Runtime, folder: Path, owner: str, count: int) -> Job:
    """The done 3-hour job of ``owner`` with ``count`` words and its WAV in the file store."""
    services = runtime.services
    audio = silent_wav(folder / "converted.wav", SECONDS)
    now = services.clock.now()
    record = await services.files.put(services.ids.new_id(), ".wav", audio, now=now, move=True)
    words = synthetic_words(count, SECONDS)
    job = Job(
        id=services.ids.new_id(),
        state=State.DONE,
        origin=Origin.http(),
        converted_file_id=record.id,
        duration=float(SECONDS),
        text=" ".join(word.text for word in words),
        words=words,
        speakers=tuple(Speaker(id=f"S{i}", name=f"Speaker {i}") for i in (1, 2, 3)),
        owner=owner,
        created=now,
        updated=now,
    )
    stored, _ = await services.jobs.create(job, files=[record])
    return stored


async def person_client(runtime: Runtime) -> Any:
    """The person "reader", invited by the owner and signed in, as an in-process client."""
    await make_owner(runtime)
    owner = in_process_client(runtime)
    page = await owner.get("/admin/login")
    await owner.post(
        "/admin/login",
        data={"csrf": csrf(page.text), "name": OWNER_NAME, "password": PASSWORD, "next": "/admin/"},
    )
    client = in_process_client(runtime)
    answer = await set_password(client, await invite(owner, "reader"), SECRET)
    assert answer.status_code == 303, answer.text
    await owner.aclose()
    return client


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def server_render(client: Any, url: str, runs: int) -> tuple[list[float], bytes]:
    """Milliseconds of each ``GET`` of the page, and its body."""
    times: list[float] = []
    body = b""
    for _ in range(runs + 1):
        began = time.perf_counter()
        answer = await client.get(url)
        elapsed = (time.perf_counter() - began) * 1000
        assert answer.status_code == 200, answer.status_code
        body = answer.content
        times.append(elapsed)
    return times[1:], body  # the first warms the template cache


#: Collects long tasks from the page's start (an init script: CDP, not subject to the CSP).
OBSERVE = """
window.__long = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    window.__long.push({ start: entry.startTime, duration: entry.duration });
  }
}).observe({ type: "longtask", buffered: true });
"""


async def in_browser(base_url: str, url: str, loads: int, play: float) -> dict[str, Any]:
    """Time to interactive over ``loads`` loads, and long tasks while loading and playing."""
    from playwright.async_api import async_playwright  # noqa: PLC0415 - optional in dev

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[*CHROMIUM_ARGS, "--autoplay-policy=no-user-gesture-required"],
            headless=True,
        )
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        await context.add_init_script(OBSERVE)
        page = await context.new_page()
        await page.goto(base_url + "/w/login")
        await page.fill("#name", "reader")
        await page.fill("#password", SECRET)
        await page.click("button[type=submit]")
        await page.wait_for_url("**/w/")
        ready: list[float] = []
        phases: list[tuple[float, float, float]] = []
        loading_long: list[float] = []
        for _ in range(loads):
            await page.goto(base_url + url, wait_until="load")
            timing = await page.evaluate(
                "() => performance.getEntriesByType('navigation')[0].toJSON()"
            )
            ready.append(timing["domContentLoadedEventEnd"])
            phases.append(
                (timing["responseStart"], timing["responseEnd"], timing["domInteractive"])
            )
            loading_long.extend(t["duration"] for t in await page.evaluate("() => window.__long"))
        await page.wait_for_function(
            "() => document.getElementById('player').readyState >= 1", timeout=30_000
        )
        # The same page left alone as long: what a loaded machine stretches without our work.
        await page.evaluate("() => { window.__long = []; }")
        await page.wait_for_timeout(play * 1000)
        idle = await page.evaluate("() => window.__long.map((t) => t.duration)")
        await page.evaluate(
            """() => {
                window.__long = [];
                window.__lit = new Set();
                const article = document.getElementById("transcript");
                new MutationObserver((changes) => {
                  for (const change of changes) {
                    if (change.target.getAttribute("aria-current") === "true") {
                      window.__lit.add(change.target.dataset.i);
                    }
                  }
                }).observe(article, { subtree: true, attributeFilter: ["aria-current"] });
                document.getElementById("player").currentTime = 5400;
            }"""
        )
        # Paused, the page does not follow the lit word: this is the seek alone.
        await page.wait_for_timeout(1500)
        sought = await page.evaluate("() => window.__long.map((t) => t.duration)")
        await page.evaluate(
            """() => {
                window.__long = [];
                window.__seek = performance.now();
                return document.getElementById("player").play();
            }"""
        )
        began = time.perf_counter()
        await page.wait_for_timeout(play * 1000)
        played = await page.evaluate(
            """() => {
                const audio = document.getElementById("player");
                audio.pause();
                return {
                  at: audio.currentTime,
                  seek: window.__long.filter((t) => t.start < window.__seek + 1000)
                    .map((t) => t.duration),
                  long: window.__long.filter((t) => t.start >= window.__seek + 1000)
                    .map((t) => t.duration),
                  lit: window.__lit.size,
                  current: document.querySelectorAll('span.w[aria-current="true"]').length,
                };
            }"""
        )
        wall = time.perf_counter() - began
        await browser.close()
    return {
        "ready": ready,
        "phases": phases,
        "loading_long": loading_long,
        "played": played,
        "idle": idle,
        "sought": sought,
        "wall": wall,
    }


async def main(args: argparse.Namespace) -> None:
    """Build the job, measure, print."""
    with tempfile.TemporaryDirectory(prefix="transcript-bench-") as folder:
        root = Path(folder)
        config = Config(
            storage=StorageConfig(data_dir=root / "data"),
            http=HttpConfig(host="127.0.0.1", port=free_port()),
        )
        runtime = await build(config)
        try:
            client = await person_client(runtime)
            reader = await runtime.people.find_person("reader")
            assert reader is not None
            job = await make_job(runtime, root, reader.owner_key, args.words)
            url = f"/w/recordings/{job.id}"
            reads = []
            for _ in range(args.runs):
                began = time.perf_counter()
                await runtime.services.jobs.get(job.id, owned_by=reader.owner_key)
                reads.append((time.perf_counter() - began) * 1000)
            print(f"the job's read from SQLite alone: p50 {quantile(reads, 0.5):.0f} ms")
            times, body = await server_render(client, url, args.runs)
            await client.aclose()
            turns = body.count(b'<p class="turn"')
            print(f"words {len(job.words)}, turns {turns}")
            print(
                f"server render (GET, SQLite read included): p50 {quantile(times, 0.5):.0f} ms,"
                f" p95 {quantile(times, 0.95):.0f} ms over {len(times)} runs"
            )
            packed = len(gzip.compress(body))
            print(f"page size {len(body) / 1e6:.2f} MB, gzipped {packed / 1e6:.2f} MB")
            port = config.http.port
            server = uvicorn.Server(
                uvicorn.Config(
                    create_app(runtime), host="127.0.0.1", port=port, log_level="warning"
                )
            )
            serving = asyncio.create_task(server.serve())
            while not server.started:  # noqa: ASYNC110 - uvicorn has no event for it
                await asyncio.sleep(0.05)
            try:
                seen = await in_browser(f"http://127.0.0.1:{port}", url, args.loads, args.play)
            finally:
                server.should_exit = True
                await serving
        finally:
            await runtime.close()
    ready = seen["ready"]
    print(
        f"time to interactive (DOMContentLoaded end): p50 {statistics.median(ready):.0f} ms,"
        f" max {max(ready):.0f} ms over {len(ready)} loads"
    )
    first, last, parsed = (statistics.median(p[i] for p in seen["phases"]) for i in range(3))
    print(
        f"  of which: first byte {first:.0f} ms, last byte {last:.0f} ms,"
        f" parsed (domInteractive) {parsed:.0f} ms"
    )
    loading = seen["loading_long"]
    print(
        f"long tasks while loading: {len(loading)} over {len(ready)} loads,"
        f" longest {max(loading, default=0):.0f} ms"
    )
    idle = seen["idle"]
    print(
        f"idle {args.play:.0f} s, no playback: {len(idle)} long tasks"
        f" (longest {max(idle, default=0):.0f} ms)"
    )
    played = seen["played"]
    sought = seen["sought"]
    print(
        f"a seek to 1:30:00, paused: {len(sought)} long tasks"
        f" (longest {max(sought, default=0):.0f} ms)"
    )
    print(
        f"play from there, its first second (the page scrolls to the word):"
        f" {len(played['seek'])} long tasks"
        f" (longest {max(played['seek'], default=0):.0f} ms)"
    )
    print(
        f"playback {seen['wall']:.1f} s (to {played['at']:.1f} s), after its first second:"
        f" {len(played['long'])} long tasks (longest {max(played['long'], default=0):.0f} ms),"
        f" {played['lit']} words lit in turn, {played['current']} lit at the end"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--play", type=float, default=8.0)
    asyncio.run(main(parser.parse_args()))
