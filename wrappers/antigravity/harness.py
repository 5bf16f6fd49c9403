"""The Antigravity runtime: `localharness`, the Go binary the google-antigravity wheel bundles,
and how the SDK is told to start it.

The SDK starts the harness itself (`subprocess.Popen([binary])`, in the daemon's process group,
with a blocking stdio handshake on the event loop). Our configs replace only that step: the
same handshake, but the binary runs behind the kit's parent-death launcher, in a session of its
own, with the instance marker, recorded in the ledger, and the handshake's blocking reads run in
a thread. Everything else (the WebSocket protocol, steps, hooks) is the SDK's own.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import struct
import subprocess
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from google.antigravity import LocalAgentConfig, LocalOpenAIAgentConfig
from google.antigravity.proto import localharness_pb2

from core.backend import binaries, process
from core.backend.binaries import CliSource

SDK_PACKAGE = "google-antigravity"
PINNED_SDK_VERSION = "0.1.22"
HARNESS_NAME = "localharness"
HANDSHAKE_TIMEOUT = 30.0


def sdk_version() -> str:
    try:
        return importlib.metadata.version(SDK_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def bundled_harness() -> Path | None:
    """The binary the pinned wheel ships (google/antigravity/bin/localharness)."""
    import google.antigravity  # noqa: PLC0415 - the package's location, once asked

    return Path(google.antigravity.__file__).parent / "bin" / HARNESS_NAME


def find_harness(cli_path: Path | None, search_path: str | None) -> Path:
    """`cliPath`, else the bundled binary, else `localharness` on PATH. Raises
    CliNotFoundError naming what was tried."""
    return binaries.find_cli(
        cli_path,
        [bundled_harness()],
        HARNESS_NAME,
        CliSource(
            "the Antigravity runtime (localharness)",
            "antigravity.cliPath",
            f"{SDK_PACKAGE}=={PINNED_SDK_VERSION} (`make` installs it; the wheel bundles it)",
        ),
        search_path=search_path,
    )


def _client_info() -> Any:
    return localharness_pb2.ClientInfo(
        language="python",
        version=sdk_version(),
        language_version=platform.python_version(),
        os=platform.system().lower(),
        os_version=platform.release(),
    )


def _handshake(harness: subprocess.Popen[bytes], config: bytes) -> tuple[int, str]:
    """The harness's stdio handshake (blocking: run it in a thread): our InputConfig in, its
    OutputConfig (WebSocket port and key) out, each a little-endian u32 length, then bytes."""
    if harness.stdin is None or harness.stdout is None:  # pragma: no cover - PIPEs were asked
        raise RuntimeError("the Antigravity runtime has no stdio pipes")
    harness.stdin.write(struct.pack("<I", len(config)) + config)
    harness.stdin.flush()
    head = harness.stdout.read(4)
    if len(head) < 4:
        raise RuntimeError("the Antigravity runtime exited before its handshake")
    answer = localharness_pb2.OutputConfig()
    answer.ParseFromString(harness.stdout.read(struct.unpack("<I", head)[0]))
    return int(answer.port), str(answer.api_key)


async def start_harness(
    binary: str, env: Mapping[str, str], input_config: Any
) -> tuple[subprocess.Popen[bytes], int, str]:
    """Start the harness under the orphan guard and do its handshake: (process, port, key)."""
    full_env = process.with_marker(env) or dict(env)
    # A Popen, not an anyio process: the SDK's connection waits, polls and reads it itself.
    harness = subprocess.Popen(  # noqa: S603, ASYNC220 - an argument list; returns at once
        process.guarded_command([binary], env=full_env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=full_env,
        # A session of its own: stopping it never signals the daemon's group.
        start_new_session=True,
    )
    await process.track(harness.pid)
    try:
        with anyio.fail_after(HANDSHAKE_TIMEOUT):
            port, key = await anyio.to_thread.run_sync(
                _handshake, harness, input_config.SerializeToString(), abandon_on_cancel=True
            )
    except BaseException:
        harness.kill()
        harness.wait()
        await process.untrack(harness.pid)
        raise
    return harness, port, key


async def _guarded_spawn(
    strategy: Any, *, use_interactions_api: bool = False
) -> tuple[subprocess.Popen[bytes], Any, str]:
    """`LocalConnectionStrategy._spawn_harness_and_connect_ws` of google-antigravity 0.1.22
    (pinned, so the replacement is checked by the tests on every upgrade), with the harness
    started by `start_harness`."""
    env_map = {str(k): str(v) for k, v in (strategy._env or {}).items()}
    input_config = localharness_pb2.InputConfig(
        storage_directory=strategy._save_dir or "", client_info=_client_info(), env=env_map
    )
    if use_interactions_api:
        input_config.use_interactions_api = True
    harness, port, key = await start_harness(
        strategy._binary_path, {**os.environ, **env_map}, input_config
    )
    ws, url = await strategy._connect_websocket(port, key, harness)
    return harness, ws, url


def _guarded(strategy: Any) -> Any:
    # The SDK builds its strategy with a dozen arguments; only how it starts the harness is
    # replaced, on this instance (an instance attribute comes before the class's method).
    strategy._spawn_harness_and_connect_ws = types.MethodType(_guarded_spawn, strategy)
    return strategy


class GoogleAgentConfig(LocalAgentConfig):  # type: ignore[misc]  # SDK untyped
    """`LocalAgentConfig` (Gemini API, Vertex AI) whose harness starts under the guard."""

    def create_strategy(self, *, tool_runner: Any, hook_runner: Any) -> Any:
        return _guarded(super().create_strategy(tool_runner=tool_runner, hook_runner=hook_runner))


class OpenAIAgentConfig(LocalOpenAIAgentConfig):  # type: ignore[misc]  # SDK untyped
    """`LocalOpenAIAgentConfig` whose harness starts under the guard."""

    def create_strategy(self, *, tool_runner: Any, hook_runner: Any) -> Any:
        return _guarded(super().create_strategy(tool_runner=tool_runner, hook_runner=hook_runner))
