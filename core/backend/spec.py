"""What a backend package exports: its name, its config block's model, and its factory.

A backend is one package exporting a `BackendSpec` (conventionally `SPEC`). The registry finds
it by name (built-ins, the `a2a_wrapper.backends` entry-point group) or by `package.module:attr`;
Settings validates the config block named after it with `config_model`; `create` builds the
backend from that validated block. Nothing else in core needs to know the backend exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel

from core.backend import Backend

ConfigT = TypeVar("ConfigT", bound=BaseModel)


@dataclass(frozen=True)
class BackendSpec(Generic[ConfigT]):
    """`name` is the config's `"backend"` value and the key of its block; `config_model`
    validates that block (usually an `AgentBlock` subclass: camelCase keys, unknown keys are
    errors); `create(block)` returns the Backend, which is not started (the engine calls
    `start()`, then `serve()` in its task group, and `aclose()` at the end)."""

    name: str
    config_model: type[ConfigT]
    create: Callable[[ConfigT], Backend]

    def build(self, block: BaseModel) -> Backend:
        """`create` with a block validated by `config_model` (checked, not trusted)."""
        if not isinstance(block, self.config_model):
            raise TypeError(f"backend {self.name!r} needs a {self.config_model.__name__} block")
        return self.create(block)
