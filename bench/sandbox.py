"""What `sandbox.mode: bubblewrap` adds to an agent turn: Claude Code through the daemon against
the project's Anthropic mock on 127.0.0.1, with and without the sandbox.

Two daemons in this process (the real app on loopback ports), one with `sandbox.mode: none`,
one with `bubblewrap` (one principal, `workspace.mode: copy`); contexts alternate between
them, so the machine's load hits both alike. A first turn of a context starts its Claude Code
process (in the sandbox: through the launcher script and bubblewrap; the first turn of the
principal also makes its backend instance and agent home); follow-ups reuse the warm process,
whose sandbox is already built. A benchmark, not a test: nothing asserts timings.

    .venv/bin/python -m bench.sandbox --contexts 5 --follow-ups 3
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from bench.agents.common import DaemonApp, row
from core.backend.sandbox import Jail, find_bwrap
from core.settings import Settings, load
from harness.mock_models.anthropic import AnthropicMock

KEY = "sk-ant-bench"


def _settings(url: str, root: Path, mode: str) -> Settings:
    work = root / "work"
    work.mkdir(parents=True)
    (work / "README.md").write_text("bench\n")
    return load(
        None,
        overrides={
            "backend": "claude",
            "storage": {"kind": "sqlite", "path": str(root / "state" / "daemon.sqlite3")},
            "workspace": {"mode": "copy"},
            "sandbox": {"mode": mode},
            "claude": {
                "workingDirectory": str(work),
                "home": str(root / "claude-home"),
                "env": {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY},
            },
        },
        environ={},
    )


def _bare_bwrap(root: Path, runs: int) -> list[float]:
    """bubblewrap alone: `true` in a jail of the daemon's shape, start to exit."""
    bwrap = find_bwrap()
    if bwrap is None:
        raise RuntimeError("bwrap is not installed")
    jail = Jail("bench", bwrap, "host", (root,), (), (root / "own",), root / "home", root / "l")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(jail.wrap(["/bin/true"]), check=True)  # noqa: S603 - an argument list
        times.append(time.perf_counter() - started)
    return times


async def run(contexts: int, follow_ups: int) -> None:
    first: dict[str, list[float]] = {"none": [], "bubblewrap": []}
    warm: dict[str, list[float]] = {"none": [], "bubblewrap": []}
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-", dir="/var/tmp") as tmp:
        async with AnthropicMock(api_key=KEY) as mock:
            apps = {m: DaemonApp(_settings(mock.url, Path(tmp) / m, m)) for m in first}
            for app in apps.values():
                await app.start()
            try:
                for app in apps.values():  # the principal's instance, made once
                    await app.send("hello", f"warmup-{uuid.uuid4().hex[:6]}")
                for _ in range(contexts):
                    for mode, app in apps.items():
                        context = uuid.uuid4().hex[:8]
                        started = time.perf_counter()
                        await app.send("hello", context)
                        first[mode].append(time.perf_counter() - started)
                        for _ in range(follow_ups):
                            started = time.perf_counter()
                            await app.send("again", context)
                            warm[mode].append(time.perf_counter() - started)
            finally:
                for app in apps.values():
                    await app.stop()
    print("## Sandbox cost per Claude Code turn (daemon, mock model)")
    for mode, times in first.items():
        print(row(f"first {mode}", times))
        print(row(f"warm {mode}", warm[mode]))
    with tempfile.TemporaryDirectory(prefix="bench-bwrap-", dir="/var/tmp") as tmp:
        print(row("bwrap true", _bare_bwrap(Path(tmp), 10)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=5)
    parser.add_argument("--follow-ups", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.contexts, args.follow_ups))


if __name__ == "__main__":
    main()
