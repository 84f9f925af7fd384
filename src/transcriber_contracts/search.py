"""The ``TranscriptSearch`` role: full-text search over one owner's done transcripts (ADR 58).

Subclass with the fixture ``repo`` (``job_repository``'s docstring). The store's
index (FTS5, ``tsvector``, a scan) must be kept in step by the writes the
suite makes through the other roles: ``create``, ``save_if_held``,
``save_correction``, ``delete_job``.
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from transcriber_contracts.repository_support import (
    NOW,
    T0,
    RepositorySuite,
    acquire,
    create,
    make_job,
)
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import Correction, Job, State, Word
from transcriber_core.errors import JobNotFound
from transcriber_core.ports import JobRepository
from transcriber_core.search import MAX_HITS, Fragment, Hit, SearchQuery

#: Owner keys of two people, as the workspace stores them (64 characters, ADR 55).
ALICE, BOB = (f"person:{letter * 57}" for letter in "ab")

#: What people type that means something to FTS5 or ``to_tsquery``: never an error.
HOSTILE_QUERIES = (
    '"',
    '"fox',
    'fox"',
    "*",
    "fox*",
    "**fox",
    "NEAR(fox dog)",
    "NEAR",
    "fox NEAR/2 dog",
    "-fox",
    "fox -dog",
    "(((",
    "fox)",
    "fox AND",
    "OR",
    "NOT fox",
    "fox OR dog",
    "^fox",
    "text:fox",
    "fox:*",
    "'",
    "fox'",
    "fox & dog | !cat",
    "fox <-> dog",
    "fox <2> dog",
    "\\",
    "%_",
    "fox\x00dog",
    "{fox}",
    "+fox",
    "fox..dog",
    "fox_dog",
    "😀",
    "½ ① Ⅻ",
    "x" * 3000,
    "fox " * 200,
)


def timed(text: str, *, start: float = 0.0, step: float = 0.5) -> tuple[Word, ...]:
    """The words of ``text``, one every ``step`` seconds from ``start``."""
    return tuple(
        Word(text=token, start=start + n * step, end=start + n * step + step * 0.8)
        for n, token in enumerate(text.split())
    )


def done(
    text: str | None,
    *,
    owner: str | None = ALICE,
    minute: int = 0,
    state: State = State.DONE,
    **changes: object,
) -> Job:
    """A done job of ``owner`` with ``text`` (timed words unless given), created ``minute`` in."""
    fields: dict[str, object] = {
        "owner": owner,
        "text": text,
        "words": timed(text) if text else (),
        "ended": NOW,
    }
    fields.update(changes)
    return make_job(created=T0 + timedelta(minutes=minute), state=state, **fields)


async def put(clock: ManualClock, repo: JobRepository, *jobs: Job) -> list[Job]:
    """Create each job; the jobs as stored."""
    return [(await create(clock, repo, job))[0] for job in jobs]


async def found(repo: JobRepository, raw: str, *, owner: str = ALICE, limit: int = 20) -> list[str]:
    """The ids a person searching ``raw`` finds, in the order answered."""
    return [hit.job_id for hit in await repo.search(owner, SearchQuery.parse(raw), limit=limit)]


def marked(hit: Hit) -> list[str]:
    """The snippet's marked words."""
    return [fragment.text for fragment in hit.snippet if fragment.marked]


