"""Agent card signatures (A2A §8.4): one JWS per key over the card's canonical form.

The canonical form is what the official SDK's verifier computes, so its verifier accepts our
cards: the card read as a v1.0 `AgentCard` message (the v0.3 compatibility keys merged into
the served card are not part of it, and proto3 default values drop out), `signatures`
removed, empty strings, lists and objects removed, then RFC 8785 (`core.wire.jcs`). The JWS
payload is detached: the card carries `{protected, signature}`, the verifier rebuilds the
payload from the card it received.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from a2a.types.a2a_pb2 import AgentCard
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from google.protobuf import json_format
from jwt.utils import base64url_decode, base64url_encode

from core.wire.jcs import CanonicalizationError, canonicalize

ALGORITHMS = (
    "ES256",
    "ES384",
    "ES512",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "EdDSA",
)

PrivateKey = (
    ec.EllipticCurvePrivateKey
    | rsa.RSAPrivateKey
    | ed25519.Ed25519PrivateKey
    | ed448.Ed448PrivateKey
)
PublicKey = (
    ec.EllipticCurvePublicKey | rsa.RSAPublicKey | ed25519.Ed25519PublicKey | ed448.Ed448PublicKey
)

_KEY_TYPES: dict[str, tuple[type, ...]] = {
    "ES": (ec.EllipticCurvePrivateKey,),
    "RS": (rsa.RSAPrivateKey,),
    "PS": (rsa.RSAPrivateKey,),
    "Ed": (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey),
}


def load_private_key(path: Path, algorithm: str) -> PrivateKey:
    """The PEM private key at `path` (unencrypted), checked to fit `algorithm`; ValueError
    with a message for the operator otherwise."""
    try:
        key = load_pem_private_key(path.expanduser().read_bytes(), password=None)
    except OSError as exc:
        raise ValueError(f"cannot read the signing key {path}: {exc.strerror}") from exc
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not an unencrypted PEM private key") from exc
    if not isinstance(key, _KEY_TYPES[algorithm[:2]]):
        # ValueError, not TypeError: pydantic reports it as the config key's error.
        raise ValueError(  # noqa: TRY004
            f"{path} holds a {type(key).__name__}, which cannot sign {algorithm}"
        )
    return key  # type: ignore[return-value]  # narrowed by the table above


@dataclass(frozen=True)
class SigningKey:
    key_id: str
    algorithm: str
    private_key: PrivateKey
    jwks_url: str | None = None


def _clean_empty(value: Any) -> Any:
    if isinstance(value, dict):
        cleaned = {k: c for k, v in value.items() if (c := _clean_empty(v)) is not None}
        return cleaned or None
    if isinstance(value, list):
        items = [c for v in value if (c := _clean_empty(v)) is not None]
        return items or None
    if isinstance(value, str) and not value:
        return None
    return value


def canonical_payload(card: Mapping[str, Any]) -> bytes:
    """The bytes every signature of `card` covers (see the module docstring)."""
    message = AgentCard()
    json_format.ParseDict(
        {k: v for k, v in card.items() if k != "signatures"}, message, ignore_unknown_fields=True
    )
    normal = json_format.MessageToDict(message)
    normal.pop("signatures", None)
    return canonicalize(_clean_empty(normal) or {}).encode()


def signature(card: Mapping[str, Any], key: SigningKey) -> dict[str, str]:
    """One `AgentCardSignature` (`protected`, `signature`) of `card` by `key`."""
    header: dict[str, Any] = {"kid": key.key_id, "typ": "JOSE"}
    if key.jwks_url:
        header["jku"] = key.jwks_url
    token = jwt.api_jws.encode(
        canonical_payload(card), key.private_key, algorithm=key.algorithm, headers=header
    )
    protected, _, signed = token.split(".")
    return {"protected": protected, "signature": signed}


def signed(card: dict[str, Any], keys: list[SigningKey]) -> dict[str, Any]:
    """`card` with one signature per key (none: the card as it is)."""
    if not keys:
        return card
    return {**card, "signatures": [signature(card, key) for key in keys]}


@dataclass(frozen=True)
class Verdict:
    key_id: str | None
    valid: bool
    reason: str


def verify(card: Mapping[str, Any], public_keys: Mapping[str, PublicKey]) -> list[Verdict]:
    """Each signature of `card` checked against the public key its `kid` names; a kid not
    in `public_keys` (an unknown, expired or revoked key) is not valid."""
    try:
        payload = base64url_encode(canonical_payload(card)).decode()
    except CanonicalizationError as exc:
        return [Verdict(None, False, f"the card has no canonical form: {exc}")]
    verdicts = []
    for entry in card.get("signatures") or []:
        protected, sig = entry.get("protected", ""), entry.get("signature", "")
        try:
            header = json.loads(base64url_decode(protected.encode()))
        except (ValueError, UnicodeDecodeError):
            verdicts.append(Verdict(None, False, "the protected header is not base64url JSON"))
            continue
        kid, alg = header.get("kid"), header.get("alg")
        key = public_keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            verdicts.append(Verdict(kid, False, "no trusted key has this kid"))
        elif alg not in ALGORITHMS:
            verdicts.append(Verdict(kid, False, f"algorithm {alg!r} is not accepted"))
        else:
            try:
                jwt.api_jws.decode_complete(f"{protected}.{payload}.{sig}", key, algorithms=[alg])
                verdicts.append(Verdict(kid, True, f"valid ({alg})"))
            except jwt.PyJWTError as exc:
                verdicts.append(Verdict(kid, False, f"invalid: {exc}"))
    return verdicts
