"""`diagnose()` (what `a2a-wrapper check` prints for Copilot): callable without `start()`, and
never a secret's value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from tests.backends.copilot.conftest import BUNDLED_CLI
from wrappers.copilot.backend import CopilotBackend
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.runtime import PINNED_CLI_VERSION


def config(**values: object) -> CopilotConfig:
    return CopilotConfig.model_validate(values)


async def test_the_real_cli_and_a_byok_endpoint(
    copilot_cli: Path, copilot_cache: Path, tmp_path: Path
) -> None:
    backend = CopilotBackend(
        config(
            cliPath=str(copilot_cli),
            workingDirectory=str(tmp_path),
            model="local-model",
            provider={"baseUrl": "http://user:pw@127.0.0.1:11434/v1", "apiKey": "sk-secret"},
            offline=True,
        ),
        environ={"HOME": str(tmp_path), "XDG_CACHE_HOME": str(copilot_cache)},
    )

    cli, credentials = await backend.diagnose()

    assert cli.name == "copilot CLI" and cli.ok
    assert cli.detail == f"{copilot_cli}, version {PINNED_CLI_VERSION}"
    assert credentials.ok
    assert credentials.detail == (
        "BYOK openai endpoint http://127.0.0.1:11434, offline, model local-model; API key set"
    )
    assert "sk-secret" not in credentials.detail and "pw" not in credentials.detail


async def test_a_missing_cli_says_how_to_install_it(tmp_path: Path) -> None:
    backend = CopilotBackend(
        config(cliPath=str(tmp_path / "nowhere" / "copilot")), environ={"PATH": str(tmp_path)}
    )

    cli, _ = await backend.diagnose()

    assert not cli.ok
    assert f"@github/copilot@{PINNED_CLI_VERSION}" in cli.detail
    assert "copilot.cliPath" in cli.detail


@pytest.mark.parametrize(
    ("values", "environ", "ok", "detail"),
    [
        ({"githubToken": "ghp_secret"}, {}, True, "GitHub token set in copilot.githubToken"),
        ({}, {"GH_TOKEN": "ghp_secret"}, True, "GitHub token in GH_TOKEN"),
        ({"env": {"COPILOT_GITHUB_TOKEN": "ghp_secret"}}, {}, True, "in COPILOT_GITHUB_TOKEN"),
        ({}, {}, False, "none: set copilot.githubToken or COPILOT_GITHUB_TOKEN"),
    ],
)
async def test_github_credentials_present_or_not(
    tmp_path: Path, values: dict[str, object], environ: dict[str, str], ok: bool, detail: str
) -> None:
    backend = CopilotBackend(
        config(home=str(tmp_path / "home"), **values), environ={"PATH": "", **environ}
    )

    _, credentials = await backend.diagnose()

    assert credentials.ok is ok
    assert detail in credentials.detail
    assert "ghp_secret" not in credentials.detail


async def test_a_copilot_login_recorded_in_the_home_counts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text('{"lastLoggedInUser": {"login": "octocat"}}')
    backend = CopilotBackend(config(home=str(home)), environ={"PATH": ""})

    _, credentials = await backend.diagnose()

    assert credentials.ok
    assert credentials.detail == (
        f"a `copilot login` account is recorded in {home / 'config.json'}; no expiry recorded"
    )
    assert "octocat" not in credentials.detail


def test_check_of_a_config_without_cli_path_finds_the_pinned_cli(
    tmp_path: Path, copilot_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "backend": "copilot",
        "copilot": {
            "workingDirectory": str(tmp_path),
            "home": str(tmp_path / "home"),
            "env": {"XDG_CACHE_HOME": str(copilot_cache)},
            "model": "local-model",
            "provider": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "k"},
            "offline": True,
        },
    }
    path = tmp_path / "copilot.json"
    path.write_text(json.dumps(config))

    code = main(["check", str(path)])

    out = capsys.readouterr().out
    assert f"  ok   copilot CLI: {BUNDLED_CLI}, version {PINNED_CLI_VERSION}\n" in out
    assert code == 0, out
