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
from tests.conftest import make_settings
from tests.support.mock_models.openai_responses import ResponsesMock
from wrappers.codex.backend import CodexBackend

MOCK_KEY_VARIABLE = "MOCK_API_KEY"
# A slug in Codex's bundled model catalogue; an unknown one adds a "metadata not found" item.
MODEL = "gpt-5.5"


def provider(base_url: str, **extra: Any) -> dict[str, Any]:
    """A Codex model provider for the mock; no retries, so errors surface at once."""
    return {
        "name": "mock",
        "base_url": base_url,
        "env_key": MOCK_KEY_VARIABLE,
        "wire_api": "responses",
        "request_max_retries": 0,
        "stream_max_retries": 0,
        **extra,
    }


def codex_block(base_url: str, root: Path, **overrides: Any) -> dict[str, Any]:
    """A `codex` block for a test under `root` (working directory and Codex home inside it)."""
    work, home = root / "work", root / "codex-home"
    work.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    block: dict[str, Any] = {
        "workingDirectory": str(work),
        "home": str(home),
        "skipGitRepoCheck": True,
        "model": MODEL,
        "env": {MOCK_KEY_VARIABLE: "mock-key"},
        "config": {
            "model_provider": "mock",
            "model_providers": {"mock": provider(base_url)},
            "analytics": {"enabled": False},
            # Only the test's own directory is writable: Codex's sandbox marks the .git of
            # each writable root read-only, and a command killed mid-run leaves that mount
            # point behind (an empty /tmp/.git, with /tmp writable).
            "sandbox_workspace_write": {"exclude_slash_tmp": True, "exclude_tmpdir_env_var": True},
        },
    }
    block.update(overrides)
    return block


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
