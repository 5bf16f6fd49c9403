"""What the `codex` config block means to Codex: the app-server command line and environment,
and the parameters of every thread and turn. Pure functions, no I/O beyond locating files (and
the sandbox helper's symlink, sandbox_helper.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from core.backend.binaries import CliSource, find_cli
from core.backend.config import HttpMcpServer, StdioMcpServer
from wrappers.codex.config import CodexConfig
from wrappers.codex.sandbox_helper import provide_sandbox_helper

# features: without turning these off Codex reaches for api.github.com and chatgpt.com at start.
# thread_unload_delay_secs: the daemon decides when a thread leaves memory (warmIdle, maxWarm);
# Codex would keep an unsubscribed thread loaded for a delay of its own.
# The `config` block can change both.
DAEMON_DEFAULTS: dict[str, JsonValue] = {
    "features": {"plugins": False, "apps": False},
    "thread_unload_delay_secs": 0,
}

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class NotAGitRepositoryError(ValueError):
    pass


@dataclass(frozen=True)
class Launch:
    """How to start `codex app-server` over stdio."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path


_SOURCE = CliSource(
    "the codex binary",
    "codex.cliPath",
    "the codex extra (pip install 'a2a-wrapper-daemon[codex]', which brings openai-codex-cli-bin)",
)


def codex_binary(config: CodexConfig) -> Path:
    """The codex executable: `cliPath`, else the one the pinned openai-codex-cli-bin ships, else
    PATH; raises CliNotFoundError naming what was tried."""
    return find_cli(config.cli_path, [_bundled_binary()], "codex", _SOURCE)


def _bundled_binary() -> Path | None:
    try:
        # Optional dependency, untyped (no py.typed marker).
        from codex_cli_bin import bundled_codex_path  # type: ignore[import-untyped]  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return Path(bundled_codex_path())
    except FileNotFoundError:
        return None


def _bundled_path_dir(binary: Path) -> Path | None:
    """The helper tools (rg) that ship next to the bundled binary, which Codex expects on PATH."""
    try:
        from codex_cli_bin import bundled_path_dir  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None
    folder = bundled_path_dir()
    if folder is None or Path(folder).parent != binary.parent.parent:
        return None
    return Path(folder)


def working_directory(config: CodexConfig) -> Path:
    return config.working_directory.expanduser().resolve()


def git_root(directory: Path) -> Path | None:
    """The enclosing git work tree of `directory`, if any: a `.git` folder with a HEAD, or a
    `.git` file pointing elsewhere (worktrees, submodules). An empty `.git` folder is not a
    repository: Codex's sandbox leaves such mount points behind (e.g. /tmp/.git)."""
    for folder in (directory, *directory.parents):
        marker = folder / ".git"
        if (marker / "HEAD").is_file():
            return folder
        if marker.is_file() and marker.read_text(errors="replace").startswith("gitdir:"):
            return folder
    return None


def check_working_directory(config: CodexConfig) -> Path:
    """The resolved working directory; raises when it is missing, or outside a git repository
    without `skipGitRepoCheck` (the rule `codex exec` applies; app-server leaves it to us)."""
    directory = working_directory(config)
    if not directory.is_dir():
        raise NotADirectoryError(f"codex.workingDirectory {directory} is not a directory")
    if not config.skip_git_repo_check and git_root(directory) is None:
        raise NotAGitRepositoryError(
            f"codex.workingDirectory {directory} is not inside a git repository; Codex works "
            "in git repositories so its edits can be reviewed and undone. Set "
            "codex.skipGitRepoCheck: true to run there anyway"
        )
    return directory


def codex_home(config: CodexConfig, environ: Mapping[str, str]) -> Path:
    """Where Codex keeps its state: `home`, else $CODEX_HOME, else ~/.codex."""
    if config.home is not None:
        return config.home.expanduser()
    env_home = config.env.get("CODEX_HOME") or environ.get("CODEX_HOME")
    return Path(env_home).expanduser() if env_home else Path.home() / ".codex"


def agent_environment(config: CodexConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The daemon's environment plus the block's `env`, with CODEX_HOME when `home` is set."""
    env = {**environ, **config.env}
    if config.home is not None:
        env["CODEX_HOME"] = str(config.home.expanduser())
    return env


def launch(config: CodexConfig, binary: Path, environ: Mapping[str, str]) -> Launch:
    env = agent_environment(config, environ)
    tools = _bundled_path_dir(binary)
    helper = provide_sandbox_helper(binary, environ, (working_directory(config),))
    first = [str(folder) for folder in (helper, tools) if folder is not None]
    if first:
        env["PATH"] = os.pathsep.join([*first, *filter(None, [env.get("PATH")])])
    argv = [str(binary)]
    for override in config_overrides(config):
        argv += ["--config", override]
    argv += ["app-server", "--listen", "stdio://"]
    return Launch(argv=tuple(argv), env=env, cwd=working_directory(config))


def effective_config(config: CodexConfig) -> dict[str, JsonValue]:
    """Codex config overrides: the daemon's defaults, the translated shared keys (mcpServers,
    additionalDirectories), then the block's own `config`, merged in that order."""
    merged: dict[str, JsonValue] = _merge({}, DAEMON_DEFAULTS)
    if config.mcp_servers:
        servers: dict[str, JsonValue] = {
            name: mcp_server(server) for name, server in config.mcp_servers.items()
        }
        merged = _merge(merged, {"mcp_servers": servers})
    if config.additional_directories:
        roots: list[JsonValue] = [
            str(p.expanduser().resolve()) for p in config.additional_directories
        ]
        merged = _merge(merged, {"sandbox_workspace_write": {"writable_roots": roots}})
    return _merge(merged, config.config)


