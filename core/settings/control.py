"""The `turnOptions` block: which per-message options (model, effort, mode) callers may
choose, narrowing what the backend declares, and the values a message that chooses none
gets (core/backend/control.py)."""

from __future__ import annotations

from pydantic import Field

from core.backend.config import Block
from core.backend.control import Capabilities, Mode, TurnOptions, narrowed


class AllowedOptions(Block):
    models: list[str] | None = Field(
        default=None,
        description="Model names a message may choose (absent: what the backend declares)",
    )
    efforts: list[str] | None = Field(
        default=None, description="Efforts a message may choose (absent: the backend's)"
    )
    modes: list[Mode] | None = Field(
        default=None, description="Modes a message may choose (absent: the backend's)"
    )


class DefaultOptions(Block):
    model: str | None = Field(default=None, description="Model of a turn that chooses none")
    effort: str | None = Field(default=None, description="Effort of a turn that chooses none")
    mode: Mode | None = Field(default=None, description="Mode of a turn that chooses none")

    def options(self) -> TurnOptions:
        return TurnOptions(self.model, self.effort, self.mode)


class TurnOptionSettings(Block):
    allow: AllowedOptions = Field(
        default_factory=AllowedOptions, description="What callers may choose per message"
    )
    defaults: DefaultOptions = Field(
        default_factory=DefaultOptions,
        description="What a message runs with for each option it does not choose",
    )

    def allowed(self, declared: Capabilities) -> Capabilities:
        """What callers may choose of what the backend `declared`."""
        allow = self.allow
        return narrowed(
            declared,
            models=None if allow.models is None else tuple(allow.models),
            efforts=None if allow.efforts is None else tuple(allow.efforts),
            modes=None if allow.modes is None else tuple(allow.modes),
        )
