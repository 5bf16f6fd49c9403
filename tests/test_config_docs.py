"""docs/configuration.md documents every key of the Settings model (a new field without a
line in the docs fails here)."""

from __future__ import annotations

import re
from pathlib import Path
from types import UnionType
from typing import Union, get_args, get_origin

from pydantic import BaseModel

from core import registry
from core.backend.config import AgentBlock
from core.settings import Settings


def _nested_model(annotation: object) -> type[BaseModel] | None:
    """The Block type of a field (also inside `X | None`); None for lists, dicts and scalars,
    which are documented as one key with their item shape."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, UnionType):
        for arg in get_args(annotation):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return arg
    return None


def key_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted camelCase paths of every key; a nested block contributes its own keys."""
    paths = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key == "$schema":
            continue
        path = f"{prefix}{key}"
        nested = _nested_model(field.annotation)
        if nested is not None:
            paths.extend(key_paths(nested, path + "."))
        else:
            paths.append(path)
    return paths


_SHARED = {field.alias or name for name, field in AgentBlock.model_fields.items()}


def documented(doc: str, path: str) -> bool:
    head, _, key = path.partition(".")
    if f"`{path}`" in doc:
        return True
    # Keys every backend block shares are documented once as `<backend>.key`.
    return head in registry.names() and key in _SHARED and (f"`<backend>.{key}`" in doc)


def config_paths() -> list[str]:
    """Every key of the config file: Settings', and each backend block's (its own model)."""
    blocks = [key_paths(s.config_model, f"{s.name}.") for s in registry.blocks()]
    return key_paths(Settings) + [path for block in blocks for path in block]


def test_every_settings_key_is_documented(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "configuration.md").read_text()

    missing = [p for p in config_paths() if not documented(doc, p)]

    assert not missing, "undocumented in docs/configuration.md: " + ", ".join(missing)


def test_the_walk_finds_nested_and_backend_keys() -> None:
    paths = config_paths()

    assert "server.auth.tokens" in paths
    assert "session.ttl" in paths
    assert "claude.workingDirectory" in paths
    assert not any(re.search(r"[A-Z_]{2}", p.split(".")[-1]) for p in paths)
