"""A served crew never blocks the daemon's event loop: a whole job, served by the crew backend
in the real daemon app and driven by the official a2a-sdk client, runs under `blockbuster`,
which raises in any blocking call (SQLite, file or socket I/O, sleeps, ...) made on the event
loop from the crew's code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from a2a.types import SendMessageRequest, TaskState
from blockbuster import BlockBuster, BlockingError

from examples.crew.agent import CrewAgent, CrewConfig
from examples.crew.ledger.ledger import Ledger
from examples.crew.plan.plan import load_plan
from tests.crew.agents import CrewBackend
from tests.crew.conftest import StartAgent
from tests.crew.test_serve import Seen, sdk, watch
from tests.interop.conftest import user_msg

VERDICT = {"type": "object", "required": ["verdict"], "properties": {"verdict": {}}}


@pytest.fixture
def loop_guard() -> Iterator[BlockBuster]:
    """Blocking calls from examples/crew on the event loop raise BlockingError."""
    guard = BlockBuster(scanned_modules=["examples.crew"])
    guard.activate()
    try:
        yield guard
    finally:
        guard.deactivate()


async def test_the_detector_catches_a_blocking_call_from_the_crew(
    tmp_path: Path, loop_guard: BlockBuster
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")  # the test's own code is not watched, only the crew's
    with pytest.raises(BlockingError):
        load_plan(plan)  # reads the file on the event loop
    ledger = Ledger(tmp_path / "l.sqlite3")
    await ledger.open()  # the ledger itself is on a worker thread: no error
    await ledger.close()


async def test_a_served_job_never_blocks_the_event_loop(
    start_agent: StartAgent, tmp_path: Path, loop_guard: BlockBuster
) -> None:
    writer, reviewer = CrewBackend(), CrewBackend()
    writer_url = await start_agent(writer)
    reviewer_url = await start_agent(reviewer)
    plan = tmp_path / "plan.json"
    doc = {
        "name": "served",
        "agents": {"writer": {"card": writer_url}, "reviewer": {"card": reviewer_url}},
        "steps": [
            {"id": "write", "agent": "writer", "prompt": "ask: which name for {{input}}?"},
            {
                "id": "review",
                "agent": "reviewer",
                "dependsOn": ["write"],
                "schema": VERDICT,
                "prompt": 'json: {"verdict": "approve"}\n{{steps.write}}',
            },
        ],
    }
    plan.write_text(json.dumps(doc))
    config = CrewConfig(plan=plan, ledger=tmp_path / "crew.sqlite3")
    crew_url = await start_agent(CrewAgent(config), name="served crew")
    client, http = await sdk(crew_url)
    try:
        with anyio.fail_after(60):
            request = SendMessageRequest(message=user_msg("slugify"))
            asked = await watch(client.send_message(request), Seen())
            assert asked.state == TaskState.TASK_STATE_INPUT_REQUIRED, asked.notes
            answer = user_msg("slugify", context_id=asked.context_id, task_id=asked.task_id)
            seen = await watch(client.send_message(SendMessageRequest(message=answer)), Seen())
    finally:
        await http.aclose()
    assert "step write (writer) asks: which name for slugify?" in asked.final_text
    assert seen.state == TaskState.TASK_STATE_COMPLETED, (seen.final_text, seen.notes)
    assert "report" in seen.artifacts
    assert [t.text for t in writer.turns] == ["ask: which name for slugify?", "slugify"]
    assert len(reviewer.turns) == 1
    assert any("step review (reviewer): done" in n for n in seen.notes), seen.notes
