"""`python -m examples.crew serve`: the crew as one A2A agent, a real process driven by the
official a2a-sdk client, over the demo's scripted agents (real `a2a-wrapper serve` processes).

The tester asks a question (answered through the crew's own task) and then holds its remote
task until a gate file exists, so the crew process can be SIGKILLed mid-job; a new message in
the same context resumes the job from the ledger without a second remote task.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
from a2a.client import A2ACardResolver, BaseClient, Client, ClientConfig
from a2a.client.errors import A2AClientError
from a2a.client.transports import JsonRpcTransport
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from google.protobuf.json_format import MessageToDict

from examples.crew.demo.phases import DemoAgent
from examples.crew.ledger.ledger import Ledger
from tests.crew.daemons import daemons
from tests.interop.conftest import user_msg

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = REPO / "examples" / "crew" / "demo" / "scripted"
PLAN = REPO / "examples" / "crew" / "crew.json"
QUESTION = "Which test framework: pytest or unittest?"


class CrewProcess:
    """`python -m examples.crew serve`, in its own process group; stopped by its PID."""

    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.work = work
        self.env = env
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> str:
        log = (self.work / "crew.log").open("a")
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            [
                sys.executable,
                "-m",
                "examples.crew",
                "serve",
                str(PLAN),
                "--port",
                "0",
                "--ledger",
                str(self.work / "crew.sqlite3"),
                "--state",
                str(self.work / "crew-state"),
            ],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        log.close()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("crew listening on "), (self.work / "crew.log").read_text()
        return line.split()[-1]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.wait()

    def wait(self) -> None:
        if self.proc is not None:
            self.proc.wait(30)
            if self.proc.stdout is not None:
                self.proc.stdout.close()


async def sdk(url: str) -> tuple[Client, httpx.AsyncClient]:
    http = httpx.AsyncClient(timeout=60, headers={"A2A-Version": "1.0"})
    card = await A2ACardResolver(http, url).get_agent_card()
    iface = next(
        i
        for i in card.supported_interfaces
        if i.protocol_binding == "JSONRPC" and i.protocol_version.startswith("1.0")
    )
    config = ClientConfig(
        streaming=True, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
    )
    return BaseClient(card, config, JsonRpcTransport(http, card, iface.url), []), http


@dataclass
class Seen:
    """What a stream of the crew task showed."""

    task_id: str = ""
    context_id: str = ""
    notes: list[str] = field(default_factory=list)
    artifacts: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    state: int = TaskState.TASK_STATE_UNSPECIFIED
    final_text: str = ""


async def watch(events: AsyncIterator[StreamResponse], seen: Seen) -> Seen:
    async for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            seen.task_id, seen.context_id = event.task.id, event.task.context_id
            seen.state = event.task.status.state
        elif kind == "status_update":
            status = event.status_update.status
            seen.task_id = seen.task_id or event.status_update.task_id
            seen.context_id = seen.context_id or event.status_update.context_id
            seen.state = status.state
            text = " ".join(p.text for p in status.message.parts)
            if status.state == TaskState.TASK_STATE_WORKING:
                seen.notes.append(text)
            else:
                seen.final_text = text
        elif kind == "artifact_update":
            artifact = event.artifact_update.artifact
            parts = [MessageToDict(p) for p in artifact.parts]
            seen.artifacts.setdefault(artifact.name, []).extend(parts)
    return seen


async def remote_tasks(url: str) -> list[str]:
    """Every task the agent at `url` has (ListTasks, the official client)."""
    client, http = await sdk(url)
    try:
        page = await client.list_tasks(ListTasksRequest(page_size=100))
        return [t.id for t in page.tasks]
    finally:
        await http.aclose()


async def test_the_crew_serves_a_job_asks_through_its_task_and_resumes_after_sigkill(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    tester = tmp_path / "tester.json"
    tester.write_text(
        json.dumps(
            {
                "backend": "tests.crew.serving:AskingRoleBackend",
                "options": {
                    "name": "asking-tester",
                    "role": "tester",
                    "ask": QUESTION,
                    "gate": str(gate),
                },
                "agentCard": {"name": "tester that asks"},
                "server": {"host": "127.0.0.1"},
                "storage": {"path": str(tmp_path / "state" / "tester.sqlite3")},
            }
        )
    )
    agents = [
        DemoAgent("writer", SCRIPTED / "writer.json", "CREW_WRITER_URL"),
        DemoAgent("reviewer", SCRIPTED / "reviewer.json", "CREW_REVIEWER_URL"),
        DemoAgent("tester", tester, "CREW_TESTER_URL"),
        DemoAgent("documenter", SCRIPTED / "documenter.json", "CREW_DOCUMENTER_URL"),
    ]
    for name in ("state", "logs"):
        (tmp_path / name).mkdir()
    env = {**os.environ, "CREW_DEMO_STATE": str(tmp_path / "state"), "PYTHONUNBUFFERED": "1"}
    with anyio.fail_after(180):
        async with daemons(agents, env, tmp_path / "logs"):
            crew = CrewProcess(tmp_path, env)
            try:
                await run_the_job(crew, env, gate, tmp_path)
            finally:
                await anyio.to_thread.run_sync(crew.stop)


async def run_the_job(crew: CrewProcess, env: dict[str, str], gate: Path, work: Path) -> None:
    url = await anyio.to_thread.run_sync(crew.start)
    client, http = await sdk(url)
    assert client is not None
    card = await A2ACardResolver(http, url).get_agent_card()
    assert card.name == "write-review-revise"

    # 1. Stream a job: step progress names the steps; the tester's question becomes the crew
    # task's input-required, with the step named.
    first = await watch(
        client.send_message(SendMessageRequest(message=user_msg("Write slugify(title)"))),
        Seen(),
    )
    assert first.state == TaskState.TASK_STATE_INPUT_REQUIRED, first
    assert first.final_text == f"step test (tester) asks: {QUESTION}"
    assert any(n.startswith("step write (writer): completed") for n in first.notes), first.notes
    assert any(n.startswith("step review (reviewer)") for n in first.notes), first.notes
    [question] = first.artifacts["question"]
    asked = question["data"]
    assert isinstance(asked, dict)
    assert asked["step"] == "test" and asked["question"] == QUESTION
    remote_id = str(asked["taskId"])
    assert "report" in first.artifacts

    # 2. The answer goes through the crew's own task to the tester's task; once the tester
    # has it (its task works, held by the gate), the crew process is SIGKILLed.
    answered = Seen(task_id=first.task_id, context_id=first.context_id)
    tester, tester_http = await sdk(env["CREW_TESTER_URL"])

    async def answer() -> None:
        reply = user_msg("pytest", first.task_id, first.context_id)
        with contextlib.suppress(A2AClientError):  # the stream ends with the crew's SIGKILL
            await watch(client.send_message(SendMessageRequest(message=reply)), answered)

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer)
        while True:
            remote = await tester.get_task(GetTaskRequest(id=remote_id))
            if remote.status.state == TaskState.TASK_STATE_WORKING and len(remote.history) > 1:
                break
            await anyio.sleep(0.05)
        assert any("your answer goes to tester" in n for n in answered.notes), answered.notes
        await anyio.to_thread.run_sync(crew.kill)
    await http.aclose()

    # 3. A new crew process on the same ledger and store; a message in the same context
    # resumes the job: the tester's task is followed, not sent again.
    url = await anyio.to_thread.run_sync(crew.start)
    client, http = await sdk(url)
    await anyio.Path(gate).touch()
    resumed = await watch(
        client.send_message(
            SendMessageRequest(message=user_msg("go on", context_id=first.context_id))
        ),
        Seen(),
    )
    await http.aclose()
    assert resumed.state == TaskState.TASK_STATE_COMPLETED, resumed
    assert resumed.final_text.endswith(": done"), resumed.final_text
    assert any(n.endswith(": resumed") for n in resumed.notes), resumed.notes
    [report] = resumed.artifacts["report"]
    assert ": done" in str(report["text"]).splitlines()[0], report
    done = await tester.get_task(GetTaskRequest(id=remote_id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert "told 'pytest'" in MessageToDict(done)["artifacts"][0]["parts"][0]["text"]
    await tester_http.aclose()

    # No duplicate remote task: each agent has exactly the tasks the ledger recorded, one
    # per run, and the tester one task in all.
    job_id = str(report["text"]).splitlines()[0].split("`")[1]
    async with Ledger.opened(work / "crew.sqlite3") as ledger:
        runs = await ledger.runs(job_id)
    for name in ("writer", "reviewer", "tester", "documenter"):
        recorded = sorted(r.task_id or "" for r in runs if r.agent == name)
        assert sorted(await remote_tasks(env[f"CREW_{name.upper()}_URL"])) == recorded, name
    assert [r.task_id for r in runs if r.step_id == "test"] == [remote_id]
