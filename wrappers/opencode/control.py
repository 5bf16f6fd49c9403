"""Conversation control the OpenCode way (docs/backends.md#opencode): what the backend declares
(`capabilities`) from the server's own listings, the agents that make `plan` and `readOnly`
turns unable to edit, and the prompt fields a turn's options become.

Modes are OpenCode agents, chosen per prompt: `plan` is OpenCode's built-in plan agent and
`readOnly` an agent of ours (`READ_ONLY_AGENT`); both get, in the inline config the daemon gives
the server it starts, permission rules that deny every tool that can change the workspace.
An agent's own rules come after the global `permission` map in OpenCode's evaluation, so an
operator's `"bash": "allow"` does not reopen them. A session's rules would come after the
agent's, which is why sessions on a server the daemon starts carry none (the global map says
the same) and why an attached server (`serverUrl`), whose agents are not ours, offers no mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.backend import Mode, TurnOptions
from core.backend.control import Capabilities

READ_ONLY_AGENT = "a2a-read-only"
PLAN_AGENT = "plan"
# What can change the workspace: `edit` covers OpenCode's write, edit, multiedit and patch
# tools; `bash` any command (a read-only command cannot be told from a writing one by its
# text); `task` a subagent, which has tools of its own.
_WRITERS = ("edit", "bash", "task")


def mode_permission(mcp_servers: Iterable[str]) -> dict[str, str]:
    """The rules a no-edit agent gets: every writer denied, and every MCP server's tools (an
    MCP tool may write; OpenCode names them `<server>_<tool>`)."""
    rules = dict.fromkeys(_WRITERS, "deny")
    rules.update({f"{name}_*": "deny" for name in mcp_servers})
    return rules


def mode_agents(inline: Mapping[str, Any], mcp_servers: Iterable[str]) -> dict[str, Any]:
    """The inline config's `agent` section with the mode agents added: `inline`'s own agents,
    then our deny rules over the `plan` agent's permission and the read-only agent."""
    agents = dict(inline) if isinstance(inline, Mapping) else {}
    deny = mode_permission(mcp_servers)
    for name, extra in (
        (PLAN_AGENT, {}),
        (
            READ_ONLY_AGENT,
            {
                "mode": "primary",
                "description": "Reads and answers; cannot edit files, run commands or "
                "start subagents (a2a-wrapper's readOnly mode)",
            },
        ),
    ):
        own = agents.get(name)
        agent = dict(own) if isinstance(own, Mapping) else {}
        permission = agent.get("permission")
        agent.update(extra)
        agent["permission"] = {**(permission if isinstance(permission, Mapping) else {}), **deny}
        agents[name] = agent
    return agents


@dataclass(frozen=True)
class PromptChoice:
    """The prompt fields of one turn: `agent` (None: OpenCode's default agent), `model`
    (provider, model; None: OpenCode's choice) and `variant` (the effort)."""

    agent: str | None
    model: tuple[str, str] | None
    variant: str | None


def prompt_choice(
    options: TurnOptions, *, agent: str | None, model: tuple[str, str] | None
) -> PromptChoice:
    """What `options` make of the configured `agent` and `model` for one prompt. The model is
    always sent when one is known: OpenCode otherwise reuses the session's last one, which
    would carry a per-message model into the next turn."""
    return PromptChoice(
        agent=_agent_for(options.mode, agent),
        model=split_model(options.model) if options.model else model,
        variant=options.effort,
    )


def _agent_for(mode: Mode | None, configured: str | None) -> str | None:
    if mode == "plan":
        return PLAN_AGENT
    if mode == "readOnly":
        return READ_ONLY_AGENT
    return configured


def split_model(name: str) -> tuple[str, str]:
    """`provider/model` as OpenCode's prompt takes it (the model id may contain slashes)."""
    provider, model = name.split("/", 1)
    return provider, model


def declared(
    providers: Mapping[str, Any],
    agents: Iterable[Mapping[str, Any]],
    *,
    model: str | None,
    ours: bool,
) -> Capabilities:
    """What the backend declares once the server answered: the models of its configured
    providers (`GET /config/providers`) as `provider/model`, the effort variants and image
    input of the model turns use by default (`model`, else those of any model), and the
    modes whose agents exist and are ours to lock (`ours`: the daemon started the server)."""
    models: list[str] = []
    variants: dict[str, list[str]] = {}
    images: dict[str, bool] = {}
    for provider in providers.get("providers") or []:
        if not isinstance(provider, Mapping):
            continue
        for key, listed in (provider.get("models") or {}).items():
            name = f"{provider.get('id')}/{key}"
            models.append(name)
            info = _mapping(listed)
            found = info.get("variants")
            variants[name] = list(found) if isinstance(found, Mapping) else []
            takes = _mapping(_mapping(info.get("capabilities")).get("input")).get("image")
            images[name] = takes is True
    if model is not None:
        efforts = variants.get(model, [])
        image_input = images.get(model, False)
    else:
        efforts = list(dict.fromkeys(v for found in variants.values() for v in found))
        image_input = any(images.values())
    names = {str(a.get("name")) for a in agents if isinstance(a, Mapping)}
    modes: list[Mode] = ["default"]
    agent_of: tuple[tuple[Mode, str], ...] = (("plan", PLAN_AGENT), ("readOnly", READ_ONLY_AGENT))
    if ours:
        modes += [mode for mode, agent in agent_of if agent in names]
    return Capabilities(
        steer=True,
        fork=True,
        models=tuple(models),
        efforts=tuple(efforts),
        modes=tuple(modes),
        approvals=True,
        resume=True,
        image_input=image_input,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


BEFORE_START = Capabilities(steer=True, fork=True, models=(), approvals=True, resume=True)
"""What the backend declares before the server answered (models, efforts, modes and image
input come from the server)."""
