"""Claude Code as an A2A agent, through claude-agent-sdk (docs/backends.md#claude).

Modules: `config` (the `claude` block), `backend` (the Backend: warm clients, turns,
interrupt), `events` (the pure mapping of the CLI's messages to BackendEvents), `options`
(config block -> SDK options and CLI environment), `pool` (warm-client bookkeeping), `stream`
(the items of a turn's stream), `process` (finding and stopping a client's process), `prompt`
(a turn's parts as the CLI's user message), `approvals` (the permission callback of
`approvals.mode: ask`), `control` (conversation control: capabilities, per-turn options, steer,
the guard of plan and read-only turns), `diagnose` (`a2a-wrapper check`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.claude.config import ClaudeConfig

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

    from wrappers.claude.backend import ClaudeBackend

__all__ = ["SPEC", "ClaudeConfig", "create", "sdk_options"]


def create(config: ClaudeConfig) -> ClaudeBackend:
    """`ClaudeBackend` from its validated block (what the registry's spec calls)."""
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.claude.backend import ClaudeBackend  # noqa: PLC0415

    return ClaudeBackend(config)


def sdk_options(config: ClaudeConfig, *, resume: str | None, marker: str) -> ClaudeAgentOptions:
    """The SDK options the backend gives a session of `config` (for tools comparing the
    wrapper with the raw SDK: the same CLI, environment and flags)."""
    from wrappers.claude.options import build_options, resolve_cli  # noqa: PLC0415

    return build_options(config, cli=resolve_cli(config), resume=resume, marker=marker)


SPEC = BackendSpec("claude", ClaudeConfig, create)
"""What the registry resolves `"backend": "claude"` to."""
