"""How to start `opencode serve`: which binary, which arguments, environment and inline config.

Pure functions of the `opencode` config block (and the process environment), so what the daemon
asks of OpenCode can be read and tested without starting anything.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.backend.base import BackendUnavailableError
from core.backend.binaries import (
    PROJECT_TOOLS,
    CliNotFoundError,
    CliSource,
    find_cli,
    is_executable,
)
from core.backend.config import HttpMcpServer, StdioMcpServer
from wrappers import pins
from wrappers.opencode.config import OpencodeConfig
from wrappers.opencode.control import mode_agents

PINNED_NPM = pins.npm("opencode")  # wrappers/npm-agents.txt
_MIN_BINARY_BYTES = 1_000_000  # without its postinstall, opencode-ai ships a 479-byte stub

# Switches that keep OpenCode from reaching out on its own (docs/backends.md#opencode); `env`
# in the config may override each of them.
QUIET_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    # The background install of @opencode-ai/plugin fails fast instead of reaching npm.
    "npm_config_registry": "http://127.0.0.1:9/",
}
XDG_KINDS = ("DATA", "CONFIG", "CACHE", "STATE")


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: Path


def _usable(path: Path) -> bool:
    # Without its postinstall, npm leaves a stub where the real binary goes.
    if path.name == "opencode.exe" and path.is_file():
        return is_executable(path) and path.stat().st_size >= _MIN_BINARY_BYTES
    return is_executable(path)


def find_binary(cli_path: Path | None) -> Path:
    """The `opencode` binary to run: `cliPath`, else the pinned npm install in .tools, else
    PATH; raises BackendUnavailableError naming where it looked."""
    pinned = [PROJECT_TOOLS / "opencode-ai" / "bin" / "opencode.exe"]
    pinned += sorted(PROJECT_TOOLS.glob("opencode-*/bin/opencode"))
    source = CliSource("the opencode binary", "opencode.cliPath", pins.install_hint("opencode"))
    try:
        return find_cli(cli_path, pinned, "opencode", source, usable=_usable)
    except CliNotFoundError as exc:
        raise BackendUnavailableError(str(exc)) from exc


def xdg_env(home: Path) -> dict[str, str]:
    """OpenCode's private state dirs under `home` (data holds the sessions' SQLite)."""
    return {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in XDG_KINDS}


def mcp_config(servers: Mapping[str, StdioMcpServer | HttpMcpServer]) -> dict[str, Any]:
    """The shared `mcpServers` shape in OpenCode's `mcp` terms."""
    out: dict[str, Any] = {}
    for name, server in servers.items():
        if isinstance(server, StdioMcpServer):
            out[name] = {
                "type": "local",
                "command": [server.command, *server.args],
                "environment": dict(server.env),
                "enabled": True,
            }
        else:
            out[name] = {
                "type": "remote",
                "url": server.url,
                "headers": dict(server.headers),
                "enabled": True,
            }
    return out


def opencode_config(config: OpencodeConfig) -> dict[str, Any]:
    """The inline OpenCode config (OPENCODE_CONFIG_CONTENT): `config`, then the block's keys."""
    merged: dict[str, Any] = copy.deepcopy(dict(config.config))
    merged.setdefault("autoupdate", False)
    merged.setdefault("share", "disabled")
    if config.model:
        merged["model"] = config.model
    inline_permission = merged.get("permission")
    permission = dict(inline_permission) if isinstance(inline_permission, dict) else {}
    merged["permission"] = {**config.permission_map(), **permission, **config.permission}
    if config.mcp_servers:
        inline_mcp = merged.get("mcp")
        merged["mcp"] = {
            **(inline_mcp if isinstance(inline_mcp, dict) else {}),
            **mcp_config(config.mcp_servers),
        }
    mcp = merged.get("mcp")
    merged["agent"] = mode_agents(merged.get("agent") or {}, mcp if isinstance(mcp, dict) else {})
    return merged


def session_permission(config: OpencodeConfig) -> list[dict[str, str]]:
    """The permission map as per-session rules (`POST /session {"permission": [...]}`), for a
    server the daemon did not configure (`serverUrl`); one it starts has the map in its
    config, and session rules would override the mode agents' (control.py)."""
    rules = []
    for permission, rule in config.permission_map().items():
        patterns = rule if isinstance(rule, dict) else {"*": rule}
        for pattern, action in patterns.items():
            rules.append({"permission": permission, "pattern": pattern, "action": action})
    return rules


def build_launch(
    config: OpencodeConfig,
    binary: Path,
    password: str,
    environ: Mapping[str, str] | None = None,
) -> Launch:
    """`opencode serve` on 127.0.0.1, any free port, with basic auth and the inline config."""
    env = dict(os.environ if environ is None else environ)
    env.update(QUIET_ENV)
    if config.home is not None:
        env.update(xdg_env(config.home.expanduser().resolve()))
    env.update(config.env)
    env["OPENCODE_SERVER_USERNAME"] = "opencode"
    env["OPENCODE_SERVER_PASSWORD"] = password
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(opencode_config(config))
    argv = [str(binary), "serve", "--hostname", "127.0.0.1", "--port", "0"]
    return Launch(argv=argv, env=env, cwd=config.working_directory.expanduser().resolve())
