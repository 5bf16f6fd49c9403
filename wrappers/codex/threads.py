"""A Codex thread loaded (warm) in the app-server; which ones stay is the kit's `WarmPool`
(a thread taking a turn is never evicted; idle ones go after `warmIdle`, the least recently
used beyond `maxWarm`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WarmThread:
    id: str
    model: str | None
    sandbox: Mapping[str, Any] | None = None
    """The sandbox policy Codex reported when it loaded the thread (the configured one): what
    a turn without a mode states again, after a read-only turn changed it."""
