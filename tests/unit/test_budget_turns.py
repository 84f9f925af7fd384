"""The arithmetic of turns on a spent budget, without a store (ADR 61)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from transcriber_core.budgets import Bucket, level, take_token, take_turn

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
#: One token back of 500 an hour (a burst of 50, 450 an hour after it).
REFILL = timedelta(seconds=8)
SPENT = Bucket(tokens=0.0, updated=T0)


def test_a_turn_is_promised_the_next_token_and_the_bucket_goes_into_debt() -> None:
    """An empty bucket promises its next token: the wait to it, its moment, one token below."""
    turn = take_turn(SPENT, None, capacity=500, per=HOUR, now=T0)
    assert (turn.wait, turn.due) == (REFILL, T0 + REFILL)
    assert turn.bucket.tokens == -1.0
    assert level(turn.bucket, capacity=500, per=HOUR, now=T0 + REFILL) == 0.0


def test_a_holder_is_admitted_at_its_turn_and_told_the_rest_before_it() -> None:
    """At its turn the holder is admitted without taking; before it, only the rest is told."""
    promised = take_turn(SPENT, None, capacity=500, per=HOUR, now=T0)
    early = take_turn(promised.bucket, promised.due, capacity=500, per=HOUR, now=T0 + REFILL / 4)
    assert (early.wait, early.due, early.bucket) == (REFILL * 3 / 4, T0 + REFILL, promised.bucket)
    at = take_turn(promised.bucket, promised.due, capacity=500, per=HOUR, now=T0 + REFILL)
    assert (at.wait, at.due, at.bucket) == (None, None, promised.bucket)


def test_no_take_goes_before_a_promised_token() -> None:
    """After two promises, an unnamed take waits three refills; a third holder gets the third."""
    first = take_turn(SPENT, None, capacity=500, per=HOUR, now=T0)
    second = take_turn(first.bucket, None, capacity=500, per=HOUR, now=T0)
    assert second.due == T0 + REFILL * 2
    _, wait = take_token(second.bucket, capacity=500, per=HOUR, now=T0)
    assert wait == REFILL * 3
    third = take_turn(second.bucket, None, capacity=500, per=HOUR, now=T0)
    assert third.due == T0 + REFILL * 3


def test_a_token_in_the_bucket_is_taken_at_once() -> None:
    """A named take with a token there takes it, as an unnamed one would, keeping no turn."""
    turn = take_turn(None, None, capacity=500, per=HOUR, now=T0)
    assert (turn.wait, turn.due) == (None, None)
    assert turn.bucket.tokens == 49.0
