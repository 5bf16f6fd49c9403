"""A Codex thread loaded (warm) in the app-server; which ones stay is the kit's `WarmPool`
(a thread taking a turn is never evicted; idle ones go after `warmIdle`, the least recently
used beyond `maxWarm`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WarmThread:
    id: str
    model: str | None
