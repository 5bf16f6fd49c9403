"""A running turn of the Codex backend, and how it is stopped: interrupt, then the commands
it left running (Codex keeps them as the thread's background terminals)."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
import structlog

from wrappers.codex.appserver import AppServer, AppServerError, AppServerExitedError
from wrappers.codex.process import stop_thread_commands

log = structlog.get_logger(__name__)

INTERRUPT_GRACE = 5.0
COMMAND_GRACE = 2.0


@dataclass
class ActiveTurn:
    thread_id: str
    server: AppServer
    turn_id: str | None = None
    finished: bool = False
    # Set once the turn id is known, or the turn was refused (what a steer waits for).
    known: anyio.Event = field(default_factory=anyio.Event)
    # Approval requests of Codex waiting for the caller's answer (JSON-RPC ids).
    asking: set[int | str] = field(default_factory=set)
    stopped: anyio.Event | None = None  # set once a stop of this turn is over

    def begin(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.known.set()

    def end(self) -> None:
        self.finished = True
        self.known.set()


async def stop_turn(active: ActiveTurn) -> None:
    """Interrupt the turn, then stop the commands it left running (Codex keeps them as
    the thread's background terminals). If Codex does not manage both within
    INTERRUPT_GRACE, the app-server is stopped; the next turn starts a new one."""
    server = active.server
    if active.turn_id is None or not server.running:
        return
    with anyio.move_on_after(INTERRUPT_GRACE):
        try:
            # Questions nobody will answer any more: Codex waits for them otherwise.
            while active.asking:
                await server.respond(active.asking.pop(), {"decision": "decline"})
            try:
                await server.request(
                    "turn/interrupt", {"threadId": active.thread_id, "turnId": active.turn_id}
                )
            except AppServerError as exc:
                # The turn ended on its own meanwhile; its commands may still run.
                log.info("codex.turn.interrupt_refused", turn_id=active.turn_id, error=str(exc))
            await server.turn_completed(active.turn_id)
            await stop_commands(server, active.thread_id)
        except AppServerExitedError:
            return
        except AppServerError as exc:
            log.warning("codex.turn.commands_not_stopped", turn_id=active.turn_id, error=str(exc))
        else:
            return
    log.warning("codex.turn.interrupt_failed", turn_id=active.turn_id, pid=server.pid)
    await server.aclose()


async def stop_commands(server: AppServer, thread_id: str) -> None:
    """Stop every command the thread still runs and wait until they are gone: Codex
    reports a command ended when its sandbox wrapper is reaped, and a command whose start
    raced the interrupt is killed by Codex a little later, unannounced; so the processes
    themselves are waited for (and killed if Codex did not)."""
    await server.request("thread/backgroundTerminals/clean", {"threadId": thread_id})
    await server.commands_finished(thread_id)
    await stop_thread_commands(thread_id, grace=COMMAND_GRACE)
