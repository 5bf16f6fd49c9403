"""Imports point one way (DESIGN.md §1, style.md §1).

`wrappers/* -> core.backend`; `core.server` (the only aiohttp importer in core)
`-> core.tasks -> core.sessions, core.wire`; nothing in core imports `wrappers` except the
registry. Every import statement counts, including ones inside functions.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("core", "wrappers")


@dataclass(frozen=True)
class Import:
    file: str
    line: int
    module: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.module}"


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def imports_in(source: str, file: str) -> list[Import]:
    """Every import in `source` (the file at repo-relative `file`), fully qualified.

    `from a.b import c` is recorded as `a.b.c`, so `from core import server` counts as an
    import of `core.server`; relative imports are resolved against the file's package.
    """
    parts = list(Path(file).with_suffix("").parts)
    package = parts[:-1]
    found: list[Import] = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Import):
            found.extend(Import(file, node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.extend(
                Import(file, node.lineno, base if alias.name == "*" else f"{base}.{alias.name}")
                for alias in node.names
            )
    return found


@cache
def project_imports() -> tuple[Import, ...]:
    found: list[Import] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            file = path.relative_to(ROOT).as_posix()
            found.extend(imports_in(path.read_text(encoding="utf-8"), file))
    return tuple(found)


@dataclass(frozen=True)
class Rule:
    name: str
    applies_to: Callable[[str], bool]
    forbidden: Callable[[str], bool]

    def violations(self, imports: Iterable[Import]) -> list[str]:
        return [str(i) for i in imports if self.applies_to(i.file) and self.forbidden(i.module)]


def in_folder(file: str, folder: str) -> bool:
    return file.startswith(folder + "/")


WIRE_MUST_NOT_IMPORT = (
    "core.server",
    "core.tasks",
    "core.sessions",
    "core.settings",
    "core.settings_engine",
    "core.settings_server",
    "aiohttp",
    "sqlite3",
    "anyio",
)

RULES = [
    Rule(
        "only core/server imports aiohttp within core",
        lambda f: in_folder(f, "core") and not in_folder(f, "core/server"),
        lambda m: within(m, "aiohttp"),
    ),
    Rule(
        "core/wire is pure: no engine, server, settings, I/O or anyio",
        lambda f: in_folder(f, "core/wire"),
        lambda m: any(within(m, p) for p in WIRE_MUST_NOT_IMPORT),
    ),
    Rule(
        "core/tasks does not import core.server",
        lambda f: in_folder(f, "core/tasks"),
        lambda m: within(m, "core.server"),
    ),
    Rule(
        "core/backend imports nothing from core outside core.backend",
        lambda f: in_folder(f, "core/backend"),
        lambda m: within(m, "core") and not within(m, "core.backend"),
    ),
    Rule(
        "wrappers import only core.backend from core",
        lambda f: in_folder(f, "wrappers"),
        lambda m: within(m, "core") and not within(m, "core.backend"),
    ),
    Rule(
        "core/client (any A2A agent's client) imports nothing of the daemon",
        lambda f: in_folder(f, "core/client"),
        lambda m: within(m, "core") and not within(m, "core.client"),
    ),
    Rule(
        "only core/cli.py imports core/client within core",
        lambda f: in_folder(f, "core") and f != "core/cli.py" and not in_folder(f, "core/client"),
        lambda m: within(m, "core.client"),
    ),
    Rule(
        "only core/registry.py imports wrappers within core",
        lambda f: in_folder(f, "core") and f != "core/registry.py",
        lambda m: within(m, "wrappers"),
    ),
]


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_imports_point_one_way(rule: Rule) -> None:
    violations = rule.violations(project_imports())

    assert not violations, f"{rule.name}:\n  " + "\n  ".join(violations)


def test_the_walk_sees_the_real_tree() -> None:
    imports = project_imports()
    files = {i.file for i in imports}

    # Guards against a walk that silently finds nothing (wrong root, wrong glob).
    assert {"core/backend/__init__.py", "core/registry.py", "core/server/app.py"} <= files
    assert any(i.file == "core/server/app.py" and within(i.module, "aiohttp") for i in imports)
    assert any(i.file.startswith("core/wire/") and within(i.module, "pydantic") for i in imports)


def test_imports_are_resolved_and_qualified() -> None:
    source = "\n".join(
        [
            "import os, aiohttp.web",
            "from core import server",
            "from core.wire.models import Task",
            "from . import sibling",
            "from .. import wire",
            "from ..tasks.store import TaskStore",
            "from .helpers import *",
            "def later():",
            "    import sqlite3",
        ]
    )

    found = imports_in(source, "core/tasks/module.py")

    assert [(i.line, i.module) for i in found] == [
        (1, "os"),
        (1, "aiohttp.web"),
        (2, "core.server"),
        (3, "core.wire.models.Task"),
        (4, "core.tasks.sibling"),
        (5, "core.wire"),
        (6, "core.tasks.store.TaskStore"),
        (7, "core.tasks.helpers"),
        (9, "sqlite3"),
    ]


def test_a_violation_names_the_file_line_and_import() -> None:
    imports = imports_in("from core.server.app import create_app\n", "core/tasks/bad.py")
    rule = next(r for r in RULES if r.name == "core/tasks does not import core.server")

    assert rule.violations(imports) == ["core/tasks/bad.py:1 imports core.server.app.create_app"]


@pytest.mark.parametrize(
    ("file", "source", "rule_name"),
    [
        ("core/tasks/x.py", "import aiohttp", "only core/server imports aiohttp within core"),
        (
            "core/wire/x.py",
            "from core.settings import Settings",
            "core/wire is pure: no engine, server, settings, I/O or anyio",
        ),
        (
            "core/wire/x.py",
            "import anyio",
            "core/wire is pure: no engine, server, settings, I/O or anyio",
        ),
        (
            "core/backend/__init__.py",
            "from core.wire import models",
            "core/backend imports nothing from core outside core.backend",
        ),
        (
            "wrappers/x/y.py",
            "from core.tasks import store",
            "wrappers import only core.backend from core",
        ),
        (
            "core/server/x.py",
            "import wrappers.x",
            "only core/registry.py imports wrappers within core",
        ),
        (
            "core/client/x.py",
            "from core.tasks.service import TaskService",
            "core/client (any A2A agent's client) imports nothing of the daemon",
        ),
        (
            "core/server/x.py",
            "from core.client.remote import RemoteAgents",
            "only core/cli.py imports core/client within core",
        ),
    ],
)
def test_each_rule_catches_a_wrong_way_arrow(file: str, source: str, rule_name: str) -> None:
    rule = next(r for r in RULES if r.name == rule_name)

    assert rule.violations(imports_in(source, file))


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("core/server/x.py", "from aiohttp import web"),
        ("wrappers/x/y.py", "from core.backend import Turn\nimport aiohttp"),
        ("core/registry.py", "import wrappers.claude"),
        ("core/tasks/x.py", "from core.wire.models import Task"),
    ],
)
def test_allowed_arrows_pass_every_rule(file: str, source: str) -> None:
    imports = imports_in(source, file)

    assert [v for rule in RULES for v in rule.violations(imports)] == []
