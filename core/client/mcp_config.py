"""`a2a-wrapper mcp`: the stdio MCP server over the agents named by `--agent` or `--config`.

`--agent URL` or `--agent NAME=URL` (repeatable; the token of `--token` or env A2A_TOKEN goes
to each). `--config FILE`: a JSON file
`{"agents": {"NAME": {"url": "...", "token": "${VAR}", "binding": "grpc", "protocol": "1.0"}}}`
where `${VAR}` in a token is read from the environment (tokens stay out of IDE configs).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from core.client.access import ClientError
from core.client.connection import BINDINGS, AgentRef

EXIT_USAGE = 2
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def register(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp", help="serve A2A agents as MCP tools over stdio (for IDE agents)"
    )
    mcp.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="[NAME=]URL",
        help="an A2A agent's base URL, optionally named (repeatable)",
    )
    mcp.add_argument("--config", type=Path, help="a JSON file naming the agents (see docs/mcp.md)")
    mcp.add_argument("--token", help="bearer token for the --agent URLs (default: env A2A_TOKEN)")


def refs_from(args: argparse.Namespace) -> list[AgentRef]:
    """The agents to serve; ClientError for a config that names none or is unreadable."""
    refs: list[AgentRef] = []
    token = args.token or os.environ.get("A2A_TOKEN") or None
    for n, spec in enumerate(args.agent):
        name, sep, url = spec.partition("=")
        if not sep or "://" in name:
            name, url = ("agent" if len(args.agent) == 1 else f"agent-{n + 1}"), spec
        refs.append(AgentRef(name, url, token))
    if args.config is not None:
        refs.extend(_from_file(args.config))
    if not refs:
        raise ClientError("name at least one agent: --agent URL or --config FILE")
    return refs


def _from_file(path: Path) -> list[AgentRef]:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ClientError(f"{path}: cannot read it ({exc})") from exc
    agents = document.get("agents") if isinstance(document, dict) else None
    if not isinstance(agents, dict) or not agents:
        raise ClientError(f'{path}: expected {{"agents": {{"NAME": {{"url": ...}}}}}}')
    refs = []
    for name, entry in agents.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            raise ClientError(f"{path}: agents.{name}.url: a URL is required")
        binding = entry.get("binding")
        if binding is not None and binding not in BINDINGS:
            raise ClientError(f"{path}: agents.{name}.binding: one of {', '.join(BINDINGS)}")
        token = entry.get("token")
        refs.append(
            AgentRef(
                name,
                entry["url"],
                _expand(token, f"{path}: agents.{name}.token") if token else None,
                binding=binding,
                protocol=entry.get("protocol"),
            )
        )
    return refs


def _expand(value: str, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1) not in os.environ:
            raise ClientError(f"{where}: the environment has no {match.group(1)}")
        return os.environ[match.group(1)]

    return _VAR.sub(one, value)


def main(args: argparse.Namespace) -> int:
    try:
        refs = refs_from(args)
    except ClientError as exc:
        print(f"a2a-wrapper mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import anyio  # noqa: PLC0415 - the server's imports only for this command

    # stderr is the IDE's log of this server: requests are not news there, failures are.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    for noisy in ("httpx", "a2a"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    from core.client.mcp_server import add_card_resources, build_server  # noqa: PLC0415
    from core.client.remote import RemoteAgents  # noqa: PLC0415

    async def serve() -> None:
        async with RemoteAgents(refs) as agents:
            server = build_server(agents)
            await add_card_resources(server, agents, agents.names)
            await server.run_stdio_async()

    anyio.run(serve)
    return 0
