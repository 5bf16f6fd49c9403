"""`a2a-wrapper check` for ACP agents: the agent command, where the preset's agent finds its
credentials (with a recorded login's expiry), and the `authenticate` methods the agent offers
in its `initialize` answer (the agent is started for that and stopped at once)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from acp import RequestError

from core.backend import Diagnosis
from wrappers.acp.agent import start_agent
from wrappers.acp.client import DaemonClient
from wrappers.acp.terminals import Terminals

CHECK_TIMEOUT = 60.0


async def auth_methods(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], file_system: bool
) -> Diagnosis:
    """The agent's `authenticate` methods, from its `initialize` (names and ids, no values)."""
    methods: list[Any] = []
    failure: Exception | None = None
    with anyio.move_on_after(CHECK_TIMEOUT) as waited:
        async with anyio.create_task_group() as tg:
            client = DaemonClient(cwd, (), Terminals(tg))
            try:
                agent = await start_agent(
                    argv, cwd=cwd, env=env, client=client, tasks=tg, file_system=file_system
                )
            except (OSError, RequestError, TimeoutError, ConnectionError) as exc:
                failure = exc
            else:
                methods = list(agent.info.auth_methods or [])
                await agent.aclose()
            tg.cancel_scope.cancel()
    if waited.cancelled_caught:
        failure = TimeoutError(f"no answer to initialize in {CHECK_TIMEOUT:g} s")
    if failure is not None:
        detail = f"the agent did not initialize: {failure}"
        return Diagnosis("authentication methods", False, detail)
    if not methods:
        return Diagnosis("authentication methods", True, "none offered (it needs no login)")
    offered = ", ".join(f"{m.name} ({m.id})" for m in methods)
    return Diagnosis("authentication methods", True, f"the agent offers {offered}")
