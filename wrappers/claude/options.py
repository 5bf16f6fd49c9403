"""From the `claude` config block to what the SDK and the CLI are given."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, HookMatcher
from claude_agent_sdk.types import (
    CanUseTool,
    EffortLevel,
    HookEvent,
    McpServerConfig,
    SystemPromptPreset,
)

from core.backend import sandbox
from core.backend.binaries import CliSource, find_cli
from core.backend.config import HttpMcpServer, StdioMcpServer
from wrappers.claude.config import ClaudeConfig
from wrappers.claude.process import MARKER_VARIABLE

# Nothing but the model endpoint is contacted (docs/backends.md#claude); the config's `env` may
# override any of these.
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"


def bundled_cli() -> Path | None:
    """The Claude Code binary inside the claude-agent-sdk wheel, if this platform has one."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


_SOURCE = CliSource(
    "the Claude Code binary",
    "claude.cliPath",
    "the claude extra (pip install 'a2a-wrapper-daemon[claude]', whose SDK wheel bundles it)",
)


def resolve_cli(config: ClaudeConfig) -> Path:
    """The binary the daemon runs: `cliPath`, else the one bundled in the pinned SDK wheel, else
    `claude` on PATH (the SDK's own order, made explicit so `check` reports what will run);
    raises CliNotFoundError naming what was tried."""
    return find_cli(config.cli_path, [bundled_cli()], "claude", _SOURCE)


def working_directory(config: ClaudeConfig) -> Path:
    return config.working_directory.expanduser().resolve()


def agent_env(config: ClaudeConfig, marker: str | None = None) -> dict[str, str]:
    """Extra environment for the CLI (the SDK adds it over the daemon's own)."""
    env = {**QUIET_ENV, **config.env}
    if config.home is not None:
        env[CONFIG_DIR_VARIABLE] = str(config.home.expanduser().resolve())
    if marker is not None:
        env[MARKER_VARIABLE] = marker
    return env


def mcp_servers(config: ClaudeConfig) -> dict[str, McpServerConfig]:
    servers: dict[str, McpServerConfig] = {}
    for name, server in config.mcp_servers.items():
        if isinstance(server, StdioMcpServer):
            servers[name] = {
                "type": "stdio",
                "command": server.command,
                "args": list(server.args),
                "env": dict(server.env),
            }
        elif isinstance(server, HttpMcpServer):
            servers[name] = {"type": "http", "url": server.url, "headers": dict(server.headers)}
    return servers


def system_prompt(config: ClaudeConfig) -> str | SystemPromptPreset:
    prompt = config.system_prompt
    if isinstance(prompt, str):
        return prompt
    preset: SystemPromptPreset = {"type": "preset", "preset": prompt.preset}
    if prompt.append:
        preset["append"] = prompt.append
    return preset


def build_options(
    config: ClaudeConfig,
    *,
    cli: Path | None,
    resume: str | None,
    marker: str,
    cwd: Path | None = None,
    stderr: Any = None,
    can_use_tool: CanUseTool | None = None,
    hooks: dict[HookEvent, list[HookMatcher]] | None = None,
    effort: EffortLevel | None = None,
    fork: bool = False,
) -> ClaudeAgentOptions:
    """Options for one warm client. Partial messages are always on: text streams as deltas;
    so is the CLI's echo of each user message it takes (how a steered message is seen taken).
    `can_use_tool` is the permission callback of `approvals.mode: ask` (None: the configured
    rules decide alone, and what they leave open is denied); `hooks`, the client's own (the
    guard of plan and read-only turns). With `fork`, `resume` is the session to fork: the
    client starts a new session with its history."""
    return ClaudeAgentOptions(
        # In a sandbox: a launcher that runs the CLI inside it (the SDK starts the CLI).
        cli_path=None if cli is None else sandbox.sdk_cli(cli),
        cwd=cwd or working_directory(config),
        model=config.model,
        fallback_model=config.fallback_model,
        permission_mode=config.permission_mode,
        allowed_tools=list(config.allowed_tools),
        disallowed_tools=list(config.disallowed_tools),
        system_prompt=system_prompt(config),
        setting_sources=list(config.setting_sources),
        max_turns=config.max_turns,
        max_budget_usd=config.max_budget_usd,
        add_dirs=[d.expanduser() for d in config.add_dirs],
        mcp_servers=mcp_servers(config),
        env=agent_env(config, marker),
        resume=resume,
        fork_session=fork,
        effort=effort,
        include_partial_messages=True,
        extra_args={"replay-user-messages": None},
        stderr=stderr,
        can_use_tool=can_use_tool,
        hooks=dict(hooks) if hooks else None,
    )


def resume_command(config: ClaudeConfig, session_id: str, cwd: Path | None = None) -> str:
    """What a user types to open the session in their terminal: the agent's working directory
    (the session's workspace when it has one), its state directory when `home` is set, then
    `claude --resume <id>`."""
    binary = str(config.cli_path) if config.cli_path is not None else "claude"
    words = [f"cd {shlex.quote(str(cwd or working_directory(config)))} &&"]
    if config.home is not None:
        home = config.home.expanduser().resolve()
        words.append(f"{CONFIG_DIR_VARIABLE}={shlex.quote(str(home))}")
    words += [shlex.quote(binary), "--resume", shlex.quote(session_id)]
    return " ".join(words)
