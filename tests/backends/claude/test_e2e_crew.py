"""The crew example with the real Claude Code CLI as its reviewer (the other agents scripted),
on the project's Anthropic mock: switching an agent from scripted to real is configuration."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "crew" / "demo"


@pytest.mark.timeout(240)
async def test_the_crew_demo_reviews_with_a_real_claude(tmp_path: Path) -> None:
    doc = json.loads((DEMO / "scripted.json").read_text())
    doc["plan"] = str(DEMO.parent / "crew.json")
    for agent in doc["agents"].values():
        agent["config"] = str(DEMO / agent["config"])
    doc["agents"]["reviewer"]["config"] = str(DEMO / "claude.json")
    real = json.loads((DEMO / "demo.json").read_text())
    doc["models"] = {"anthropic": real["models"]["anthropic"]}
    manifest = tmp_path / "mixed.json"
    manifest.write_text(json.dumps(doc))

    with anyio.fail_after(200):
        done = await anyio.run_process(
            [sys.executable, "-m", "examples.crew.demo", "--manifest", str(manifest)],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            check=False,
        )

    report, log = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, log
    # Two review rounds: the mock's scripted "changes", then "approve", reached the crew.
    assert re.search(r"^\| review \| reviewer \| claude \| done \| 2 \|", report, re.M), report
    assert "demo: ok, every step was done by its intended backend" in log
