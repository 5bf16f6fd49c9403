"""`a2a-wrapper check` for Antigravity: the runtime (found, starts, which release) and the
credentials of the endpoint (present or not; never their values)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from urllib.parse import urlsplit

import anyio

from core.backend import Diagnosis
from core.backend.binaries import CliNotFoundError
from core.backend.process import untrack
from wrappers.antigravity.config import AntigravityConfig
from wrappers.antigravity.harness import (
    PINNED_SDK_VERSION,
    bundled_harness,
    find_harness,
    sdk_version,
    start_harness,
)
from wrappers.antigravity.session import kill

RUNTIME = "antigravity runtime"


async def diagnose(config: AntigravityConfig, environ: Mapping[str, str]) -> list[Diagnosis]:
    """The working directory, a key every backend shares, is checked by `check` itself."""
    return [await _runtime(config, environ), _credentials(config, environ)]


async def _runtime(config: AntigravityConfig, environ: Mapping[str, str]) -> Diagnosis:
    try:
        binary = find_harness(config.cli_path, config.env.get("PATH") or environ.get("PATH"))
    except CliNotFoundError as exc:
        return Diagnosis(RUNTIME, ok=False, detail=str(exc))
    from google.antigravity.proto import localharness_pb2  # noqa: PLC0415 - only when checked

    try:
        # The harness has no --version: it proves itself by its handshake (it listens).
        harness, port, _ = await start_harness(
            str(binary), {**environ, **config.env}, localharness_pb2.InputConfig()
        )
    except (OSError, RuntimeError, TimeoutError) as exc:
        return Diagnosis(RUNTIME, ok=False, detail=f"{binary} does not start: {exc}")
    if harness.stdin is not None:
        with contextlib.suppress(OSError):
            harness.stdin.close()  # how the SDK tells it to exit
    with anyio.move_on_after(5):
        await anyio.to_thread.run_sync(harness.wait, abandon_on_cancel=True)
    kill(harness, [])
    await untrack(harness.pid)
    version = sdk_version()
    bundled = bundled_harness()
    origin = (
        f"bundled with google-antigravity {version}"
        if bundled is not None and binary.resolve() == bundled.resolve()
        else f"from {'cliPath' if config.cli_path else 'PATH'}; google-antigravity {version}"
    )
    note = "" if version == PINNED_SDK_VERSION else f" (the project pins {PINNED_SDK_VERSION})"
    return Diagnosis(RUNTIME, ok=True, detail=f"{binary} ({origin}{note}); starts (port {port})")


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def _credentials(config: AntigravityConfig, environ: Mapping[str, str]) -> Diagnosis:
    endpoint = config.endpoint
    env = {**environ, **config.env}
    via = f" via {_where(endpoint.base_url)}" if endpoint.base_url else ""
    if endpoint.kind == "openai":
        return Diagnosis(
            "credentials",
            ok=True,
            detail=f"OpenAI-compatible endpoint{via}, model {config.model}; no key is sent",
        )
    if endpoint.kind == "vertex":
        return _vertex(config, env, via)
    if endpoint.api_key:
        return Diagnosis("credentials", ok=True, detail=f"Gemini API key in endpoint.apiKey{via}")
    if env.get("GEMINI_API_KEY"):
        return Diagnosis("credentials", ok=True, detail=f"Gemini API key in GEMINI_API_KEY{via}")
    if endpoint.base_url:
        return Diagnosis("credentials", ok=True, detail=f"no Gemini API key{via} (a proxy)")
    return Diagnosis(
        "credentials",
        ok=False,
        detail="none: set GEMINI_API_KEY or antigravity.endpoint.apiKey, or point "
        "antigravity.endpoint at another model endpoint",
    )


def _vertex(config: AntigravityConfig, env: Mapping[str, str], via: str) -> Diagnosis:
    endpoint = config.endpoint
    if endpoint.api_key:
        return Diagnosis("credentials", ok=True, detail=f"Vertex AI express key set{via}")
    project = endpoint.project or env.get("GOOGLE_CLOUD_PROJECT")
    location = endpoint.location or env.get("GOOGLE_CLOUD_LOCATION")
    if (project and location) or endpoint.base_url:
        return Diagnosis(
            "credentials",
            ok=True,
            detail=f"Vertex AI project {project or '?'} in {location or '?'}{via}, with "
            "Application Default Credentials",
        )
    return Diagnosis(
        "credentials",
        ok=False,
        detail="Vertex AI needs endpoint.project and endpoint.location (or "
        "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), or endpoint.apiKey",
    )


def credentials_fix(config: AntigravityConfig) -> str:
    """What to do on the daemon's host when the model endpoint refuses the credentials."""
    kind = config.endpoint.kind
    if kind == "openai":
        what = "fix the key of the proxy in front of the OpenAI-compatible endpoint"
    elif kind == "vertex":
        what = (
            "run `gcloud auth application-default login` for the daemon's user (or set"
            " antigravity.endpoint.apiKey for express mode)"
        )
    else:
        what = "set GEMINI_API_KEY (or antigravity.endpoint.apiKey) to a valid key"
    return f"On the daemon's host, {what}; then send the message again."
