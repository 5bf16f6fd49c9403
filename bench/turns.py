"""Agent turns: each real backend through the daemon vs the same turn driven directly.

For every backend whose wrapper (`wrappers.<name>`) is merged and has a `Target` here, this
series measures, against the project's mock model server (harness/mock_models/):

- through the daemon: the first turn of a new context, a follow-up on the same context with
  the daemon (and the agent process it keeps) still running (warm), and a follow-up after the
  daemon was restarted, so the agent resumes its session from disk (cold);
- directly: the same first and follow-up turn driven with the agent's own SDK or CLI;
- the ratio daemon / direct for each.

A backend plugs in through a `Target` in `TARGETS` (how to start its mock model, the daemon
config that points at it, and how to run one turn directly); backends not merged yet are
reported as skipped with the reason. Nothing here asserts a duration.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import proc
from bench.protocol import post

BACKENDS = ("claude", "codex", "opencode", "copilot", "antigravity")


@dataclass(frozen=True)
class Target:
    """How to drive one backend. `mock` starts its mock model server and returns its URL and a
    stop function; `config` is the daemon config for that URL and a working directory;
    `direct` runs one turn without the daemon (session id or None for a new session) and
    returns the session id it used."""

    mock: Callable[[Path], tuple[str, Callable[[], None]]]
    config: Callable[[str, Path], dict[str, Any]]
    direct: Callable[[str, Path, str | None], str]


# Filled in as the backends land: name -> Target.
TARGETS: dict[str, Target] = {}


def available(name: str) -> str | None:
    """None when the backend can be measured, else why not."""
    if importlib.util.find_spec(f"wrappers.{name}") is None:
        return f"wrappers.{name} is not present (not merged yet)"
    if name not in TARGETS:
        return "the wrapper is merged; no bench.turns target for it yet"
    return None


def send(url: str, text: str, context_id: str | None) -> tuple[float, dict[str, Any]]:
    """One blocking SendMessage; (seconds, result)."""
    started = time.perf_counter()
    reply = json.loads(post(url, "SendMessage", text, context_id=context_id))
    return time.perf_counter() - started, reply["result"]


def measure(name: str, target: Target, workdir: Path, rounds: int) -> dict[str, Any]:
    mock_url, stop_mock = target.mock(workdir)
    timings: dict[str, list[float]] = {
        k: [] for k in ("first", "warm", "cold", "direct_first", "direct_follow")
    }
    try:
        config = target.config(mock_url, workdir)
        for _ in range(rounds):
            context = str(uuid.uuid4())
            daemon = proc.daemon(f"turns-{name}", workdir, config)
            with proc.running(daemon):
                seconds, _ = send(daemon.url, "Say hello.", context)
                timings["first"].append(seconds)
                seconds, _ = send(daemon.url, "Say it again.", context)
                timings["warm"].append(seconds)
            with proc.running(daemon):  # a new daemon process: the agent resumes from disk
                seconds, _ = send(daemon.url, "Once more.", context)
                timings["cold"].append(seconds)
            started = time.perf_counter()
            session = target.direct(mock_url, workdir, None)
            timings["direct_first"].append(time.perf_counter() - started)
            started = time.perf_counter()
            target.direct(mock_url, workdir, session)
            timings["direct_follow"].append(time.perf_counter() - started)
    finally:
        stop_mock()
    out: dict[str, Any] = {k: statistics.median(v) * 1000 for k, v in timings.items()}
    out["first_ratio"] = out["first"] / out["direct_first"]
    out["warm_ratio"] = out["warm"] / out["direct_follow"]
    out["cold_ratio"] = out["cold"] / out["direct_follow"]
    return out


def load_targets() -> None:
    """Register the `target()` of every `bench/agents/<name>.py` that has one."""
    for name in BACKENDS:
        if name in TARGETS or importlib.util.find_spec(f"bench.agents.{name}") is None:
            continue
        factory = getattr(importlib.import_module(f"bench.agents.{name}"), "target", None)
        if factory is not None:
            TARGETS[name] = factory()


def run(workdir: Path, *, rounds: int) -> dict[str, Any]:
    load_targets()
    results: dict[str, Any] = {}
    for name in BACKENDS:
        reason = available(name)
        if reason is not None:
            results[name] = {"skipped": reason}
            continue
        results[name] = measure(name, TARGETS[name], workdir / name, rounds)
    return results
