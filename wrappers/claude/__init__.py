"""Claude Code as an A2A agent, through claude-agent-sdk (docs/backends.md#claude).

Modules: `backend` (the Backend: warm clients, turns, interrupt), `events` (the pure mapping of
the CLI's messages to BackendEvents), `options` (config block -> SDK options and CLI
environment), `pool` (warm-client bookkeeping), `process` (finding and stopping a client's
process), `prompt` (a turn's parts as the CLI's user message), `approvals` (the permission
callback of `approvals.mode: ask`), `diagnose` (`a2a-wrapper check`).
"""

from __future__ import annotations

from core.backend.config.claude import ClaudeConfig
from wrappers.claude.backend import ClaudeBackend, ClaudeStartError


def create(config: ClaudeConfig) -> ClaudeBackend:
    """The registry's factory for `"backend": "claude"`."""
    return ClaudeBackend(config)


__all__ = ["ClaudeBackend", "ClaudeStartError", "create"]
