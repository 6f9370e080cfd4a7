"""The endpoint's rate limit (``coteam.llm.ratelimit``): slots spaced by the limit per endpoint, and a request that
cannot wait for its slot books nothing, so requests that give up never push the others' slots further out."""

from __future__ import annotations

import pytest

from coteam.llm.ratelimit import ReservationClock


def test_slots_are_spaced_by_the_limit_per_endpoint() -> None:
    clock = ReservationClock()
    waits = [clock.reserve("a", 1.0) for _ in range(3)]
    assert waits[0] == pytest.approx(0.0, abs=0.01)
    assert waits[1] == pytest.approx(1.0, abs=0.01) and waits[2] == pytest.approx(2.0, abs=0.01)
    assert clock.reserve("b", 1.0) == pytest.approx(0.0, abs=0.01), "another endpoint has its own slots"


def test_a_request_that_cannot_wait_books_nothing() -> None:
    clock = ReservationClock()
    clock.reserve("a", 1.0)
    for _ in range(100):  # many requests that give up (their deadline comes before the slot)
        assert clock.reserve("a", 1.0, max_wait_s=0.5) == pytest.approx(1.0, abs=0.01)
    assert clock.reserve("a", 1.0) == pytest.approx(1.0, abs=0.01), "the next request still gets the next slot"
