"""The orchestrator as a real process: `python -m examples.crew`, killed with SIGKILL mid-job
and run again with the same job id."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.text import TextReceiveStream

from examples.crew.ledger.ledger import Ledger
from tests.crew import remote
from tests.crew.agents import CrewBackend
from tests.crew.conftest import StartAgent
from tests.crew.test_crew import VERDICT

REPO = Path(__file__).resolve().parents[2]


class Lines:
    """The lines of a process's output, read as they come."""

    def __init__(self, stream: ByteReceiveStream | None) -> None:
        assert stream is not None
        self._stream = TextReceiveStream(stream)
        self._buffer = ""
        self.seen: list[str] = []

    async def until(self, wanted: Callable[[str], bool]) -> str:
        with anyio.fail_after(30):
            while True:
                while "\n" in self._buffer:
                    line, self._buffer = self._buffer.split("\n", 1)
                    self.seen.append(line)
                    if wanted(line):
                        return line
                try:
                    self._buffer += await self._stream.receive()
                except anyio.EndOfStream:
                    raise AssertionError("output ended; seen:\n" + "\n".join(self.seen)) from None

    async def rest(self) -> str:
        with anyio.fail_after(30):
            async for chunk in self._stream:
                self._buffer += chunk
        return self._buffer


def write_plan(path: Path, agents: dict[str, str], steps: list[dict[str, Any]]) -> Path:
    doc = {"agents": {n: {"card": u} for n, u in agents.items()}, "steps": steps}
    path.write_text(json.dumps(doc))
    return path


async def crew_process(*args: str) -> Process:
    return await anyio.open_process(
        [sys.executable, "-m", "examples.crew", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
    )


async def test_killing_the_orchestrator_mid_job_then_rerunning_sends_nothing_twice(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    writer, reviewer = CrewBackend(), CrewBackend()
    writer_url = await start_agent(writer)
    plan = write_plan(
        tmp_path / "plan.json",
        {"writer": writer_url, "reviewer": await start_agent(reviewer)},
        [
            {"id": "write", "agent": "writer", "prompt": "block"},
            {
                "id": "review",
                "agent": "reviewer",
                "dependsOn": ["write"],
                "prompt": "verdicts: approve\n{{steps.write}}",
                "schema": VERDICT,
            },
        ],
    )
    book = tmp_path / "crew.sqlite3"
    args = ("run", str(plan), "--job", "J", "--input", "go", "--ledger", str(book))

    first = await crew_process(*args)
    log = Lines(first.stderr)
    line = await log.until(lambda line: "step=write" in line and "task=" in line)
    task_id = line.split("task=")[1].split()[0]
    await writer.started.wait()  # the agent is at work on it
    first.send_signal(signal.SIGKILL)
    assert await first.wait() == -signal.SIGKILL
    await first.aclose()

    ledger = Ledger(book)
    await ledger.open()
    [run] = await ledger.runs("J", "write")
    assert run.task_id == task_id  # written the moment it was known
    assert run.state in ("submitted", "working")

    second = await crew_process(*args)
    log = Lines(second.stderr)
    await log.until(
        lambda line: "step=write" in line and "state=working" in line and task_id in line
    )
    writer.release()
    report = await Lines(second.stdout).rest()
    await log.rest()
    assert await second.wait() == 0, log.seen
    await second.aclose()

    assert "# Crew job `J`: done" in report
    assert len(writer.turns) == 1
    assert len(reviewer.turns) == 1
    assert [t["id"] for t in await remote.tasks(writer_url)] == [task_id]
    assert [r.attempt for r in await ledger.runs("J")] == [1, 1]
    await ledger.close()


async def test_a_question_without_a_terminal_exits_3_with_the_question(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path / "plan.json",
        {"a": await start_agent(CrewBackend())},
        [{"id": "q", "agent": "a", "prompt": "ask: Which database?"}],
    )
    book = str(tmp_path / "crew.sqlite3")
    process = await crew_process("run", str(plan), "--job", "Q", "--input", "x", "--ledger", book)
    report, log = await Lines(process.stdout).rest(), await Lines(process.stderr).rest()
    assert await process.wait() == 3
    await process.aclose()
    assert "Which database?" in report
    assert "resume with: python -m examples.crew run" in log

    again = await crew_process(
        "run", str(plan), "--job", "Q", "--ledger", book, "--answer", "q=Postgres"
    )
    report = await Lines(again.stdout).rest()
    assert await again.wait() == 0
    await again.aclose()
    assert "answered: Postgres" in report

    rebuilt = await crew_process("report", str(plan), "--job", "Q", "--ledger", book)
    text = await Lines(rebuilt.stdout).rest()
    assert await rebuilt.wait() == 0
    # The report is rebuilt from the ledger alone (the agents were not contacted this time).
    assert text.split("## Agents")[0] == report.split("## Agents")[0]
    await rebuilt.aclose()


async def test_check_reads_every_card_and_a_bad_plan_exits_2(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    plan = write_plan(
        tmp_path / "plan.json",
        {"a": await start_agent(CrewBackend())},
        [{"id": "one", "agent": "a", "prompt": "say: {{steps.nope}}"}],
    )
    bad = await crew_process("check", str(plan))
    error = await Lines(bad.stderr).rest()
    assert await bad.wait() == 2
    await bad.aclose()
    assert "reads steps.nope, which is not among its dependencies" in error

    good = write_plan(
        tmp_path / "good.json",
        {"a": await start_agent(CrewBackend())},
        [{"id": "one", "agent": "a", "prompt": "say: hi"}],
    )
    check = await crew_process("check", str(good))
    out = await Lines(check.stdout).rest()
    assert await check.wait() == 0
    await check.aclose()
    assert "speaks 1.0, 0.3; would use v1.0 JSONRPC (stream)" in out


async def test_an_unreachable_agent_exits_2_before_anything_runs(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path / "plan.json",
        {"gone": "http://127.0.0.1:9"},
        [{"id": "one", "agent": "gone", "prompt": "say: hi"}],
    )
    book = str(tmp_path / "crew.sqlite3")
    process = await crew_process("run", str(plan), "--input", "x", "--ledger", book)
    error = await Lines(process.stderr).rest()
    assert await process.wait() == 2
    await process.aclose()
    assert "agent 'gone'" in error
    assert "card unreachable" in error
    assert "Traceback" not in error
