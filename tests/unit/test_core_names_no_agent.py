"""Core names no agent: a backend is one package under wrappers/ (or anywhere, registered by
entry point), and only core/registry.py lists the built-in ones. A new agent then never needs a
core file changed."""

from __future__ import annotations

import re
from pathlib import Path

from core import registry

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {"core/registry.py"}


def agent_names() -> re.Pattern[str]:
    # Whole words: "echoed" does not name the echo agent.
    return re.compile(r"\b(?:" + "|".join(sorted(registry.BUILTIN)) + r")\b", re.IGNORECASE)


def mentions(root: Path) -> list[str]:
    pattern = agent_names()
    found = []
    for path in sorted((root / "core").rglob("*")):
        file = path.relative_to(root).as_posix()
        if not path.is_file() or path.suffix not in (".py", ".json", ".md") or file in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{file}:{number}: {line.strip()}")
    return found


def test_no_file_in_core_but_the_registry_names_a_built_in_agent() -> None:
    found = mentions(ROOT)

    assert not found, "core names an agent:\n  " + "\n  ".join(found)


def test_the_scan_finds_a_mention(tmp_path: Path) -> None:
    (tmp_path / "core" / "tasks").mkdir(parents=True)
    (tmp_path / "core" / "tasks" / "x.py").write_text("# as Codex does\n")
    (tmp_path / "core" / "registry.py").write_text('BUILTIN = {"codex": "wrappers.codex:SPEC"}\n')

    assert mentions(tmp_path) == ["core/tasks/x.py:1: # as Codex does"]


def test_the_registry_lists_the_built_ins() -> None:
    assert set(registry.BUILTIN) == {
        "echo",
        "claude",
        "codex",
        "opencode",
        "copilot",
        "antigravity",
        "acp",
        "gemini",
        "opencode-acp",
        "copilot-acp",
    }
