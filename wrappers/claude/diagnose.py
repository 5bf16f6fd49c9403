"""Static checks for `a2a-wrapper check`: binary and version, credentials
(the working directory is a check of the core, shared by every backend).

Nothing here starts the agent or prints a secret: credentials are reported by where they come
from (a variable's name, a file's path), never by value.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import anyio

from core.backend import Diagnosis
from core.backend.binaries import CliNotFoundError
from core.backend.credentials import epoch, expiry_note, read_json
from wrappers.claude.config import ClaudeConfig
from wrappers.claude.options import CONFIG_DIR_VARIABLE, agent_env, resolve_cli

VERSION_TIMEOUT = 10.0
CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
PROVIDER_VARIABLES = (
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)


async def cli_version(cli: Path) -> str:
    """`<cli> --version`, e.g. "2.1.332 (Claude Code)"; raises OSError or CalledProcessError."""
    with anyio.fail_after(VERSION_TIMEOUT):
        done = await anyio.run_process([str(cli), "--version"], check=True)
    return done.stdout.decode("utf-8", "replace").strip()


async def binary(config: ClaudeConfig) -> Diagnosis:
    try:
        cli = resolve_cli(config)
    except CliNotFoundError as exc:
        return Diagnosis("claude binary", ok=False, detail=str(exc))
    try:
        version = await cli_version(cli)
    except (OSError, subprocess.CalledProcessError, TimeoutError) as exc:
        return Diagnosis("claude binary", ok=False, detail=f"{cli}: does not run ({exc})")
    return Diagnosis("claude binary", ok=True, detail=f"{cli} ({version})")


def config_dir(config: ClaudeConfig, environ: Mapping[str, str]) -> Path:
    """Where the CLI keeps its state and its login: `home`, CLAUDE_CONFIG_DIR, or ~/.claude."""
    env = {**environ, **agent_env(config)}
    configured = env.get(CONFIG_DIR_VARIABLE)
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def credentials(config: ClaudeConfig, environ: Mapping[str, str] | None = None) -> Diagnosis:
    environ = os.environ if environ is None else environ
    env = {**environ, **agent_env(config)}
    endpoint = env.get("ANTHROPIC_BASE_URL")
    where = f" for {urlsplit(endpoint).netloc or endpoint}" if endpoint else ""
    for name in CREDENTIAL_VARIABLES:
        if env.get(name):
            return Diagnosis("credentials", ok=True, detail=f"{name} is set{where}")
    for name in PROVIDER_VARIABLES:
        if env.get(name):
            return Diagnosis("credentials", ok=True, detail=f"{name} is set (cloud provider)")
    login = config_dir(config, environ) / ".credentials.json"
    if login.is_file():
        return _login(login)
    return Diagnosis(
        "credentials",
        ok=False,
        detail="none found: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) for the daemon or "
        f"in claude.env, or run `claude /login` (looked for {login})",
    )


def _login(login: Path) -> Diagnosis:
    """A `claude /login` (OAuth) login: its expiry, as the file records it."""
    oauth = (read_json(login) or {}).get("claudeAiOauth")
    oauth = oauth if isinstance(oauth, dict) else {}
    ok, note = expiry_note(epoch(oauth.get("expiresAt")), renewable=bool(oauth.get("refreshToken")))
    plan = oauth.get("subscriptionType")
    plan_note = f", {plan} plan" if isinstance(plan, str) else ""
    detail = f"a `claude /login` login in {login}{plan_note}; {note}"
    if not ok:
        detail += ": log in again with `claude /login` (or `claude setup-token`)"
    return Diagnosis("credentials", ok=ok, detail=detail)


async def diagnose(config: ClaudeConfig) -> list[Diagnosis]:
    return [await binary(config), credentials(config)]
