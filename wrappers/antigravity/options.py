"""What one Antigravity agent is given: the SDK's agent config built from our block (endpoint,
state directories, capabilities, MCP servers) for one conversation id."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from google.antigravity import types
from google.antigravity.hooks import policy
from google.antigravity.models import DEFAULT_MODEL

from core.backend.config import HttpMcpServer, StdioMcpServer
from wrappers.antigravity.config import AntigravityConfig
from wrappers.antigravity.harness import GoogleAgentConfig, OpenAIAgentConfig, find_harness

# The SDK's own default for app data; ours keeps conversations beside it (not in a temp dir,
# which is what the SDK does without a save_dir, so nothing would resume after a restart).
DEFAULT_HOME = Path("~/.gemini/antigravity")
HARNESS_VARIABLE = "ANTIGRAVITY_HARNESS_PATH"

COMMAND_TOOLS = frozenset({"run_command"})
FILE_WRITE_TOOLS = frozenset(
    {"write_to_file", "replace_file_content", "multi_replace_file_content", "create_file",
     "edit_file"}
)  # fmt: skip
SUBAGENT_TOOLS = frozenset(
    {"invoke_subagent", "define_subagent", "manage_subagents", "send_message", "run_workflow"}
)


def home(config: AntigravityConfig) -> Path:
    return (config.home or DEFAULT_HOME).expanduser().resolve()


def app_data_dir(config: AntigravityConfig) -> Path:
    """Where the runtime keeps its app data (`home`, the SDK's ~/.gemini/antigravity)."""
    return home(config)


def save_dir(config: AntigravityConfig) -> Path:
    """Where conversations are stored, one SQLite file per conversation id."""
    return home(config) / "conversations"


def saved(config: AntigravityConfig, conversation_id: str) -> bool:
    """Whether the conversation's state is stored (a lost one would start anew under its id)."""
    return (save_dir(config) / f"{conversation_id}.db").is_file()


def block_file(home_dir: Path) -> Path:
    """Where the daemon leaves its block for `wrappers.antigravity.resume` (no secrets)."""
    return home_dir / "a2a-wrapper-block.json"


def save_block(config: AntigravityConfig) -> None:
    """The block without its secrets (keys, env, MCP headers), for a terminal to resume a
    conversation with the same endpoint and tools."""
    block = config.model_dump(
        mode="json", by_alias=True, exclude={"env": True, "mcp_servers": True,
                                             "endpoint": {"api_key"}}
    )  # fmt: skip
    path = block_file(home(config))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(block, indent=2))


def harness_env(config: AntigravityConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The block's `env` plus the harness binary we resolved (the SDK's own override variable),
    for the SDK to pass on (on top of the daemon's environment)."""
    binary = find_harness(config.cli_path, config.env.get("PATH") or environ.get("PATH"))
    return {**config.env, HARNESS_VARIABLE: str(binary)}


def _disabled(config: AntigravityConfig) -> list[Any]:
    tools = []
    if config.file_writes == "deny":
        tools += [types.BuiltinTools.CREATE_FILE, types.BuiltinTools.EDIT_FILE]
    if config.commands == "deny":
        tools.append(types.BuiltinTools.RUN_COMMAND)
    return tools


def capabilities(config: AntigravityConfig) -> Any:
    return types.CapabilitiesConfig(
        enable_subagents=config.subagents != "deny",
        disabled_tools=_disabled(config) or None,
    )


def mcp_servers(config: AntigravityConfig) -> list[Any]:
    servers: list[Any] = []
    for name, server in config.mcp_servers.items():
        if isinstance(server, StdioMcpServer):
            servers.append(
                types.McpStdioServer(
                    name=name, command=server.command, args=server.args, env=server.env or None
                )
            )
        elif isinstance(server, HttpMcpServer):
            servers.append(
                types.McpStreamableHttpServer(name=name, url=server.url, headers=server.headers)
            )
    return servers


def _gemini_key(config: AntigravityConfig, environ: Mapping[str, str]) -> str | None:
    """endpoint.apiKey, else GEMINI_API_KEY (the block's env, then the daemon's)."""
    return (
        config.endpoint.api_key or config.env.get("GEMINI_API_KEY") or environ.get("GEMINI_API_KEY")
    )


def _google(config: AntigravityConfig, environ: Mapping[str, str]) -> dict[str, Any]:
    """The SDK's shorthand endpoint keys, and an explicit text model when the endpoint has a
    base URL (the shorthand has none) or a model is named."""
    endpoint = config.endpoint
    vertex = endpoint.kind == "vertex"
    keys: dict[str, Any] = {
        "vertex": vertex,
        "api_key": endpoint.api_key if vertex else _gemini_key(config, environ),
        "project": endpoint.project,
        "location": endpoint.location,
    }
    if endpoint.base_url is None:
        return {**keys, "model": config.model}
    target: Any
    if vertex:
        target = types.VertexEndpoint(
            base_url=endpoint.base_url, api_key=endpoint.api_key, project=endpoint.project,
            location=endpoint.location,
        )  # fmt: skip
    else:
        target = types.GeminiAPIEndpoint(base_url=endpoint.base_url, api_key=keys["api_key"])
    name = config.model or DEFAULT_MODEL
    return {
        **keys,
        "models": [types.ModelTarget(name=name, types=[types.ModelType.TEXT], endpoint=target)],
    }


def agent_config(
    config: AntigravityConfig,
    conversation_id: str,
    hooks: Sequence[Any],
    environ: Mapping[str, str] | None = None,
    *,
    cwd: Path | None = None,
) -> Any:
    """The SDK config of the agent serving `conversation_id` (new or stored in `save_dir`),
    working in `cwd` (the context's workspace; None = workingDirectory).

    Every tool passes the harness's own policy (`allow_all`): what may run is decided by our
    pre-tool hook (`approvals.Gate`) and by the tools the capability switches remove."""
    environ = os.environ if environ is None else environ
    save_dir(config).mkdir(parents=True, exist_ok=True)
    common: dict[str, Any] = {
        "conversation_id": conversation_id,
        # Our ids name new conversations too; one lost from save_dir starts anew under its id.
        "session_continuation_mode": types.SessionContinuationMode.CREATE_OR_RESUME,
        "save_dir": str(save_dir(config)),
        "app_data_dir": str(app_data_dir(config)),
        "workspaces": [str((cwd or config.working_directory.expanduser()).resolve())],
        "capabilities": capabilities(config),
        "policies": [policy.allow_all()],
        "hooks": list(hooks),
        "mcp_servers": mcp_servers(config) or None,
        "env": harness_env(config, environ),
        "system_instructions": config.system_instructions,
    }
    if config.endpoint.kind == "openai":
        return OpenAIAgentConfig(model=config.model, base_url=config.endpoint.base_url, **common)
    return GoogleAgentConfig(**_google(config, environ), **common)
