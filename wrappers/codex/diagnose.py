"""`a2a-wrapper check` for the Codex backend: static checks that need no app-server."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import anyio

from core.backend import Diagnosis
from core.backend.binaries import CliNotFoundError
from core.backend.credentials import expiry_note, jwt_expiry, read_json
from wrappers.codex.config import CodexConfig
from wrappers.codex.options import (
    NotAGitRepositoryError,
    agent_environment,
    check_working_directory,
    codex_binary,
    codex_home,
    effective_config,
    git_root,
    provider_key_variable,
    uses_custom_provider,
    working_directory,
)

OPENAI_KEY_VARIABLES = ("OPENAI_API_KEY", "CODEX_API_KEY")


async def diagnose(config: CodexConfig, environ: Mapping[str, str]) -> list[Diagnosis]:
    return [
        await binary_check(config, environ),
        git_repository_check(config),
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
    except CliNotFoundError as exc:
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


def git_repository_check(config: CodexConfig) -> Diagnosis:
    """Codex works in git repositories; outside one only with `skipGitRepoCheck`. (That the
    working directory exists is a check of the core.)"""
    directory = working_directory(config)
    if not directory.is_dir():
        return Diagnosis("git repository", False, f"{directory} is not a directory")
    root = git_root(directory)
    if root is not None:
        return Diagnosis("git repository", True, str(root))
    if config.skip_git_repo_check:
        return Diagnosis("git repository", True, "none; allowed by codex.skipGitRepoCheck")
    try:
        check_working_directory(config)
    except NotAGitRepositoryError as exc:
        return Diagnosis("git repository", False, str(exc))
    return Diagnosis("git repository", True, str(directory))  # pragma: no cover - unreachable


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
        return _signed_in(auth)
    return Diagnosis(
        "credentials",
        False,
        f"none: set {' or '.join(OPENAI_KEY_VARIABLES)}, or run `codex login` "
        f"(with CODEX_HOME={_home_hint(config, environ)})",
    )


def _signed_in(auth: Path) -> Diagnosis:
    """A `codex login`: an API key it stored, or a ChatGPT login whose access token's expiry
    says how long it lasts (Codex renews it with the refresh token)."""
    recorded = read_json(auth) or {}
    if recorded.get("OPENAI_API_KEY"):
        return Diagnosis("credentials", True, f"an API key stored by `codex login` ({auth})")
    tokens = recorded.get("tokens")
    tokens = tokens if isinstance(tokens, dict) else {}
    ok, note = expiry_note(
        jwt_expiry(tokens.get("access_token")), renewable=bool(tokens.get("refresh_token"))
    )
    detail = f"signed in with `codex login` ({auth}); {note}"
    return Diagnosis("credentials", ok, detail if ok else f"{detail}: run `codex login` again")


def _home_hint(config: CodexConfig, environ: Mapping[str, str]) -> Path:
    return codex_home(config, environ)
