"""Sessions as JSON files under `<home>/sessions`: the conversation so far and the commands the
caller approved for the whole session, so both survive a restart of the daemon."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Session:
    id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    approved: set[str] = field(default_factory=set)
    """Commands answered `approve_always`: not asked again in this session."""


class SessionFiles:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def file(self, session_id: str) -> Path:
        # Only a uuid names a file: a session id from a caller's context never walks the disk.
        return self.folder / f"{uuid.UUID(hex=session_id).hex}.json"

    def exists(self, session_id: str) -> bool:
        return self.file(session_id).is_file()

    def load(self, session_id: str) -> Session:
        """The stored session, or a new empty one of that id."""
        try:
            stored = json.loads(self.file(session_id).read_text())
        except (OSError, ValueError):
            return Session(session_id)
        return Session(session_id, list(stored["messages"]), set(stored["approved"]))

    def save(self, session: Session) -> None:
        data = {"messages": session.messages, "approved": sorted(session.approved)}
        self.file(session.id).write_text(json.dumps(data))

    def delete(self, session_id: str) -> None:
        self.file(session_id).unlink(missing_ok=True)
