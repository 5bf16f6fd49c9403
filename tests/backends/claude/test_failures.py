"""The Failed contract on the Claude backend's start error path, without the real CLI: the
binary named by claude.cliPath is gone by the time the turn needs it. The caller gets a
sentence and an error id; the path (which could name anything on the daemon's machine) is in
the log under that id."""

from __future__ import annotations

from pathlib import Path

from core.backend import Failed
from tests.support.errors import assert_logged_safely, one_turn
from wrappers.claude import create
from wrappers.claude.config import ClaudeConfig


async def test_a_binary_that_cannot_run_fails_the_turn_with_a_sentence(tmp_path: Path) -> None:
    hidden = tmp_path / "sk-test-private-directory"
    hidden.mkdir()
    binary = hidden / "claude"
    binary.write_text("#!/nonexistent/interpreter\n")
    binary.chmod(0o755)
    backend = create(ClaudeConfig(working_directory=tmp_path, cli_path=binary))
    await backend.start()
    binary.unlink()
    events, logs = await one_turn(backend)

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.kind == "unavailable"
    assert failed.message.startswith("Claude Code is not available. The daemon log has")
    entry = assert_logged_safely(failed.message, logs, secret="sk-test-private-directory")
    assert entry["event"] == "claude.unavailable"
