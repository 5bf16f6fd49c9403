"""`a2a-wrapper check` for the Codex backend: static checks that need no app-server."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import anyio

from core.backend import Diagnosis
from core.backend.config.codex import CodexConfig
from wrappers.codex.options import (
    CodexNotFoundError,
    NotAGitRepositoryError,
    agent_environment,
    check_working_directory,
    codex_binary,
    codex_home,
    effective_config,
    provider_key_variable,
    uses_custom_provider,
)

OPENAI_KEY_VARIABLES = ("OPENAI_API_KEY", "CODEX_API_KEY")


async def diagnose(config: CodexConfig, environ: Mapping[str, str]) -> list[Diagnosis]:
    return [
        await binary_check(config, environ),
        working_directory_check(config),
        credentials_check(config, environ),
        Diagnosis(
            "safety",
            True,
            f"sandbox {config.sandbox}, approval policy {config.approval_policy}",
        ),
    ]


async def binary_check(config: CodexConfig, environ: Mapping[str, str]) -> Diagnosis:
    try:
        binary = codex_binary(config)
    except CodexNotFoundError as exc:
        return Diagnosis("codex binary", False, str(exc))
    try:
        with anyio.fail_after(30):
            result = await anyio.run_process(
                [str(binary), "--version"],
                env=agent_environment(config, environ),
                stdin=subprocess.DEVNULL,
                check=False,
                start_new_session=True,
            )
    except (OSError, TimeoutError) as exc:
        return Diagnosis("codex binary", False, f"{binary} does not run: {exc}")
    version = result.stdout.decode(errors="replace").strip()
    if result.returncode != 0 or not version:
        return Diagnosis("codex binary", False, f"{binary} --version exited {result.returncode}")
    return Diagnosis("codex binary", True, f"{version} ({binary})")


def working_directory_check(config: CodexConfig) -> Diagnosis:
    try:
        directory = check_working_directory(config)
    except (NotADirectoryError, NotAGitRepositoryError) as exc:
        return Diagnosis("working directory", False, str(exc))
    return Diagnosis("working directory", True, str(directory))


def credentials_check(config: CodexConfig, environ: Mapping[str, str]) -> Diagnosis:
    """Whether Codex will find credentials; names variables and files, never their values."""
    env = agent_environment(config, environ)
    if uses_custom_provider(config):
        provider = effective_config(config).get("model_provider")
        variable = provider_key_variable(config)
        if variable is None:
            return Diagnosis("credentials", True, f"model provider {provider} takes no API key")
        present = bool(env.get(variable))
        state = "is set" if present else "is not set"
        return Diagnosis(
            "credentials", present, f"{variable} {state} (the key of model provider {provider})"
        )
    for variable in OPENAI_KEY_VARIABLES:
        if env.get(variable):
            return Diagnosis("credentials", True, f"{variable} is set")
    auth = codex_home(config, environ) / "auth.json"
    if auth.is_file():
        return Diagnosis("credentials", True, f"signed in with `codex login` ({auth})")
    return Diagnosis(
        "credentials",
        False,
        f"none: set {' or '.join(OPENAI_KEY_VARIABLES)}, or run `codex login` "
        f"(with CODEX_HOME={_home_hint(config, environ)})",
    )


def _home_hint(config: CodexConfig, environ: Mapping[str, str]) -> Path:
    return codex_home(config, environ)
