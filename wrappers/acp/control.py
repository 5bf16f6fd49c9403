"""What an ACP agent lets a turn choose (a mode, a model, an effort), read from what the
agent reports, and how a session is brought to what a turn wants.

A session's open response (`session/new`, `session/load`, `session/fork`) lists the agent's
choices: `configOptions` (a `select` of category `mode`, `model` or `thought_level`; the
spec's current way), else `modes` (`session/set_mode`) and the unstable `models`
(`session/set_model`, which the `acp` library does not model: read from the raw response).
`Offer` is that list with each choice's current value. A session's `Choices` keeps what the
agent runs now; before each prompt the backend brings every choice to what the turn wants
(the turn's option, else the configured value), so an option applies to its turn only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog
from acp import RequestError

from core.backend import Mode, TurnOptions
from core.backend.control import Capabilities
from wrappers.acp.agent import AgentProcess
from wrappers.acp.config import AcpConfig
from wrappers.acp.presets import Preset

log = structlog.get_logger(__name__)

Key = Literal["mode", "model", "effort"]
KEYS: tuple[Key, ...] = ("mode", "model", "effort")
_CATEGORIES: dict[str, Key] = {"mode": "mode", "model": "model", "thought_level": "effort"}
EDIT_FREE: tuple[Mode, ...] = ("plan", "readOnly")

Request = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Sends one raw ACP request (method, params) to the agent and returns its raw result."""


@dataclass(frozen=True)
class Choice:
    """How the agent takes one key: by `method`, with `config_id` for a config option."""

    method: Literal["session/set_config_option", "session/set_mode", "session/set_model"]
    values: tuple[str, ...]
    config_id: str | None = None

    def params(self, session_id: str, value: str) -> dict[str, Any]:
        if self.method == "session/set_config_option":
            return {"sessionId": session_id, "configId": self.config_id, "value": value}
        if self.method == "session/set_mode":
            return {"sessionId": session_id, "modeId": value}
        return {"sessionId": session_id, "modelId": value}


@dataclass(frozen=True)
class Offer:
    """The choices one session's open response lists, and the value each has now."""

    choices: Mapping[Key, Choice] = field(default_factory=dict)
    current: Mapping[Key, str] = field(default_factory=dict)


NO_OFFER = Offer()


def offer_of(result: Any) -> Offer:
    """The choices in a raw open (or `set_config_option`) result; config options win over
    `modes`/`models` for the same key."""
    if not isinstance(result, Mapping):
        return NO_OFFER
    choices: dict[Key, Choice] = {}
    current: dict[Key, str] = {}
    for option in result.get("configOptions") or []:
        key = _CATEGORIES.get(str(option.get("category")))
        if key is None or key in choices or option.get("type") != "select":
            continue
        choices[key] = Choice(
            "session/set_config_option", _select_values(option.get("options")), option.get("id")
        )
        if isinstance(option.get("currentValue"), str):
            current[key] = option["currentValue"]
    modes, models = result.get("modes"), result.get("models")
    if isinstance(modes, Mapping) and "mode" not in choices:
        ids = tuple(m["id"] for m in modes.get("availableModes") or [] if "id" in m)
        choices["mode"] = Choice("session/set_mode", ids)
        if isinstance(modes.get("currentModeId"), str):
            current["mode"] = modes["currentModeId"]
    if isinstance(models, Mapping) and "model" not in choices:
        ids = tuple(m["modelId"] for m in models.get("availableModels") or [] if "modelId" in m)
        choices["model"] = Choice("session/set_model", ids)
        if isinstance(models.get("currentModelId"), str):
            current["model"] = models["currentModelId"]
    return Offer(choices, current)


def _select_values(options: Any) -> tuple[str, ...]:
    """A select's values, its options flat or in groups (`{"group", "options": [...]}`)."""
    values: list[str] = []
    for item in options or []:
        if "value" in item:
            values.append(str(item["value"]))
        else:
            values.extend(str(o["value"]) for o in item.get("options") or [] if "value" in o)
    return tuple(values)


