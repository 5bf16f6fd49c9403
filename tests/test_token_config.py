"""Bearer token rules through the real `a2a-wrapper serve` process (docs/operations.md#tokens)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import EXE, Daemon

SCRIPTED = "tests.support.scripted:ScriptedBackend"


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    config = {
        "backend": SCRIPTED,
        "storage": {"kind": "memory"},
        "server": {"auth": {"tokens": [{"token": "tiny", "principal": "ops"}]}},
    }
    made = Daemon(config, tmp_path)
    yield made
    made.close()


@pytest.mark.parametrize(
    ("token", "env"),
    [
        ("", {}),
        ("${A2A_TEST_EMPTY_TOKEN:-}", {}),
        ("${A2A_TEST_EMPTY_TOKEN}", {"A2A_TEST_EMPTY_TOKEN": ""}),
    ],
    ids=["literal", "unset-variable-default", "empty-variable"],
)
def test_a_public_bind_with_an_empty_token_exits_2_naming_the_key(
    tmp_path: Path, token: str, env: dict[str, str]
) -> None:
    config = tmp_path / "config.json"
    server = {"host": "0.0.0.0", "auth": {"tokens": [{"token": token, "principal": "ops"}]}}  # noqa: S104 - config data
    config.write_text(json.dumps({"backend": SCRIPTED, "server": server}))
    environ = {k: v for k, v in os.environ.items() if k != "A2A_TEST_EMPTY_TOKEN"}

    done = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "serve", str(config), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**environ, **env},
    )

    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "a2a-wrapper: config error: server.auth.tokens[0].token: the token is empty "
        "(is its ${VAR} set?)"
    ]


def test_a_short_token_is_served_with_a_warning_at_start(daemon: Daemon) -> None:
    daemon.start()
    daemon.stop()

    events = [json.loads(line) for line in daemon.log_path.read_text().splitlines()]
    warnings = [e for e in events if e.get("event") == "auth.short_token"]
    assert warnings == [
        {
            "event": "auth.short_token",
            "key": "server.auth.tokens[0].token",
            "min_length": 16,
            "level": "warning",
            "timestamp": warnings[0]["timestamp"],
        }
    ]
    assert "tiny" not in daemon.log_path.read_text()
