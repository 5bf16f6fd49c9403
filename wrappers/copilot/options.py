"""What every `create_session` / `resume_session` call is given.

The CLI persists the conversation but not the provider, the handlers or the MCP servers, so a
resumed session gets the same options as a new one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from copilot import MCPServerConfig, PermissionRequest, ProviderConfig, SystemMessageConfig

from core.backend.config import HttpMcpServer, McpServer, StdioMcpServer
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.permissions import Answer

PermissionCallback = Callable[[PermissionRequest, Any], Awaitable[Answer]]


def session_options(
    config: CopilotConfig, on_permission: PermissionCallback, cwd: Path | None = None
) -> dict[str, Any]:
    """Without a permission callback the CLI silently denies every tool that needs approval.
    `cwd`: the context's workspace (None = workingDirectory); one CLI child serves every
    context, so each session is given its directory."""
    options: dict[str, Any] = {
        "on_permission_request": on_permission,
        "working_directory": str((cwd or config.working_directory).resolve()),
        # Without streaming the CLI asks the model for whole replies: no text deltas.
        "streaming": True,
    }
    if config.model:
        options["model"] = config.model
    if config.provider is not None:
        options["provider"] = provider_config(config)
    if config.system_message is not None:
        options["system_message"] = system_message(config)
    if config.mcp_servers:
        options["mcp_servers"] = {
            name: mcp_server(server) for name, server in config.mcp_servers.items()
        }
    return options


def provider_config(config: CopilotConfig) -> ProviderConfig:
    provider = config.provider
    if provider is None:
        raise ValueError("no provider configured")
    result: ProviderConfig = {
        "type": provider.type,
        "base_url": provider.base_url,
        "wire_api": provider.wire_api,
    }
    if provider.api_key:
        result["api_key"] = provider.api_key
    return result


def mcp_server(server: McpServer) -> MCPServerConfig:
    """Our one MCP shape, in the SDK's terms (every tool of the server offered)."""
    match server:
        case StdioMcpServer():
            return {
                "type": "stdio",
                "command": server.command,
                "args": list(server.args),
                "env": dict(server.env),
                "tools": ["*"],
            }
        case HttpMcpServer():
            return {
                "type": "http",
                "url": server.url,
                "headers": dict(server.headers),
                "tools": ["*"],
            }


def system_message(config: CopilotConfig) -> SystemMessageConfig:
    message = config.system_message
    if message is None:
        raise ValueError("no system message configured")
    if message.mode == "replace":
        return {"mode": "replace", "content": message.content}
    return {"mode": "append", "content": message.content}