def mcp_server(server: StdioMcpServer | HttpMcpServer) -> dict[str, JsonValue]:
    """One `mcpServers` entry in Codex's shape. `required` makes Codex wait for the server
    before the first model request; `approve` lets its tools run under approval "never"."""
    common: dict[str, JsonValue] = {"required": True, "default_tools_approval_mode": "approve"}
    if isinstance(server, StdioMcpServer):
        stdio: dict[str, JsonValue] = {"command": server.command, "args": list(server.args)}
        if server.env:
            stdio["env"] = dict(server.env)
        return {**stdio, **common}
    http: dict[str, JsonValue] = {"url": server.url}
    if server.headers:
        http["http_headers"] = dict(server.headers)
    return {**http, **common}


def config_overrides(config: CodexConfig) -> list[str]:
    """`key=value` arguments for `codex --config`, values in TOML. Codex splits keys on dots and
    cannot quote them, so a table with a key that is not bare is passed whole, inline."""
    overrides: list[str] = []
    for key, value in effective_config(config).items():
        if not _BARE_KEY.fullmatch(key):
            raise ValueError(f"codex.config key {key!r} is not a bare TOML key")
        _flatten(key, value, overrides)
    return overrides


def _flatten(path: str, value: JsonValue, out: list[str]) -> None:
    if isinstance(value, dict) and value and all(_BARE_KEY.fullmatch(k) for k in value):
        for key, item in value.items():
            _flatten(f"{path}.{key}", item, out)
        return
    out.append(f"{path}={toml_value(value)}")


def toml_value(value: JsonValue) -> str:
    """A JSON value as a TOML value (inline tables for objects). JSON string escapes are valid
    TOML basic-string escapes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        fields = (f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(fields) + "}"
    raise ValueError("null has no TOML form")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _merge(base: dict[str, JsonValue], over: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    merged = dict(base)
    for key, value in over.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = _merge(current, value)
        else:
            merged[key] = value
    return merged


def thread_params(config: CodexConfig, cwd: Path | None = None) -> dict[str, Any]:
    """Parameters of `thread/start` and `thread/resume`. Approval and sandbox are always
    explicit: the SDK's default approval mode starts a reviewer that makes model calls.
    `cwd`: the context's workspace (None = workingDirectory); one app-server serves every
    context, so the directory goes with each thread."""
    params: dict[str, Any] = {
        "approvalPolicy": config.approval_policy,
        "sandbox": config.sandbox,
        "cwd": str(cwd or working_directory(config)),
    }
    optional = {
        "model": config.model,
        "baseInstructions": config.base_instructions,
        "developerInstructions": config.developer_instructions,
    }
    params.update({k: v for k, v in optional.items() if v is not None})
    return params


def provider_key_variable(config: CodexConfig) -> str | None:
    """The environment variable holding the API key of a custom model provider, if any."""
    merged = effective_config(config)
    provider = merged.get("model_provider")
    providers = merged.get("model_providers")
    if not isinstance(provider, str) or not isinstance(providers, dict):
        return None
    entry = providers.get(provider)
    if not isinstance(entry, dict):
        return None
    key = entry.get("env_key")
    return key if isinstance(key, str) else None


def uses_custom_provider(config: CodexConfig) -> bool:
    provider = effective_config(config).get("model_provider")
    return isinstance(provider, str) and provider != "openai"


def credentials_fix(config: CodexConfig) -> str:
    """What to do on the daemon's host when the provider refuses Codex's credentials: log in
    again in Codex's home, or set the key variable of the configured model provider."""
    login = "codex login"
    if config.home is not None:
        login = f"CODEX_HOME={shlex.quote(str(config.home.expanduser()))} {login}"
    providers = config.config.get("model_providers")
    chosen = config.config.get("model_provider")
    variable = "OPENAI_API_KEY"
    if isinstance(providers, dict) and isinstance(chosen, str):
        provider = providers.get(chosen)
        if isinstance(provider, dict) and isinstance(provider.get("env_key"), str):
            variable = str(provider["env_key"])
    return (
        f"On the daemon's host, run `{login}`, or set {variable} to a valid key in the daemon's"
        " environment or in codex.env; then send the message again."
    )
