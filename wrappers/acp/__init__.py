"""Any Agent Client Protocol agent: the `acp` backend, and its named presets (`gemini`,
`opencode-acp`, `copilot-acp`), each a registry entry with its own defaults.

Modules: `config` (the blocks), `presets` (how each named agent is found and started),
`agent` (the process and the `acp` library's connection over its stdio), `client` (what the
agent calls back: updates, permissions, files), `terminals` (`terminal/*`), `approvals`
(permission options as the daemon's decisions), `events` (updates as backend events),
`prompt` (the prompt's blocks and what its response means), `sessions` (opening a session,
its MCP servers), `control` (what a turn may choose: the agent's modes, models and options),
`backend` (the `Backend`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.acp.config import AcpConfig, CopilotAcpConfig, GeminiConfig, OpencodeAcpConfig
from wrappers.acp.presets import COPILOT, GEMINI, OPENCODE

if TYPE_CHECKING:
    from wrappers.acp.backend import AcpBackend

__all__ = ["COPILOT_SPEC", "GEMINI_SPEC", "OPENCODE_SPEC", "SPEC"]


def _backend() -> type[AcpBackend]:
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.acp.backend import AcpBackend  # noqa: PLC0415

    return AcpBackend


def create(config: AcpConfig) -> AcpBackend:
    return _backend()(config)


def create_gemini(config: GeminiConfig) -> AcpBackend:
    return _backend()(config, name=GEMINI.name, preset=GEMINI)


def create_opencode(config: OpencodeAcpConfig) -> AcpBackend:
    return _backend()(config, name=OPENCODE.name, preset=OPENCODE)


def create_copilot(config: CopilotAcpConfig) -> AcpBackend:
    return _backend()(config, name=COPILOT.name, preset=COPILOT)


SPEC = BackendSpec("acp", AcpConfig, create)
GEMINI_SPEC = BackendSpec(GEMINI.name, GeminiConfig, create_gemini)
OPENCODE_SPEC = BackendSpec(OPENCODE.name, OpencodeAcpConfig, create_opencode)
COPILOT_SPEC = BackendSpec(COPILOT.name, CopilotAcpConfig, create_copilot)
