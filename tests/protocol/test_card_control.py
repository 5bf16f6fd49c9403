"""The card's conversation-control extension: declared once in `capabilities.extensions`
(v1.0 and v0.3 cards), not required, its params valid against the schema shipped in the
package, narrowed by `turnOptions`, and following what the started backend declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from core import registry
from core.api import conversation_control
from core.backend.control import Capabilities, capabilities_of
from tests.conftest import MakeClient, make_settings
from tests.protocol.test_card_signing import _pem, _public_pem, _sdk_verify
from tests.support.declaring import DeclaringBackend
from tests.support.scripted import ScriptedBackend

CARD = "/.well-known/agent-card.json"
V1 = {"A2A-Version": "1.0"}


def _control(card: dict[str, Any]) -> dict[str, Any]:
    [entry] = [
        e for e in card["capabilities"]["extensions"] if e["uri"] == conversation_control.URI
    ]
    return entry  # type: ignore[no-any-return]


def _valid(params: Any) -> None:
    jsonschema.Draft202012Validator(conversation_control.schema()).validate(params)


def test_the_schema_is_valid_and_names_every_field_of_the_record() -> None:
    schema = conversation_control.schema()

    jsonschema.Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]) == set(Capabilities().record())
    assert set(schema["required"]) == set(Capabilities().record())


@pytest.mark.parametrize("headers", [V1, {}], ids=["v1.0", "v0.3"])
@pytest.mark.parametrize("backend", ["echo", "nothing-declared", "declaring"])
async def test_the_served_card_declares_the_extension_with_valid_params(
    make_client: MakeClient, headers: dict[str, str], backend: str
) -> None:
    settings = make_settings()
    agent: Any = {
        "echo": lambda: registry.create_backend(
            "echo", make_settings(backend="echo").backend_config()
        ),
        "nothing-declared": ScriptedBackend,
        "declaring": DeclaringBackend,
    }[backend]()
    client = await make_client(settings, backend_=agent)

    card = await (await client.get(CARD, headers=headers)).json()

    entry = _control(card)
    assert entry["required"] is False
    assert entry["description"]
    _valid(entry["params"])
    assert entry["params"] == capabilities_of(agent).record()
    if backend == "nothing-declared":
        assert entry["params"] == Capabilities().record()
    assert ("protocolVersion" in card) is (headers != V1)


async def test_the_card_shows_what_the_started_backend_declares(make_client: MakeClient) -> None:
    backend = DeclaringBackend()
    client = await make_client(make_settings(), backend_=backend)

    params = _control(await (await client.get(CARD)).json())["params"]

    assert backend.started  # the app started it: the models its agent reported are listed
    assert params == {
        "steer": True,
        "fork": True,
        "models": ["m-large", "m-small"],
        "efforts": ["low", "high"],
        "modes": ["default", "plan", "readOnly"],
        "approvals": True,
        "resume": True,
        "imageInput": True,
    }


async def test_the_card_changes_with_the_declaration_and_a_signed_card_follows(
    make_client: MakeClient, tmp_path: Path
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    signing = {"privateKeyFile": _pem(tmp_path, "k1", key), "keyId": "k1"}
    backend = DeclaringBackend()
    client = await make_client(make_settings(agentCard={"signing": signing}), backend_=backend)
    first = await client.get(CARD)
    card = await first.json()
    _sdk_verify(card, {"k1": _public_pem(key)}, ["ES256"])

    backend.started = False  # as before its agent reported its models: any model name
    second = await client.get(CARD)
    changed = await second.json()

    assert _control(changed)["params"]["models"] is None
    _valid(_control(changed)["params"])
    assert second.headers["ETag"] != first.headers["ETag"]
    _sdk_verify(changed, {"k1": _public_pem(key)}, ["ES256"])


async def test_turn_options_allow_lists_narrow_the_published_record(
    make_client: MakeClient,
) -> None:
    settings = make_settings(
        turnOptions={"allow": {"models": ["m-small", "other"], "efforts": [], "modes": ["plan"]}}
    )
    client = await make_client(settings, backend_=DeclaringBackend())

    params = _control(await (await client.get(CARD, headers=V1)).json())["params"]

    assert (params["models"], params["efforts"], params["modes"]) == (
        ["m-small"],
        [],
        ["default", "plan"],
    )
    _valid(params)


async def test_a_configured_extension_of_the_same_uri_is_not_published_twice(
    make_client: MakeClient,
) -> None:
    other = {"uri": "urn:example:other", "description": "another", "required": False}
    mine = {"uri": conversation_control.URI, "params": {"steer": "maybe"}}
    client = await make_client(make_settings(agentCard={"extensions": [other, mine]}))

    card = await (await client.get(CARD)).json()

    uris = [e["uri"] for e in card["capabilities"]["extensions"]]
    assert uris == ["urn:example:other", conversation_control.URI]
    _valid(_control(card)["params"])
