"""The composition root (core/daemon.py): the daemon's parts start in order (storage ->
budgets -> backend and engine -> cluster -> bindings), each once the one before it is ready,
and stop in reverse; bindings stop accepting before the engine closes."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from structlog.testing import capture_logs

from core.api.host import Host
from core.cluster.router import ClusterRouter
from core.daemon import Daemon
from tests.conftest import make_settings
from tests.support.scripted import ScriptedBackend

STARTS = ["storage", "budgets", "engine", "cluster", "bindings"]


class Recorder:
    """A binding and a backend that note when they start and stop, beside the daemon's own
    `daemon.started` / `daemon.stopped` lines."""

    def __init__(self, logs: list[MutableMapping[str, Any]]) -> None:
        self.logs = logs

    def note(self, what: str) -> None:
        self.logs.append({"event": "probe", "part": what})

    async def binding(self, host: Host, *, task_status: TaskStatus[list[str]]) -> None:
        self.note("binding up")
        task_status.started(["probe://"])
        await host.wait_stopping()
        self.note("binding down")


class RecordingBackend(ScriptedBackend):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder

    async def start(self) -> None:
        self.recorder.note("backend up")
        await super().start()

    async def aclose(self) -> None:
        self.recorder.note("backend down")
        await super().aclose()


def order(logs: list[MutableMapping[str, Any]]) -> list[str]:
    names = {"daemon.started": "+", "daemon.stopped": "-", "probe": ""}
    return [f"{names[e['event']]}{e['part']}" for e in logs if e["event"] in names]


async def test_parts_start_in_order_and_stop_in_reverse(tmp_path: Path) -> None:
    settings = make_settings(storage={"kind": "sqlite", "path": str(tmp_path / "d.sqlite3")})

    with capture_logs() as logs:
        recorder = Recorder(logs)
        daemon = Daemon(settings, backend=RecordingBackend(recorder))
        async with anyio.create_task_group() as tg:
            urls = await tg.start(daemon.serve, [recorder.binding])
            await daemon.stop()

    assert urls == ["probe://"]
    assert order(logs) == [
        "+storage",
        "+budgets",
        "backend up",
        "+engine",
        "+cluster",
        "binding up",
        "+bindings",
        "binding down",
        "-bindings",
        "-cluster",
        "backend down",
        "-engine",
        "-budgets",
        "-storage",
    ]


async def test_a_part_that_fails_to_start_stops_what_started_before_it(tmp_path: Path) -> None:
    settings = make_settings(storage={"kind": "sqlite", "path": str(tmp_path / "d.sqlite3")})

    async def broken(host: Host, *, task_status: TaskStatus[list[str]]) -> None:
        raise OSError("address in use")

    with capture_logs() as logs:
        daemon = Daemon(settings, backend=ScriptedBackend())
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(daemon.serve, [broken])
        except BaseExceptionGroup as group:
            assert group.subgroup(OSError) is not None
        else:
            raise AssertionError("the daemon started without its binding")

    assert order(logs) == [f"+{p}" for p in STARTS[:-1]] + [f"-{p}" for p in reversed(STARTS[:-1])]


def test_the_engine_serves_directly_without_replicas_and_behind_the_router_with_them(
    postgres_url: str,
) -> None:
    alone = Daemon(make_settings(), backend=ScriptedBackend())
    assert alone.front is alone.service

    replica = Daemon(
        make_settings(storage={"kind": "postgres", "url": postgres_url}), backend=ScriptedBackend()
    )
    assert isinstance(replica.front, ClusterRouter)
