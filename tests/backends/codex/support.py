"""How the Codex tests (and the latency bench) point the real codex binary at the mock model.

Everything goes through the `codex` config block, the way a user would point Codex at any
Responses-API endpoint: a custom model provider in `config`, its key in `env`, and an isolated
Codex state directory in `home`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.backend import BackendEvent, SessionBound, TextContent, Turn
from core.settings import Settings
from harness.codex import codex_block
from harness.mock_models.openai_responses import ResponsesMock
from tests.conftest import make_settings
from wrappers.codex.backend import CodexBackend


def codex_settings(
    mock: ResponsesMock, root: Path, *, codex: dict[str, Any] | None = None, **sections: Any
) -> Settings:
    """Daemon settings serving the real Codex backend against the mock, tasks in SQLite."""
    return make_settings(
        backend="codex",
        storage={"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        codex=codex_block(mock.base_url, root, **(codex or {})),
        **sections,
    )


def turn(
    text: str, *, session: str | None = None, task: str = "task-1", context: str = "ctx-1"
) -> Turn:
    return Turn(
        principal="tester",
        context_id=context,
        task_id=task,
        message_id=f"message-{task}",
        session_id=session,
        parts=(TextContent(text),),
    )


async def run(backend: CodexBackend, request: Turn) -> list[BackendEvent]:
    return [event async for event in backend.run_turn(request)]


def session_of(events: list[BackendEvent]) -> str:
    first = events[0]
    assert isinstance(first, SessionBound), events
    return first.session_id
