"""`a2a-wrapper check`, `card` and `schema`, called in-process (`main(argv)`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.cli import main

SCRIPTED = "tests.support.scripted:ScriptedBackend"


def write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"backend": SCRIPTED, "server": {"prot": 1}}, "server.prot: unknown key"),
        (
            {"backend": SCRIPTED, "server": {"port": "eighty"}},
            "server.port: Input should be a valid integer",
        ),
        (
            {"backend": SCRIPTED, "server": {"auth": {"tokens": [{"token": "${NO_SUCH_VAR_X}"}]}}},
            "server.auth.tokens[0].token: environment variable NO_SUCH_VAR_X is not set",
        ),
        ({"backend": "nope"}, "unknown backend 'nope'"),
        (
            {"backend": SCRIPTED, "server": {"host": "0.0.0.0"}},  # noqa: S104 - config data
            "server.allowUnauthenticated: true",
        ),
        (
            {
                "backend": SCRIPTED,
                "server": {"auth": {"tokens": [{"token": "", "principal": "p"}]}},
            },
            "server.auth.tokens[0].token: the token is empty",
        ),
    ],
    ids=[
        "unknown-key",
        "wrong-type",
        "missing-env",
        "unknown-backend",
        "public-bind",
        "empty-token",
    ],
)
def test_check_reports_a_broken_config_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: dict[str, Any], expected: str
) -> None:
    code = main(["check", write(tmp_path, config)])

    assert code == 2
    assert expected in capsys.readouterr().err


def test_check_reports_the_backend_and_the_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", write(tmp_path, {"backend": SCRIPTED})])

    out = capsys.readouterr().out
    assert code == 0
    assert "config ok (backend tests.support.scripted:ScriptedBackend)" in out
    assert "  ok   backend: in-process, nothing to check" in out
    assert "  ok   auth: none (loopback only)" in out
    assert "  ok   budget: none" in out
    card = json.loads(out[out.index("agent card:") + len("agent card:") :])
    assert card["name"] == "a2a-wrapper"


def test_check_prints_the_conversation_control_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declaring = "tests.support.declaring:DeclaringBackend"
    allow = {"allow": {"efforts": ["high"], "modes": ["readOnly"]}}

    assert main(["check", write(tmp_path, {"backend": declaring, "turnOptions": allow})]) == 0
    out = capsys.readouterr().out
    assert main(["check", write(tmp_path, {"backend": SCRIPTED})]) == 0
    plain = capsys.readouterr().out

    block = out[out.index("conversation control") : out.index("agent card:")].splitlines()
    assert block[1:] == [
        "  steer: yes",
        "  fork: yes",
        "  models: any name",  # not started: its agent has not reported its models
        "  efforts: high",
        "  modes: default, readOnly",
        "  approvals: yes",
        "  resume: yes",
        "  image input: yes",
    ]
    card = json.loads(out[out.index("agent card:") + len("agent card:") :])
    [extension] = card["capabilities"]["extensions"]
    assert extension["params"]["efforts"] == ["high"]
    # `card` builds no backend (no agent SDK imported): the card without the extension.
    assert main(["card", write(tmp_path, {"backend": declaring})]) == 0
    assert "extensions" not in json.loads(capsys.readouterr().out)["capabilities"]
    block = plain[plain.index("conversation control") : plain.index("agent card:")].splitlines()
    assert block[1:] == [
        "  steer: no",
        "  fork: no",
        "  models: the configured model only",
        "  efforts: none to choose",
        "  modes: default",
        "  approvals: no",
        "  resume: no",
        "  image input: no",
    ]


def test_check_shows_the_configured_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budget = {
        "perContext": {"maxCostUsd": 0.5},
        "perPrincipal": {"maxTurns": 100, "window": 3_600_000},
    }
    code = main(["check", write(tmp_path, {"backend": SCRIPTED, "budget": budget})])

    out = capsys.readouterr().out
    assert code == 0
    assert "  ok   budget: perContext: maxCostUsd 0.5; perPrincipal: maxTurns 100 per 3600 s" in out


def test_card_prints_what_the_daemon_would_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "backend": SCRIPTED,
        "server": {
            "publicUrl": "https://agents.example",
            "auth": {"tokens": [{"token": "t", "principal": "p"}]},
        },
    }
    path = write(tmp_path, config)

    assert main(["card", path]) == 0
    merged = json.loads(capsys.readouterr().out)
    assert main(["card", path, "--strict"]) == 0
    strict = json.loads(capsys.readouterr().out)

    assert merged["url"] == "https://agents.example/a2a/jsonrpc"
    assert merged["security"] == [{"bearer": []}]
    assert "url" not in strict
    assert strict["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}


def test_every_committed_config_passes_check(
    repo_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configs = sorted((repo_root / "config").glob("*.json"))
    configs = [c for c in configs if c.name != "schema.json"]

    # 1 = valid config, but a check failed (here: no credentials in the environment).
    results = {c.name: main(["check", str(c)]) for c in configs}

    assert sorted(results) == [
        "antigravity.json",
        "claude.json",
        "codex.json",
        "copilot.json",
        "echo.json",
        "gemini.json",
        "opencode.json",
    ]
    assert all(code in (0, 1) for code in results.values()), capsys.readouterr().err
    assert "agent card:" in capsys.readouterr().out


@pytest.mark.parametrize("backend", ["claude", "codex", "opencode", "copilot", "gemini"])
def test_check_fails_on_a_missing_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str
) -> None:
    missing = tmp_path / "gone"
    config = {"backend": backend, backend: {"workingDirectory": str(missing)}}

    code = main(["check", write(tmp_path, config)])

    out = capsys.readouterr().out
    assert code == 1
    assert f"FAIL working directory: {missing} does not exist" in out
    assert out.count("working directory") == 1, "the core checks it, once for every backend"


def test_check_warns_about_a_short_token_and_still_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokens = [
        {"token": "long-enough-0123456789", "principal": "a"},
        {"token": "zq7x", "principal": "b"},
    ]
    config = {"backend": SCRIPTED, "server": {"auth": {"tokens": tokens}}}

    code = main(["check", write(tmp_path, config)])

    out = capsys.readouterr().out
    assert code == 0
    assert "  ok   auth: 2 bearer token(s)" in out
    assert (
        "  warn server.auth.tokens[1].token: shorter than 16 characters; use a long random token"
        in out
    )
    assert "tokens[0]" not in out
    assert "zq7x" not in out
