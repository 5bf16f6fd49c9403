"""Conversation control for Copilot: what the backend declares (core/backend/control.py), a
turn's own model, effort and mode on its warm session, and what a turn that may not edit
lets through.

The SDK does all of it natively: `send(mode="immediate")` delivers a message into the running
turn, `sessions.fork` forks a stored session, `set_model(model, reasoning_effort=)` switches
the session's model for its next request, `mode.set(plan)` is the CLI's plan mode. A turn's
options last that turn only: the next turn sets the session back to its configured values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import structlog
from copilot import CopilotClient, CopilotSession, PermissionRequest
from copilot.generated.rpc import ModeSetRequest, SessionsForkRequest
from copilot.generated.session_events import SessionMode
from copilot.session_events import (
    PermissionRequestRead,
    PermissionRequestWrite,
)

from core.backend import MODES, Mode, TurnOptions
from core.backend.control import Capabilities
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.permissions import describe

log = structlog.get_logger(__name__)

# The SDK's reasoning efforts (`set_model(reasoning_effort=)`); the CLI passes the value on to
# the model endpoint (`reasoning_effort` of a chat completions request) without checking it.
EFFORTS = ("low", "medium", "high", "xhigh", "max")
NO_EDIT: frozenset[Mode] = frozenset({"plan", "readOnly"})


def capabilities(config: CopilotConfig, models: tuple[str, ...] | None) -> Capabilities:
    """`models`: what the CLI listed after start (None: any name, the endpoint checks it).

    `plan` and `readOnly` rest on the permission callback, which the CLI skips when told to
    allow everything itself (`env.COPILOT_ALLOW_ALL`): then only `default` is offered."""
    modes = ("default",) if "COPILOT_ALLOW_ALL" in config.env else MODES
    return Capabilities(
        steer=True,
        fork=True,
        models=models,
        efforts=EFFORTS,
        modes=modes,
        approvals=True,
        resume=True,
        image_input=True,
    )


async def listed_models(client: CopilotClient, config: CopilotConfig) -> tuple[str, ...] | None:
    """The models the CLI offers (GitHub's Copilot API), or None when it lists none: a BYOK
    endpoint takes any name, and the CLI lists nothing without a GitHub login."""
    if config.provider is not None:
        return None
    try:
        listed = await client.list_models()
    except Exception:  # no list (not logged in): any name, the CLI checks it
        log.info("copilot.models_unlisted", exc_info=True)
        return None
    names = tuple(m.id for m in listed if m.id)
    return names or None


async def fork(client: CopilotClient, source: str) -> str:
    """The CLI's own fork of the stored session `source` (`sessions.fork`: its persisted
    history, the source untouched); the new session's id, to be resumed."""
    forked = await client.rpc.sessions.fork(SessionsForkRequest(session_id=source))
    return forked.session_id


@dataclass(frozen=True)
class Applied:
    """The model, effort and mode a warm session runs with now (None: the configured ones);
    `known` is false for a session resumed from disk, which may keep what a turn chose."""

    model: str | None = None
    effort: str | None = None
    plan: bool = False
    known: bool = True


UNKNOWN = Applied(known=False)


@dataclass(frozen=True)
class Base:
    """The model a session runs with when a turn chooses none: the configured one, else the
    CLI's default (read when the session is first switched)."""

    model: str


async def base_of(session: CopilotSession, config: CopilotConfig) -> Base:
    if config.model:
        return Base(config.model)
    current = await session.rpc.model.get_current()
    return Base(current.model_id or "")


async def applied_of(session: CopilotSession, base: Base) -> Applied:
    """What a resumed session runs with, as `apply` keeps track of it."""
    current = await session.rpc.model.get_current()
    mode = await session.rpc.mode.get()
    model = current.model_id if current.model_id and current.model_id != base.model else None
    return Applied(model, current.reasoning_effort or None, mode == SessionMode.PLAN)


async def apply(session: CopilotSession, base: Base, now: Applied, options: TurnOptions) -> Applied:
    """Switch the session to what `options` chose (the configured values where it chose
    nothing), changing only what differs from `now`; returns what it runs with then."""
    wanted = Applied(options.model, options.effort, options.mode == "plan")
    if not now.known or (wanted.model, wanted.effort) != (now.model, now.effort):
        # "" clears the effort: without it the session would keep the last one chosen.
        await session.set_model(wanted.model or base.model, reasoning_effort=wanted.effort or "")
    if not now.known or wanted.plan != now.plan:
        mode = SessionMode.PLAN if wanted.plan else SessionMode.INTERACTIVE
        await session.rpc.mode.set(ModeSetRequest(mode=mode))
    return wanted


def edit_refusal(request: PermissionRequest, mode: Mode, state: Path | None) -> str | None:
    """Why a turn in `mode` (plan, readOnly) refuses `request`, None when it may run: reads,
    and (in plan mode) writes into the session's own state directory `state` (where the CLI
    keeps its plan.md). Everything else (writes, shell commands, URLs, MCP tools, memory) is
    refused before the permission policy is asked, so no rule or approval lets it through.

    Every shell command: the pinned CLI marks none it asks about as read-only (`cat
    README.md` comes with `read_only: false`), and a command line is no proof of what it
    does. The agent reads with its view, grep and glob tools."""
    match request:
        case PermissionRequestRead():
            return None
        case PermissionRequestWrite(file_name=path) if state is not None and _inside(path, state):
            return None
    return (
        f"The a2a-wrapper refused this: {describe(request)} is not allowed in {mode} mode, "
        "where this turn may read but not change anything."
    )


def _inside(path: str, root: Path) -> bool:
    resolved = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    return resolved == top or top in resolved.parents
