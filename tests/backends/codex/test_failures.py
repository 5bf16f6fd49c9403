"""The Failed contract on the Codex backend's JSON-RPC error paths, without the real CLI: the
backend drives `fake_app_server.py` (in the app-server's stdio protocol), which refuses a
request with an error quoting a key. The caller gets a sentence and an error id; the log has
the text."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.backend import Failed
from core.backend.base import serving
from tests.support.errors import assert_logged_safely, one_turn
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig

REPO = Path(__file__).resolve().parents[3]


def fake_codex(tmp_path: Path) -> Path:
    """An executable that runs the fake app-server (whatever arguments it is given)."""
    script = tmp_path / "codex"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from tests.backends.codex.fake_app_server import main\n"
        "main()\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize(
    ("refused", "sentence", "event"),
    [
        ("thread/start", "Codex could not open a thread.", "codex.thread.failed"),
        ("turn/start", "Codex refused the turn.", "codex.turn.refused"),
    ],
)
async def test_a_refused_request_fails_with_a_sentence_and_the_text_goes_to_the_log(
    tmp_path: Path, refused: str, sentence: str, event: str
) -> None:
    config = CodexConfig(
        working_directory=tmp_path,
        skip_git_repo_check=True,
        cli_path=fake_codex(tmp_path),
        home=tmp_path / "codex-home",
        env={"FAKE_CODEX_REFUSE": refused},
    )
    backend = CodexBackend(config)
    async with serving(backend):  # start, and serve (the app-server) in a task group
        events, logs = await one_turn(backend)

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.message.startswith(f"{sentence} The daemon log has the details")
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == event
