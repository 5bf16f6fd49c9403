"""Store writes that are queued when they are called, not when they are awaited.

A store method typed `-> Queued[T]` has done (in memory) or queued (SQLite) its write by the
time it returns; awaiting the result waits for it. A caller that makes two such writes before
awaiting either gets both into one SQLite batch, one transaction, with no task group around
them (a turn's final task write and its session bookkeeping: `TaskRun` persisting the end of a
turn). Not awaiting a queued write is a bug: it runs with whatever batch comes next, and
nobody hears of its failure.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

Queued = Awaitable[T]


async def done() -> None:
    """What a write that is already complete returns (a memory store's)."""
