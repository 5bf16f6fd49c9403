"""`python -m examples.crew up PLAN` / `down PLAN`: the daemons a plan's agents name are started
on the plan's ports with their stores under one state directory, a job runs against them,
and `down` stops them by PID; nothing is left running."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.crew.test_alternates import closed_port

REPO = Path(__file__).resolve().parents[2]
SCRIPTED = REPO / "examples" / "crew" / "demo" / "scripted"


def running(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def crew(*argv: str, env: dict[str, str]) -> tuple[int, str]:
    done = await anyio.run_process(
        [sys.executable, "-m", "examples.crew", *argv], cwd=REPO, env=env, check=False
    )
    return done.returncode, (done.stdout + done.stderr).decode(errors="replace")


@pytest.mark.timeout(240)  # five crew commands and two daemons, as processes
async def test_up_starts_the_plans_daemons_where_it_says_and_down_stops_them(
    tmp_path: Path,
) -> None:
    writer, reviewer = closed_port(), closed_port()
    (tmp_path / "configs").mkdir()
    for role in ("writer", "reviewer"):  # a daemon config beside the plan, relative to it
        (tmp_path / "configs" / f"{role}.json").write_text((SCRIPTED / f"{role}.json").read_text())
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "name": "fleet",
                "agents": {
                    "writer": {"card": writer, "daemon": "configs/writer.json"},
                    "reviewer": {"card": reviewer, "daemon": "configs/reviewer.json"},
                },
                "steps": [
                    {"id": "write", "agent": "writer", "prompt": "{{input}}"},
                    {
                        "id": "review",
                        "agent": "reviewer",
                        "dependsOn": ["write"],
                        "prompt": "Review: {{steps.write}}",
                    },
                ],
            }
        )
    )
    state = tmp_path / "state"
    env = {**os.environ, "CREW_DEMO_STATE": str(tmp_path / "unused")}
    pids: list[int] = []
    try:
        code, out = await crew("up", str(plan), "--state", str(state), env=env)
        assert code == 0, out
        assert f"writer: {writer} ready (pid " in out
        assert f"reviewer: {reviewer} ready (pid " in out
        record = json.loads((state / "daemons.json").read_text())
        pids = [record[name]["pid"] for name in ("writer", "reviewer")]
        assert all(running(pid) for pid in pids)
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"{writer}/.well-known/agent-card.json")).json()
        assert card["name"] == "writer (scripted stand-in for codex)"
        # Each daemon's task store is under the one state directory, not where its config says.
        assert (state / "writer" / "tasks.sqlite3").is_file()
        assert not (tmp_path / "unused").exists()

        again, out = await crew("up", str(plan), "--state", str(state), env=env)
        assert again == 0, out
        assert [record[n]["pid"] for n in ("writer", "reviewer")] == pids  # already up

        ledger = str(state / "crew.sqlite3")
        code, out = await crew(
            "run", str(plan), "--input", "slugify", "--ledger", ledger, "--job", "J", env=env
        )
        assert code == 0, out
        assert "# Crew job `J`: done" in out
    finally:
        code, out = await crew("down", str(plan), "--state", str(state), env=env)
    assert code == 0, out
    assert f"writer: pid {pids[0]} stopped" in out
    assert not any(running(pid) for pid in pids)
    assert not (state / "daemons.json").exists()
    code, out = await crew("down", str(plan), "--state", str(state), env=env)
    assert "no daemons recorded" in out


@pytest.mark.timeout(240)  # five crew commands and two daemons, as processes
async def test_up_says_which_daemon_did_not_start_and_leaves_none_running(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.json"
    good = closed_port()
    (tmp_path / "bad.json").write_text(json.dumps({"backend": "nope"}))
    plan.write_text(
        json.dumps(
            {
                "agents": {
                    "good": {"card": good, "daemon": str(SCRIPTED / "writer.json")},
                    "bad": {"card": closed_port(), "daemon": "bad.json"},
                },
                "steps": [{"id": "one", "agent": "good", "prompt": "x"}],
            }
        )
    )
    env = {**os.environ, "CREW_DEMO_STATE": str(tmp_path)}
    code, out = await crew("up", str(plan), "--state", str(tmp_path / "state"), env=env)
    assert code == 2, out
    assert "exited with" in out and "bad" in out
    assert not (tmp_path / "state" / "daemons.json").exists()
    async with httpx.AsyncClient() as http:  # the good one was stopped again
        with pytest.raises(httpx.ConnectError):
            await http.get(f"{good}/ready")