@dataclass(frozen=True)
class Control:
    """What the agent lets a turn choose (from its first new session's offer and its
    `initialize`), and what a turn's options mean for it.

    `edit_free`: the agent's mode values known to prevent edits (a preset's, each proven by
    a test), which `plan` and `readOnly` map to. `configured`: the configured values (a key
    not named takes the value the agent's first session had)."""

    offer: Offer
    edit_free: tuple[str, ...]
    configured: Mapping[Key, str]
    fork: bool
    resume: bool
    image: bool

    @property
    def mode_value(self) -> str | None:
        """The agent's edit-free mode (None: it has none this backend knows to be one)."""
        mode = self.offer.choices.get("mode")
        return next((v for v in self.edit_free if mode and v in mode.values), None)

    def capabilities(self) -> Capabilities:
        choices = self.offer.choices
        model, effort = choices.get("model"), choices.get("effort")
        return Capabilities(
            steer=False,
            fork=self.fork,
            models=model.values if model else (),
            efforts=effort.values if effort else (),
            modes=("default", *EDIT_FREE) if self.mode_value else ("default",),
            approvals=True,
            resume=self.resume,
            image_input=self.image,
        )

    def base(self, key: Key) -> str | None:
        return self.configured.get(key) or self.offer.current.get(key)

    @staticmethod
    def chosen(options: TurnOptions) -> tuple[Key, ...]:
        """The keys a turn with `options` chose itself."""
        values = {
            "mode": options.mode not in (None, "default"),
            "model": options.model,
            "effort": options.effort,
        }
        return tuple(k for k in KEYS if values[k])

    def wanted(self, options: TurnOptions) -> dict[Key, str]:
        """What each key should be for a turn with `options` (the configured value where
        the turn chose none)."""
        chosen: dict[Key, str | None] = {
            "mode": self.mode_value if options.mode in EDIT_FREE else None,
            "model": options.model,
            "effort": options.effort,
        }
        wanted: dict[Key, str] = {}
        for key in KEYS:
            value = chosen[key] or self.base(key)
            if value is not None and key in self.offer.choices:
                wanted[key] = value
        return wanted


def learn(offer: Offer, agent: AgentProcess, config: AcpConfig, preset: Preset | None) -> Control:
    """What `agent` lets a turn choose, from its `initialize` and its first session's `offer`."""
    configured: dict[Key, str] = {}
    if config.session_mode:
        configured["mode"] = config.session_mode
    if config.model and (preset is None or preset.model_variable is None):
        configured["model"] = config.model  # a preset's model variable set it already
    return Control(
        offer=offer,
        edit_free=preset.edit_free_modes if preset else (),
        configured=configured,
        fork=agent.can_fork,
        resume=agent.can_load,
        image=agent.takes_images,
    )


@dataclass
class Choices:
    """The values one session runs with now (a key missing: not known)."""

    choices: Mapping[Key, Choice]
    current: dict[Key, str]

    @classmethod
    def of(cls, offer: Offer, fallback: Offer) -> Choices:
        """A session's choices from its open response (`fallback`: the first session's,
        for an agent whose load or fork response lists none)."""
        return cls(dict(offer.choices or fallback.choices), dict(offer.current))

    async def bring_to(
        self,
        session_id: str,
        wanted: Mapping[Key, str],
        request: Request,
        chosen: Collection[Key] = (),
    ) -> None:
        """Set each key whose value differs from `wanted` (mode first: an agent may change
        its other options with its mode). A key the turn `chosen` raises what `request`
        raises; setting a configured value back that the agent refuses is logged and the
        turn goes on (the value stays unknown, so the next turn tries again)."""
        for key in KEYS:
            value, choice = wanted.get(key), self.choices.get(key)
            if value is None or choice is None or self.current.get(key) == value:
                continue
            try:
                result = await request(choice.method, choice.params(session_id, value))
            except RequestError as exc:
                if key in chosen:
                    raise
                log.warning("acp.set_back_failed", key=key, value=value, error=str(exc))
                self.current.pop(key, None)
                continue
            self.current[key] = value
            after = offer_of(result).current
            self.current.update({k: v for k, v in after.items() if k != key})
