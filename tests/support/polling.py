"""Waiting for what a test can only look at, not wait on (a scrape, an exporter): polled, a
bounded number of times, never a sleep standing in for an assertion."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

T = TypeVar("T")

ATTEMPTS = 1000
PAUSE = 0.01


async def until(look: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    """`look()` again until `done` holds for what it returns (about 10 s at most); the last
    look either way, for the test's own assertions."""
    seen = await look()
    for _ in range(ATTEMPTS):
        if done(seen):
            break
        await anyio.sleep(PAUSE)
        seen = await look()
    return seen