class SearchContract(RepositorySuite):
    """Subclass and provide the fixture ``repo``."""

    async def test_a_word_is_found_with_its_moment_and_marked(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A word of a transcript finds it: the snippet marks it, ``at`` is its start."""
        job, _ = await put(
            clock,
            repo,
            done("the quick brown fox jumps over the lazy dog"),
            done("nothing to see here", minute=1),
        )
        hits = await repo.search(ALICE, SearchQuery.parse("fox"))
        assert [hit.job_id for hit in hits] == [job.id]
        (hit,) = hits
        assert hit.created == job.created
        assert hit.at == 1.5  # the fourth word, one every half second
        assert marked(hit) == ["fox"]
        assert "".join(fragment.text for fragment in hit.snippet) == job.text
        assert (hit.more_before, hit.more_after) == (False, False)

    async def test_a_hit_carries_its_recordings_title(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A hit names its recording by its title (ADR 79); one sent without one has None."""
        titled, untitled = await put(
            clock,
            repo,
            done("the quick brown fox", title="Morning «walk»"),
            done("a brown fox again", minute=1),
        )
        hits = await repo.search(ALICE, SearchQuery.parse("fox"))
        assert [(hit.job_id, hit.title) for hit in hits] == [
            (untitled.id, None),
            (titled.id, "Morning «walk»"),
        ]

    async def test_every_word_of_the_query_must_be_there_in_any_order(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Several words find the transcripts holding all of them, wherever they stand."""
        both, only_one = await put(
            clock,
            repo,
            done("the quick brown fox"),
            done("a brown bear", minute=1),
        )
        assert await found(repo, "quick brown") == [both.id]
        assert await found(repo, "fox quick") == [both.id]
        assert await found(repo, "brown") == [only_one.id, both.id]
        assert await found(repo, "quick bear") == []
        (hit,) = await repo.search(ALICE, SearchQuery.parse("brown quick"))
        assert marked(hit) == ["quick", "brown"]

    async def test_another_owners_transcripts_are_never_found(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Bob's words find nothing for Alice, and jobs without an owner nothing for anyone."""
        bobs, _ = await put(
            clock,
            repo,
            done("secret merger plans", owner=BOB),
            done("secret merger plans", owner=None, minute=1),
        )
        assert await found(repo, "merger") == []
        assert await found(repo, "merger", owner=BOB) == [bobs.id]

    async def test_only_done_jobs_with_text_are_found(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A transcript of a job not done, failed or dead is not searched."""
        await put(
            clock,
            repo,
            done("walrus", state=State.CHECK),
            done("walrus", state=State.FAILED, minute=1),
            done("walrus", state=State.DEAD, minute=2),
            done(None, minute=3),
        )
        assert await found(repo, "walrus") == []

    async def test_a_job_that_becomes_done_is_found_at_once(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The step's save that ends a job makes its transcript searchable in that save."""
        waiting = make_job(state=State.CHECK, owner=ALICE)
        await create(clock, repo, waiting)
        held = await acquire(clock, repo, State.CHECK)
        assert held is not None
        assert held.acquisition_id is not None
        assert await found(repo, "platypus") == []
        ended = attrs.evolve(
            held,
            state=State.DONE,
            text="a platypus swims",
            words=timed("a platypus swims"),
            ended=NOW,
        )
        await repo.save_if_held(ended, acquisition_id=held.acquisition_id)
        assert await found(repo, "platypus") == [held.id]

    async def test_a_deleted_job_is_never_found(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Deleting a job takes its transcript out of the index in the same transaction."""
        gone, kept = await put(
            clock, repo, done("ephemeral words"), done("ephemeral words", minute=1)
        )
        await repo.delete_job(gone.id)
        assert await found(repo, "ephemeral") == [kept.id]
        with pytest.raises(JobNotFound):
            await repo.get(gone.id)

    async def test_a_correction_is_what_is_searched(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The corrected words are found and the replaced one is not; a restore turns it back."""
        (job,) = await put(clock, repo, done("meet me at the harbour at noon"))
        original = job.words
        fixed_words = (*original[:4], attrs.evolve(original[4], text="lighthouse"), *original[5:])
        fixed = "meet me at the lighthouse at noon"
        correction = Correction(
            text=fixed, words=fixed_words, original_text=job.text, original_words=original
        )
        await repo.save_correction(job.id, correction, version=0)
        assert await found(repo, "harbour") == []
        (hit,) = await repo.search(ALICE, SearchQuery.parse("lighthouse"))
        assert (hit.job_id, hit.at, marked(hit)) == (job.id, original[4].start, ["lighthouse"])
        assert job.text is not None
        restore = Correction(text=job.text, words=original)
        await repo.save_correction(job.id, restore, version=1)
        assert await found(repo, "harbour") == [job.id]
        assert await found(repo, "lighthouse") == []

    async def test_words_match_by_prefix_whatever_their_case(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """``TRANSCR`` finds "Transcription"; the middle of a word does not."""
        (job,) = await put(clock, repo, done("Transcription of the Meeting"))
        assert await found(repo, "transcription") == [job.id]
        assert await found(repo, "TRANSCR") == [job.id]
        assert await found(repo, "meet") == [job.id]
        assert await found(repo, "cription") == []
        assert await found(repo, "meetings") == []
        (hit,) = await repo.search(ALICE, SearchQuery.parse("meet"))
        assert marked(hit) == ["Meeting"]

    async def test_russian_is_found_whatever_its_case(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Cyrillic folds case and matches by prefix; a letter with a diaeresis stays its own."""
        russian, mixed = await put(
            clock,
            repo,
            done("Привет, мир! Съешь ещё этих мягких французских булок"),
            done("Созвон по проекту Transcriber в четверг", minute=1),
        )
        assert await found(repo, "привет") == [russian.id]
        assert await found(repo, "МИР") == [russian.id]
        assert await found(repo, "францу") == [russian.id]
        assert await found(repo, "ещё") == [russian.id]
        assert await found(repo, "еще") == []
        assert await found(repo, "проект transcriber") == [mixed.id]
        (hit,) = await repo.search(ALICE, SearchQuery.parse("мягк"))
        assert marked(hit) == ["мягких"]
        assert hit.at == 2.5

    async def test_query_syntax_is_plain_words_and_never_raises(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Quotes, ``*``, ``NEAR``, ``-``, parentheses and the like are words or nothing."""
        fox, _ = await put(
            clock,
            repo,
            done("the fox and the dog were near each other"),
            done("a cat", minute=1),
        )
        for raw in HOSTILE_QUERIES:
            await repo.search(ALICE, SearchQuery.parse(raw))  # never raises
        assert await found(repo, '"fox') == [fox.id]
        assert await found(repo, "NEAR(fox dog)") == [fox.id]
        assert await found(repo, "fox -dog") == [fox.id]  # no exclusion: two words
        assert await found(repo, "NOT fox") == []  # "not" is not in the transcript
        assert await found(repo, "fox:*") == [fox.id]
        assert await found(repo, "((fox") == [fox.id]

    async def test_an_empty_query_finds_nothing(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """A query of no words (blank, or only punctuation) finds nothing and asks no index."""
        await put(clock, repo, done("anything at all"))
        for raw in ("", "   ", "*", '""', "-", "()", "..."):
            assert await found(repo, raw) == []

    async def test_newest_first_and_limited(self, clock: ManualClock, repo: JobRepository) -> None:
        """Hits come newest first, at most ``limit``; a limit out of range is a ``ValueError``."""
        jobs = await put(clock, repo, *(done(f"report number {n}", minute=n) for n in range(5)))
        newest_first = [job.id for job in reversed(jobs)]
        assert await found(repo, "report") == newest_first
        assert await found(repo, "report", limit=2) == newest_first[:2]
        for limit in (0, -1, MAX_HITS + 1):
            with pytest.raises(ValueError, match="limit"):
                await repo.search(ALICE, SearchQuery.parse("report"), limit=limit)

    async def test_a_transcript_without_timings_is_found_without_a_moment(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Text alone gives a snippet from the text and no ``at``."""
        (job,) = await put(clock, repo, done("Only text, no timings.", words=()))
        (hit,) = await repo.search(ALICE, SearchQuery.parse("timings"))
        assert (hit.job_id, hit.at, marked(hit)) == (job.id, None, ["timings."])

    async def test_words_that_do_not_line_up_with_the_text_still_give_the_moment(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Words cut apart from the text's pieces: the matching word's start, its snippet."""
        words = timed("good morning every one at the harbour")
        (job,) = await put(clock, repo, done("Good morning, everyone at the harbour!", words=words))
        (hit,) = await repo.search(ALICE, SearchQuery.parse("harb"))
        assert (hit.job_id, hit.at, marked(hit)) == (job.id, 3.0, ["harbour"])

    async def test_a_text_whose_word_differs_gives_the_text_without_a_moment(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """Text and words that line up but disagree on the match: the text's snippet, no ``at``."""
        (job,) = await put(clock, repo, done("the harbour", words=timed("the port")))
        (hit,) = await repo.search(ALICE, SearchQuery.parse("harbour"))
        assert (hit.job_id, hit.at, marked(hit)) == (job.id, None, ["harbour"])

    async def test_a_long_transcript_is_cut_around_the_first_match(
        self, clock: ManualClock, repo: JobRepository
    ) -> None:
        """The snippet is the stretch around the first matching word, with the rest elided."""
        text = " ".join([*(f"w{n}" for n in range(100)), "needle", *(f"v{n}" for n in range(100))])
        (job,) = await put(clock, repo, done(text))
        (hit,) = await repo.search(ALICE, SearchQuery.parse("needle"))
        assert hit.at == 50.0
        assert (hit.more_before, hit.more_after) == (True, True)
        assert hit.snippet[0] == Fragment(text=" ".join(f"w{n}" for n in range(92, 100)) + " ")
        assert marked(hit) == ["needle"]
        assert job.id == hit.job_id
