"""Conversation control for Codex: what the backend declares, the settings every turn states,
and steering a running turn.

- What it declares (`capabilities`): steer (`turn/steer`), fork (`thread/fork`), approvals,
  resume, image input, the modes default, plan and readOnly, and the models and efforts of
  the app-server's `model/list` (`Catalogue`). That list is Codex's own catalogue of OpenAI
  models: with a custom `model_provider` it says nothing about what the provider serves, so
  any model name is declared (the operator's `turnOptions.allow.models` narrows it).
- What each turn states (`turn_settings`): Codex keeps a turn's model, effort, sandbox policy,
  approval policy and collaboration mode for the thread's next turns (even across a resume),
  so every `turn/start` names all of them: the message's choice, else the configured value.
  `readOnly` is the read-only sandbox policy with approval policy `never` (nothing can ask
  to escalate); `plan` is Codex's own plan collaboration mode on top of that same read-only
  sandbox, so a plan turn cannot edit even if the model tries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import anyio
import structlog

from core.backend import Content, Turn, TurnOptions
from core.backend.control import Capabilities
from wrappers.codex.approvals import ASK_POLICY
from wrappers.codex.appserver import AppServer, AppServerError, AppServerExitedError
from wrappers.codex.config import CodexConfig, ReasoningEffort
from wrappers.codex.inputs import input_items
from wrappers.codex.options import uses_custom_provider, working_directory
from wrappers.codex.threads import WarmThread

log = structlog.get_logger(__name__)

REQUEST_TIMEOUT = 60.0
READ_ONLY: dict[str, Any] = {"type": "readOnly", "networkAccess": False}
CATALOGUE_PAGES = 20


@dataclass(frozen=True)
class Catalogue:
    """What `model/list` says of each model Codex knows (hidden ones included)."""

    listed: tuple[str, ...] = ()
    """The models Codex offers in its picker (not hidden)."""
    default_model: str | None = None
    efforts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default_effort: Mapping[str, str] = field(default_factory=dict)
    images: Mapping[str, bool] = field(default_factory=dict)


async def read_catalogue(server: AppServer) -> Catalogue | None:
    """The app-server's model list (None if it cannot give one: the backend then declares
    what it knows without it)."""
    models: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        with anyio.fail_after(REQUEST_TIMEOUT):
            for _ in range(CATALOGUE_PAGES):
                page = await server.request(
                    "model/list", {"includeHidden": True, **({"cursor": cursor} if cursor else {})}
                )
                models += [m for m in page.get("data") or [] if isinstance(m, dict)]
                cursor = page.get("nextCursor")
                if not isinstance(cursor, str) or not cursor:
                    break
    except (AppServerError, AppServerExitedError, TimeoutError) as exc:
        log.warning("codex.models.unlisted", error=str(exc))
        return None
    named = [m for m in models if isinstance(m.get("model"), str)]
    return Catalogue(
        listed=tuple(m["model"] for m in named if not m.get("hidden")),
        default_model=next((m["model"] for m in named if m.get("isDefault")), None),
        efforts={
            m["model"]: tuple(
                str(e["reasoningEffort"])
                for e in m.get("supportedReasoningEfforts") or []
                if isinstance(e, dict) and "reasoningEffort" in e
            )
            for m in named
        },
        default_effort={
            m["model"]: str(m["defaultReasoningEffort"])
            for m in named
            if isinstance(m.get("defaultReasoningEffort"), str)
        },
        images={m["model"]: "image" in (m.get("inputModalities") or []) for m in named},
    )


def configured_model(config: CodexConfig, catalogue: Catalogue | None) -> str | None:
    """The model a turn runs without a choice: `model`, else `config.model`, else Codex's
    default (the catalogue's)."""
    if config.model is not None:
        return config.model
    raw = config.config.get("model")
    if isinstance(raw, str):
        return raw
    return catalogue.default_model if catalogue is not None else None


def _configured_effort(config: CodexConfig) -> str | None:
    if config.reasoning_effort is not None:
        return config.reasoning_effort
    raw = config.config.get("model_reasoning_effort")
    return raw if isinstance(raw, str) else None


def _effort_for(model: str | None, config: CodexConfig, catalogue: Catalogue | None) -> str | None:
    """The effort a turn on `model` runs with when the message chose none."""
    configured = _configured_effort(config)
    if configured is not None:
        return configured
    if catalogue is None or model is None:
        return None
    return catalogue.default_effort.get(model)


def capabilities(config: CodexConfig, catalogue: Catalogue | None) -> Capabilities:
    """What a message may choose for its turn (see the module's docstring)."""
    model = configured_model(config, catalogue)
    efforts: tuple[str, ...] = ()
    # An effort can be chosen only where the next turn can be set back to the configured one.
    if _effort_for(model, config, catalogue) is not None:
        known = catalogue.efforts.get(model) if catalogue is not None and model else None
        efforts = known or get_args(ReasoningEffort)
    models: tuple[str, ...] | None
    if uses_custom_provider(config):
        models = None
    elif catalogue is None:
        models = ()
    else:
        models = tuple(dict.fromkeys([*catalogue.listed, *([model] if model else [])]))
    images = True
    if catalogue is not None and model is not None and model in catalogue.images:
        images = catalogue.images[model]
    return Capabilities(
        steer=True,
        fork=True,
        models=models,
        efforts=efforts,
        modes=("default", "plan", "readOnly"),
        approvals=True,
        resume=True,
        image_input=images,
    )


def turn_settings(
    config: CodexConfig, catalogue: Catalogue | None, thread: WarmThread, turn: Turn
) -> dict[str, Any]:
    """The parameters of `turn/start` for `turn` on `thread`, besides its input."""
    options: TurnOptions = turn.options
    ask = turn.approvals == "ask"
    model = options.model or configured_model(config, catalogue) or thread.model
    effort = options.effort or _effort_for(model, config, catalogue)
    confined = options.mode in ("plan", "readOnly")
    params: dict[str, Any] = {
        "threadId": thread.id,
        "input": input_items(turn.parts),
        # A read-only turn never asks: an approved escalation would let it write.
        "approvalPolicy": ASK_POLICY if ask and not confined else config.approval_policy,
        # Every turn names its directory: a warm thread keeps the one it was last given.
        "cwd": str(turn.cwd or working_directory(config)),
    }
    if ask and not confined:
        # The caller reviews, never Codex's automatic reviewer (`approvals_reviewer`).
        params["approvalsReviewer"] = "user"
    if confined:
        params["sandboxPolicy"] = READ_ONLY
    elif thread.sandbox is not None:
        params["sandboxPolicy"] = dict(thread.sandbox)
    if model is not None:
        params["model"] = model
        params["collaborationMode"] = {
            "mode": "plan" if options.mode == "plan" else "default",
            # developer_instructions None: Codex's own instructions of that mode.
            "settings": {
                "model": model,
                "reasoning_effort": effort,
                "developer_instructions": None,
            },
        }
    if effort is not None:
        params["effort"] = effort
    return params


async def steer_turn(
    server: AppServer, thread_id: str, turn_id: str, parts: tuple[Content, ...]
) -> None:
    """Add `parts` to the running turn `turn_id` of the thread (Codex refuses when that turn is
    not the one running)."""
    with anyio.fail_after(REQUEST_TIMEOUT):
        await server.request(
            "turn/steer",
            {"threadId": thread_id, "expectedTurnId": turn_id, "input": input_items(parts)},
        )
