"""core.registry: backend names and `package.module:attr` references to Backend factories."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from core.backend import Backend
from core.registry import UnknownBackendError, create_backend, resolve
from tests.support.scripted import ScriptedBackend

SCRIPTED = "tests.support.scripted:ScriptedBackend"


def not_a_backend(options: Mapping[str, Any]) -> object:
    """A factory that returns something without the Backend methods."""
    return {"options": dict(options)}


NOT_CALLABLE = "a string is not a factory"


def test_module_attr_resolves_to_the_factory() -> None:
    assert resolve(SCRIPTED) is ScriptedBackend


def test_create_backend_calls_the_factory_with_the_options() -> None:
    options = {"model": "test-model", "nested": {"limit": 3}}

    backend = create_backend(SCRIPTED, options)

    assert isinstance(backend, Backend)
    assert isinstance(backend, ScriptedBackend)
    assert backend.options == options


def test_an_unknown_plain_name_explains_what_is_accepted() -> None:
    with pytest.raises(UnknownBackendError) as caught:
        resolve("no-such-agent")

    message = str(caught.value)
    assert "'no-such-agent'" in message
    assert "package.module:attr" in message


def test_create_backend_with_an_unknown_name_raises() -> None:
    with pytest.raises(UnknownBackendError, match="no-such-agent"):
        create_backend("no-such-agent", {})


@pytest.mark.parametrize(
    "name",
    ["tests.support.no_such_module:Factory", "tests.support.scripted:NoSuchFactory"],
    ids=["missing-module", "missing-attribute"],
)
def test_an_unloadable_reference_raises_unknown_backend(name: str) -> None:
    with pytest.raises(UnknownBackendError) as caught:
        resolve(name)

    assert name in str(caught.value)
    assert isinstance(caught.value.__cause__, ImportError | AttributeError)


def test_a_reference_to_a_non_callable_raises_unknown_backend() -> None:
    with pytest.raises(UnknownBackendError, match="not callable"):
        resolve("tests.unit.test_registry:NOT_CALLABLE")


def test_a_factory_returning_a_non_backend_raises_unknown_backend() -> None:
    name = "tests.unit.test_registry:not_a_backend"

    with pytest.raises(UnknownBackendError) as caught:
        create_backend(name, {"x": 1})

    assert name in str(caught.value)
    assert "core.backend.Backend" in str(caught.value)
