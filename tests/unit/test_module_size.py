"""Modules stay small (style.md §4): no module in core over 500 lines."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 500


def test_no_module_in_core_is_over_500_lines() -> None:
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "core").rglob("*.py")
    }
    assert "core/tasks/task_run.py" in sizes

    too_long = {file: n for file, n in sizes.items() if n > MAX_LINES}

    assert not too_long, f"split these by responsibility (style.md §4): {too_long}"
