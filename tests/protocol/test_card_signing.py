"""The signed agent card (A2A §8.4): the official SDK's verifier accepts it, a tampered card
fails, rotation signs with every configured key, and `a2a-wrapper card --verify` agrees."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from a2a.types import AgentCard
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from google.protobuf.json_format import ParseDict

from core.cli import main
from core.settings import ConfigError
from tests.conftest import MakeClient, make_settings

V1 = {"A2A-Version": "1.0"}


def _pem(tmp_path: Path, name: str, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> str:
    path = tmp_path / f"{name}.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(path)


def _public_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@pytest.fixture
def ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _sdk_verify(card: dict[str, Any], keys: dict[str, bytes], algorithms: list[str]) -> None:
    """What an SDK client does with a card it fetched: parse it, check the signatures."""
    verifier = create_signature_verifier(lambda kid, _jku: keys[kid or ""], algorithms)
    verifier(ParseDict(card, AgentCard(), ignore_unknown_fields=True))


def _header(signature: dict[str, str]) -> dict[str, Any]:
    padded = signature["protected"] + "=" * (-len(signature["protected"]) % 4)
    header: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return header


@pytest.mark.parametrize("headers", [V1, {}], ids=["strict", "merged"])
async def test_the_sdk_verifier_accepts_the_card_and_rejects_a_tampered_one(
    make_client: MakeClient,
    tmp_path: Path,
    ec_key: ec.EllipticCurvePrivateKey,
    headers: dict[str, str],
) -> None:
    signing = {"privateKeyFile": _pem(tmp_path, "k1", ec_key), "keyId": "k1"}
    client = await make_client(make_settings(agentCard={"signing": signing}))

    response = await client.get("/.well-known/agent-card.json", headers=headers)
    card = await response.json()

    [signature] = card["signatures"]
    assert _header(signature) == {"alg": "ES256", "kid": "k1", "typ": "JOSE"}
    _sdk_verify(card, {"k1": _public_pem(ec_key)}, ["ES256"])
    again = await (await client.get("/.well-known/agent-card.json", headers=headers)).json()
    assert again == card  # signed once per rendering: the ETag stays put

    tampered = {**card, "description": "something else"}
    with pytest.raises(InvalidSignaturesError):
        _sdk_verify(tampered, {"k1": _public_pem(ec_key)}, ["ES256"])


async def test_rotation_signs_with_every_key(
    make_client: MakeClient, tmp_path: Path, ec_key: ec.EllipticCurvePrivateKey
) -> None:
    new_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    signing = {
        "privateKeyFile": _pem(tmp_path, "old", ec_key),
        "keyId": "old",
        "additionalKeys": [
            {"privateKeyFile": _pem(tmp_path, "new", new_key), "keyId": "new", "algorithm": "RS256"}
        ],
    }
    client = await make_client(make_settings(agentCard={"signing": signing}))

    card = await (await client.get("/.well-known/agent-card.json", headers=V1)).json()

    assert [_header(s)["kid"] for s in card["signatures"]] == ["old", "new"]
    # A client that already trusts only the new key accepts the card, and so does one that
    # still trusts only the old key.
    _sdk_verify(card, {"new": _public_pem(new_key), "old": b"-"}, ["RS256"])
    _sdk_verify(card, {"old": _public_pem(ec_key), "new": b"-"}, ["ES256"])


def test_card_verify_command(
    tmp_path: Path, ec_key: ec.EllipticCurvePrivateKey, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "backend": "tests.support.scripted:ScriptedBackend",
        "agentCard": {"signing": {"privateKeyFile": _pem(tmp_path, "k1", ec_key), "keyId": "k1"}},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))

    assert main(["card", str(path), "--verify"]) == 0
    assert capsys.readouterr().out.startswith("ok   k1: valid (ES256)")

    assert main(["card", str(path), "--strict"]) == 0
    card = json.loads(capsys.readouterr().out)
    saved = tmp_path / "card.json"
    saved.write_text(json.dumps({**card, "name": "impostor"}))
    assert main(["card", str(path), "--verify", "--card", str(saved)]) == 1
    assert capsys.readouterr().out.startswith("FAIL k1: invalid")


def test_a_key_that_cannot_sign_is_a_config_error(tmp_path: Path) -> None:
    not_a_key = tmp_path / "k.pem"
    not_a_key.write_text("hello")
    with pytest.raises(ConfigError, match=r"agentCard.signing.*not an unencrypted PEM"):
        make_settings(agentCard={"signing": {"privateKeyFile": str(not_a_key), "keyId": "k"}})
    rsa_key = _pem(tmp_path, "rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048))
    with pytest.raises(ConfigError, match=r"cannot sign ES256"):
        make_settings(agentCard={"signing": {"privateKeyFile": rsa_key, "keyId": "k"}})
