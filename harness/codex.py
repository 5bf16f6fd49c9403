"""How the real codex binary is pointed at the mock Responses model (tests and the latency
bench): everything goes through the `codex` config block, the way a user would point Codex at
any Responses-API endpoint: a custom model provider in `config`, its key in `env`, and an
isolated Codex state directory in `home`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
