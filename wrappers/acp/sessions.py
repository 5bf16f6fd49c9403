"""Opening an ACP session (`session/new`, `session/load`, `session/fork`) as raw requests,
so the choices the agent reports with it (control.py) are all read, the unstable ones too;
and the MCP servers each session gets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from acp import RequestError
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

from core.backend.config import McpServer, StdioMcpServer
from wrappers.acp.agent import AgentProcess
from wrappers.acp.control import Offer, offer_of

log = structlog.get_logger(__name__)


def mcp_servers(servers: Mapping[str, McpServer], agent: AgentProcess) -> list[Any]:
    """The configured MCP servers as ACP's, HTTP ones only where the agent takes them."""
    caps = agent.info.agent_capabilities
    http_ok = bool(caps and caps.mcp_capabilities and caps.mcp_capabilities.http)
    found: list[Any] = []
    for name, server in servers.items():
        if isinstance(server, StdioMcpServer):
            found.append(
                McpServerStdio(
                    name=name,
                    command=server.command,
                    args=list(server.args),
                    env=[EnvVariable(name=k, value=v) for k, v in server.env.items()],
                )
            )
        elif http_ok:
            found.append(
                HttpMcpServer(
                    type="http",
                    name=name,
                    url=server.url,
                    headers=[HttpHeader(name=k, value=v) for k, v in server.headers.items()],
                )
            )
        else:
            log.warning("acp.mcp_http_unsupported", server=name)
    return found


async def open_session(
    agent: AgentProcess,
    method: str,
    *,
    cwd: str,
    mcp: list[Any],
    session_id: str | None = None,
) -> tuple[str, Offer]:
    """`method` (`session/new`, `session/load` of `session_id`, or `session/fork` of it):
    the session it opened and what it offers. Raises RequestError, ConnectionError."""
    params: dict[str, Any] = {
        "cwd": cwd,
        "mcpServers": [s.model_dump(mode="json", by_alias=True, exclude_none=True) for s in mcp],
    }
    if session_id is not None:
        params["sessionId"] = session_id
    result = await agent.request(method, params)
    opened = result.get("sessionId") if isinstance(result, Mapping) else None
    if method == "session/load":
        opened = session_id  # its response names no session
    if not isinstance(opened, str):
        raise RequestError.internal_error({"method": method, "reason": "no sessionId"})
    return opened, offer_of(result)
