"""`a2a-wrapper check` for Copilot: static checks that need no running CLI and print no secret."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import anyio

from core.backend import Diagnosis
from core.backend.binaries import CliNotFoundError
from core.backend.credentials import expiry_note
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.runtime import PINNED_CLI_VERSION, child_env, find_cli

TOKEN_VARIABLES = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")


def credentials_fix(config: CopilotConfig) -> str:
    """What to do on the daemon's host when the model endpoint refuses the credentials."""
    if config.provider is not None:
        what = "set copilot.provider.apiKey to a valid key for the BYOK endpoint"
    else:
        what = (
            "set COPILOT_GITHUB_TOKEN (or GH_TOKEN, or copilot.githubToken) to a valid token,"
            " or run `copilot login` for the daemon's user"
        )
    return f"On the daemon's host, {what}; then send the message again."


_VERSION = re.compile(r"(\d+\.\d+\.\d+)")


async def diagnose(config: CopilotConfig, environ: Mapping[str, str]) -> list[Diagnosis]:
    """The CLI (found, runs, which version) and the credentials (present or not). The working
    directory, a key every backend shares, is checked by `a2a-wrapper check` itself."""
    return [await _binary(config, environ), _credentials(config, environ)]


async def _binary(config: CopilotConfig, environ: Mapping[str, str]) -> Diagnosis:
    try:
        cli = find_cli(config, environ)
    except CliNotFoundError as exc:
        return Diagnosis("copilot CLI", ok=False, detail=str(exc))
    try:
        with anyio.fail_after(30):
            done = await anyio.run_process(
                [str(cli), "--version"], env=child_env(config, environ), check=False
            )
    except (OSError, TimeoutError, subprocess.SubprocessError) as exc:
        return Diagnosis("copilot CLI", ok=False, detail=f"{cli} does not run: {exc}")
    found = _VERSION.search(done.stdout.decode(errors="replace"))
    if done.returncode != 0 or found is None:
        return Diagnosis("copilot CLI", ok=False, detail=f"{cli} --version failed")
    version = found.group(1)
    note = "" if version == PINNED_CLI_VERSION else f" (the SDK is pinned to {PINNED_CLI_VERSION})"
    return Diagnosis("copilot CLI", ok=True, detail=f"{cli}, version {version}{note}")


def _credentials(config: CopilotConfig, environ: Mapping[str, str]) -> Diagnosis:
    provider = config.provider
    if provider is not None:
        where = urlsplit(provider.base_url)
        endpoint = (
            f"{where.scheme}://{where.hostname or ''}{f':{where.port}' if where.port else ''}"
        )
        key = "API key set" if provider.api_key else "no API key (fine for a local endpoint)"
        mode = ", offline" if config.offline else ""
        return Diagnosis(
            "credentials",
            ok=True,
            detail=f"BYOK {provider.type} endpoint {endpoint}{mode}, model {config.model}; {key}",
        )
    if config.github_token:
        return Diagnosis("credentials", ok=True, detail="GitHub token set in copilot.githubToken")
    env = {**environ, **config.env}
    present = [name for name in TOKEN_VARIABLES if env.get(name)]
    if present:
        return Diagnosis("credentials", ok=True, detail=f"GitHub token in {present[0]}")
    recorded = _logged_in(config, env)
    if recorded is not None:
        # GitHub's OAuth tokens of `copilot login` carry no expiry (they last until revoked).
        _, note = expiry_note(None)
        detail = f"a `copilot login` account is recorded in {recorded}; {note}"
        return Diagnosis("credentials", ok=True, detail=detail)
    return Diagnosis(
        "credentials",
        ok=False,
        detail="none: set copilot.githubToken or COPILOT_GITHUB_TOKEN / GH_TOKEN, run "
        "`copilot login`, or point copilot.provider at a model endpoint (BYOK)",
    )


def _logged_in(config: CopilotConfig, env: Mapping[str, str]) -> Path | None:
    """The config file in which `copilot login` recorded an account, if it did."""
    home = config.home or env.get("COPILOT_HOME") or Path(env.get("HOME") or "~") / ".copilot"
    recorded = Path(os.path.expanduser(home)) / "config.json"
    try:
        stored = json.loads(recorded.read_text())
    except (OSError, ValueError):
        return None
    found = isinstance(stored, dict) and (
        stored.get("lastLoggedInUser") or stored.get("loggedInUsers")
    )
    return recorded if found else None
