"""`a2a-wrapper check` for OpenCode: binary and version, credentials
(the working directory is a check of the core, shared by every backend).

Runs without starting the server; never prints a secret, only where one was found.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from core.backend import Diagnosis
from core.backend.base import BackendUnavailableError
from core.backend.credentials import epoch, expiry_note
from wrappers.opencode.config import OpencodeConfig
from wrappers.opencode.launch import find_binary, opencode_config
from wrappers.opencode.server import split_credentials

# The environment variables OpenCode reads for its built-in providers (models.dev `env`).
PROVIDER_ENV: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google": ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "azure": ("AZURE_API_KEY",),
    "amazon-bedrock": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"),
    "opencode": ("OPENCODE_API_KEY",),
}


async def diagnose(
    config: OpencodeConfig, environ: Mapping[str, str] | None = None
) -> list[Diagnosis]:
    env = {**(os.environ if environ is None else environ), **config.env}
    checks = [await _binary(config), _credentials(config, env)]
    return checks


async def _binary(config: OpencodeConfig) -> Diagnosis:
    if config.server_url:
        return Diagnosis("opencode server", True, f"attaches to {_without_credentials(config)}")
    try:
        binary = find_binary(config.cli_path)
    except BackendUnavailableError as exc:
        return Diagnosis("opencode binary", False, str(exc))
    try:
        with anyio.fail_after(30):
            result = await anyio.run_process([str(binary), "--version"], check=False)
    except (OSError, TimeoutError) as exc:
        return Diagnosis("opencode binary", False, f"{binary}: does not run: {exc}")
    version = result.stdout.decode(errors="replace").strip()
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip()[:200]
        return Diagnosis("opencode binary", False, f"{binary}: exit {result.returncode}: {detail}")
    return Diagnosis("opencode binary", True, f"{binary} (version {version})")


def _without_credentials(config: OpencodeConfig) -> str:
    url, _, _ = split_credentials(config.server_url or "")
    return url


def _credentials(config: OpencodeConfig, env: Mapping[str, str]) -> Diagnosis:
    if config.server_url:
        return Diagnosis("credentials", True, "held by the server the daemon attaches to")
    merged = opencode_config(config)
    model = merged.get("model")
    if not isinstance(model, str) or "/" not in model:
        return Diagnosis(
            "credentials", True, "no model set: OpenCode uses its default and its stored logins"
        )
    provider = model.split("/", 1)[0]
    where = _inline_key(merged, provider, env) or _env_key(provider, env)
    if where:
        return Diagnosis("credentials", True, f"{provider}: {where}")
    stored = _stored_login(config, provider, env)
    if stored is not None:
        return Diagnosis("credentials", stored[0], f"{provider}: {stored[1]}")
    names = " or ".join(PROVIDER_ENV.get(provider, ())) or "the provider's apiKey"
    return Diagnosis(
        "credentials",
        False,
        f"{provider}: no credentials found: set {names} (opencode.env) or run "
        "`opencode auth login`",
    )


def _inline_key(merged: dict[str, Any], provider: str, env: Mapping[str, str]) -> str | None:
    providers = merged.get("provider")
    entry = providers.get(provider) if isinstance(providers, dict) else None
    options = entry.get("options") if isinstance(entry, dict) else None
    key = options.get("apiKey") if isinstance(options, dict) else None
    if not isinstance(key, str) or not key:
        return None
    if key.startswith("{env:") and key.endswith("}"):
        name = key[len("{env:") : -1]
        return f"apiKey from ${name}" if env.get(name) else None
    return "apiKey in opencode.config"


def _env_key(provider: str, env: Mapping[str, str]) -> str | None:
    for name in PROVIDER_ENV.get(provider, ()):
        if env.get(name):
            return f"${name} is set"
    return None


def _stored_login(
    config: OpencodeConfig, provider: str, env: Mapping[str, str]
) -> tuple[bool, str] | None:
    """An `opencode auth login` of `provider`: usable or not, and what `check` says of it (an
    OAuth login's expiry; OpenCode renews it with its refresh token)."""
    if config.home is not None:
        data = config.home.expanduser() / "data"
    else:
        data = Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    auth = data / "opencode" / "auth.json"
    try:
        stored = json.loads(auth.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = stored.get(provider) if isinstance(stored, dict) else None
    if not isinstance(entry, dict):
        return None
    if entry.get("type") != "oauth":
        return True, f"stored login in {auth}"
    ok, note = expiry_note(epoch(entry.get("expires")), renewable=bool(entry.get("refresh")))
    text = f"stored login in {auth}; {note}"
    return ok, text if ok else f"{text}: run `opencode auth login` again"


def credentials_fix(config: OpencodeConfig) -> str:
    """What to do on the daemon's host when the model provider refuses OpenCode's key."""
    provider = config.model.split("/", 1)[0] if config.model else ""
    variables = " or ".join(PROVIDER_ENV.get(provider, ()))
    key = f"set {variables} (opencode.env)" if variables else "set the provider's key"
    return (
        f"On the daemon's host, run `opencode auth login` for provider {provider or '(its)'},"
        f" or {key}, or the apiKey of the provider in opencode.config; then send the"
        " message again."
    )
