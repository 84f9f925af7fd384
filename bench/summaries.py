"""Summaries per hour of transcript: requests, tokens in and out, wall time (SPEC §27, ADR 82, 83).

Builds a one-hour two-speaker transcript (150 words a minute, English or
Russian), then summarises it and asks one question through the real
``openai`` client and the core (``summary_steps.summarise``, ``ask``), for
each ``max_input_tokens``. Against the fake chat server of the tests
(default) the wall time is the service's own overhead (HTTP, JSON, the
client) and the token counts are the fake's, one token per three UTF-8
bytes as the service estimates; with ``--base-url`` and ``--model`` the
same runs against a real OpenAI-compatible server (Ollama, llama.cpp's
server, vLLM), whose own counts and time are printed.

Usage: .venv/bin/python bench/summaries.py [--hours 1] [--limits 4000,8000,32000]
       [--base-url http://127.0.0.1:11434/v1 --model llama3.1:8b [--api-key KEY]]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import asyncio
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer

from transcriber_adapters.chat_model import OpenAIChatModel
from transcriber_core import summaries
from transcriber_core.entities import Job, Origin, Speaker, State, Word
from transcriber_core.summaries import Completion, Message
from transcriber_core.summary_steps import ask, summarise

WORDS_PER_MINUTE = 150
_EN = [
    "we",
    "need",
    "the",
    "numbers",
    "by",
    "friday",
    "and",
    "the",
    "release",
    "notes",
    "should",
    "say",
    "what",
    "changed",
    "for",
    "the",
    "people",
    "who",
    "use",
    "the",
    "export",
    "every",
    "day",
    "so",
    "let",
    "us",
    "keep",
    "it",
    "short",
    "and",
    "send",
    "it",
    "to",
    "the",
    "list",
]
_RU = [
    "нам",
    "нужны",
    "цифры",
    "к",
    "пятнице",
    "и",
    "в",
    "заметках",
    "к",
    "выпуску",
    "надо",
    "сказать",
    "что",
    "изменилось",
    "для",
    "тех",
    "кто",
    "каждый",
    "день",
    "пользуется",
    "выгрузкой",
    "давайте",
    "коротко",
    "и",
    "отправим",
    "это",
    "в",
    "рассылку",
]


class Counting:
    """A ``LanguageModel`` that counts what its inner model is asked and answers."""

    def __init__(self, inner: OpenAIChatModel) -> None:
        self.inner = inner
        self.requests = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.largest = 0

    @property
    def model(self) -> str:
        """The inner model's name."""
        return self.inner.model

    @property
    def max_input_tokens(self) -> int:
        """The inner model's limit."""
        return self.inner.max_input_tokens

    async def complete(self, messages: Sequence[Message], *, want_json: bool) -> Completion:
        """Ask the inner model; count the request and its tokens."""
        self.largest = max(self.largest, summaries.request_tokens(messages))
        completion = await self.inner.complete(messages, want_json=want_json)
        self.requests += 1
        self.tokens_in += completion.tokens_in
        self.tokens_out += completion.tokens_out
        return completion


def transcript(hours: float, *, russian: bool) -> Job:
    """A done job of ``hours`` of two speakers taking turns of 5 to 40 words."""
    vocabulary = _RU if russian else _EN
    rng = random.Random(7)
    words: list[Word] = []
    at, speaker = 0.0, "S1"
    step = 60.0 / WORDS_PER_MINUTE
    total = int(hours * 60 * WORDS_PER_MINUTE)
    while len(words) < total:
        turn = rng.randint(5, 40)
        for index in range(turn):
            # A sentence every dozen words, and one at the end of every turn.
            end = "." if index % 12 == 11 or index == turn - 1 else ""
            text = rng.choice(vocabulary) + end
            words.append(Word(text=text, start=at, end=at + step, speaker=speaker))
            at += step
        speaker = "S2" if speaker == "S1" else "S1"
        at += 0.5
    labelled = tuple(words)
    now = datetime.now(UTC)
    return Job(
        id="bench",
        state=State.DONE,
        origin=Origin.http(),
        text=" ".join(w.text for w in labelled),
        words=labelled,
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Omar")),
        duration=at,
        language="ru" if russian else "en",
        created=now,
        updated=now,
    )


async def run(args: argparse.Namespace) -> None:
    """Print one row per language and limit."""
    fake = None if args.base_url else await FakeChatServer(limit_tokens=10**9).__aenter__()
    try:
        base_url = args.base_url or (fake.base_url if fake else "")
        print(
            "| transcript | max_input_tokens | lines | requests | tokens in | tokens out"
            " | largest request | summary s | question s |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for russian in (False, True):
            job = transcript(args.hours, russian=russian)
            lines = summaries.lines_of(job)
            for limit in args.limits:
                model = Counting(
                    OpenAIChatModel(
                        base_url=base_url,
                        model=args.model or MODEL,
                        api_key=args.api_key or (API_KEY if fake else ""),
                        max_input_tokens=limit,
                        timeout_seconds=3600,
                    )
                )
                began = time.perf_counter()
                await summarise(model, lines, language=job.language)
                summary_s = time.perf_counter() - began
                asked = model.requests
                began = time.perf_counter()
                await ask(model, job, "What was decided, and who does what?")
                question_s = time.perf_counter() - began
                await model.inner.close()
                per_hour = 1 / args.hours
                print(
                    f"| {args.hours:g} h {'ru' if russian else 'en'} | {limit} | {len(lines)}"
                    f" | {asked} + {model.requests - asked} | {model.tokens_in * per_hour:,.0f}"
                    f" | {model.tokens_out * per_hour:,.0f} | {model.largest}"
                    f" | {summary_s * per_hour:.2f} | {question_s * per_hour:.2f} |"
                )
    finally:
        if fake is not None:
            await fake.__aexit__(None, None, None)


def main() -> None:
    """Parse the arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument(
        "--limits", type=lambda s: [int(v) for v in s.split(",")], default=[4000, 8000, 32000]
    )
    parser.add_argument("--base-url", default="")
    parser.add_argument("--model", default="")
    parser.add_argument("--api-key", default="")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
