"""Imports point one way (DESIGN.md §1, style.md §1).

`wrappers/* -> core.backend`; in core, the layers of `LAYERS` (cli -> daemon -> bindings ->
api -> settings -> cluster -> push, usage, workspaces -> engine -> sessions -> storage ->
registry -> wire, backend), each importing only the ones below it; aiohttp only in
core/bindings/http, grpc only in core/bindings/grpc; nothing in core imports `wrappers` except
the registry; bench/ and examples/ import nothing from tests and a wrapper only through its
package; examples/crew's parts (`CREW_LAYERS`) point down too, and reach core through one
door. Every import statement counts, including ones inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("core", "wrappers", "bench", "examples", "harness")


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


# The layers of core, top to bottom (DESIGN.md §1). A module may import its own package and
# the packages of the layers below its own, never a peer package of its layer or anything
# above it. Packages not listed (a new one) fail `test_every_core_package_has_a_layer`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core.cli",),
    ("core.daemon", "core.agents"),
    ("core.bindings.http", "core.bindings.grpc"),
    ("core.api",),
    ("core.settings",),
    ("core.cluster", "core.instance"),
    ("core.push", "core.usage", "core.workspaces"),
    ("core.engine",),
    ("core.sessions",),
    ("core.storage",),
    ("core.registry",),
    # core/client depends on nothing of the daemon (a rule below): the daemon's own MCP face
    # (core/api/local_agents.py, core/bindings/http/mcp.py) serves its tools.
    ("core.wire", "core.backend", "core.logs", "core.client"),
)

# Arrows that still point the wrong way, each with the change that removes it. The list only
# shrinks: `test_every_exception_is_still_needed` fails on one that no longer occurs.
NOT_YET: dict[tuple[str, str], str] = {}


# The crew's parts, top to bottom, by the same rule: what a person runs, then the run, the
# agents and what a person sees of a job, the plan, the ledger, and the one door into core.
CREW_LAYERS: tuple[tuple[str, ...], ...] = (
    ("examples.crew.__main__",),
    ("examples.crew.cli",),
    ("examples.crew.agent", "examples.crew.demo"),
    ("examples.crew.run",),
    ("examples.crew.agents", "examples.crew.show"),
    ("examples.crew.plan",),
    ("examples.crew.ledger",),
    ("examples.crew.daemon",),
)


def package_of(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> str | None:
    """The layered package `module` (dotted) belongs to, or None outside `layers`."""
    for layer in layers:
        for package in layer:
            if within(module, package):
                return package
    return None


def layer_of(package: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int:
    return next(i for i, layer in enumerate(layers) if package in layer)


def module_of(file: str) -> str:
    parts = Path(file).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def excepted(i: Import) -> bool:
    return any(i.file == file and within(i.module, target) for file, target in NOT_YET)


def layer_violations(
    imports: Iterable[Import], layers: tuple[tuple[str, ...], ...] = LAYERS
) -> list[str]:
    found = []
    for i in imports:
        source, target = package_of(module_of(i.file), layers), package_of(i.module, layers)
        if source is None or target is None or source == target or excepted(i):
            continue
        if layer_of(target, layers) <= layer_of(source, layers):
            found.append(f"{i} ({source} may not import {target})")
    return found


@dataclass(frozen=True)
class Rule:
    name: str
    applies_to: Callable[[str], bool]
    forbidden: Callable[[str], bool]

    def violations(self, imports: Iterable[Import]) -> list[str]:
        return [
            str(i)
            for i in imports
            if self.applies_to(i.file) and self.forbidden(i.module) and not excepted(i)
        ]


def in_folder(file: str, folder: str) -> bool:
    return file.startswith(folder + "/")


WIRE_MUST_NOT_IMPORT = ("core", "aiohttp", "grpc", "sqlite3", "asyncpg", "anyio")


def is_submodule(module: str) -> bool:
    """`wrappers.x.y...` where `y` is a module or package of `wrappers/x` (not a name that
    `wrappers/x/__init__.py` exports)."""
    parts = module.split(".")
    if len(parts) < 3:
        return False
    inner = ROOT.joinpath(*parts[:3])
    return inner.with_suffix(".py").is_file() or inner.is_dir()


def only_in(library: str, *folders: str) -> Rule:
    return Rule(
        f"only {' and '.join(folders)} import {library} within core",
        lambda f: in_folder(f, "core") and not any(in_folder(f, d) for d in folders),
        lambda m: within(m, library),
    )


# The crew (an A2A client, and a backend of our daemon when served) uses only what any backend
# or tool may: the backend kit, the settings loader, the daemon's entry point, logging and the
# SQLite layer; and all of it through one module.
CREW_DOOR = "examples/crew/daemon.py"
DAEMON_SURFACE = (
    "core.backend",
    "core.settings.ConfigError",
    "core.settings.load",
    "core.settings.substitute",
    "core.daemon.serve",
    "core.logs",
    "core.storage.sqlite.database.SqliteDatabase",
)

CLIENT_USERS = (
    "core/cli.py",
    "core/api/local_agents.py",
    "core/bindings/http/mcp.py",
    # The conversation-control extension: published under the URI any client reads it by,
    # and shown from the card as any client shows it.
    "core/api/conversation_control.py",
    "core/bindings/http/console/render.py",
)

RULES = [
    only_in("aiohttp", "core/bindings/http"),
    # core/client is a gRPC client of other agents (the SDK's transport wants a channel).
    only_in("grpc", "core/bindings/grpc", "core/client"),
    only_in("asyncpg", "core/storage/postgres", "core/cluster"),
    Rule(
        "core/wire is pure: nothing else from core, no I/O, no anyio",
        lambda f: in_folder(f, "core/wire"),
        lambda m: any(within(m, p) for p in WIRE_MUST_NOT_IMPORT) and not within(m, "core.wire"),
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
        "only core/cli.py and the daemon's MCP face import core/client within core",
        lambda f: (
            in_folder(f, "core") and f not in CLIENT_USERS and not in_folder(f, "core/client")
        ),
        lambda m: within(m, "core.client"),
    ),
    Rule(
        "only core/registry.py imports wrappers within core",
        lambda f: in_folder(f, "core") and f != "core/registry.py",
        lambda m: within(m, "wrappers"),
    ),
    Rule(
        "examples/crew reaches core only through examples/crew/daemon.py",
        lambda f: in_folder(f, "examples/crew") and f != CREW_DOOR,
        lambda m: within(m, "core") or within(m, "wrappers"),
    ),
    Rule(
        "examples/crew/daemon.py imports only the daemon's public surface",
        lambda f: f == CREW_DOOR,
        lambda m: within(m, "core") and not any(within(m, p) for p in DAEMON_SURFACE),
    ),
    Rule(
        "bench, examples and harness import nothing from tests",
        lambda f: any(in_folder(f, d) for d in ("bench", "examples", "harness")),
        lambda m: within(m, "tests"),
    ),
    Rule(
        "bench and examples import a wrapper only through its package (its BackendSpec)",
        lambda f: in_folder(f, "bench") or in_folder(f, "examples"),
        lambda m: within(m, "wrappers") and is_submodule(m),
    ),
]


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_imports_point_one_way(rule: Rule) -> None:
    violations = rule.violations(project_imports())

    assert not violations, f"{rule.name}:\n  " + "\n  ".join(violations)


def test_core_layers_point_down() -> None:
    violations = layer_violations(project_imports())

    assert not violations, "imports against the layers:\n  " + "\n  ".join(violations)


def test_crew_layers_point_down() -> None:
    violations = layer_violations(project_imports(), CREW_LAYERS)

    assert not violations, "imports against the crew's layers:\n  " + "\n  ".join(violations)


def test_every_crew_part_has_a_layer() -> None:
    crew = ROOT / "examples" / "crew"
    parts = {module_of(p.relative_to(ROOT).as_posix()) for p in crew.glob("*.py")}
    parts |= {module_of(p.relative_to(ROOT).as_posix()) for p in crew.glob("*/__init__.py")}

    unplaced = sorted(p for p in parts if p != "examples.crew")
    assert len(unplaced) > 5  # the walk sees the crew's modules and folders
    assert [p for p in unplaced if package_of(p, CREW_LAYERS) is None] == []


def test_an_arrow_up_the_crew_is_caught() -> None:
    imports = imports_in("from examples.crew.run.job import run_job", "examples/crew/plan/x.py")

    assert layer_violations(imports, CREW_LAYERS)
    assert not layer_violations(
        imports_in("from examples.crew.plan.plan import Plan", "examples/crew/run/x.py"),
        CREW_LAYERS,
    )


def test_every_core_package_has_a_layer() -> None:
    packages = {
        module_of(path.relative_to(ROOT).as_posix())
        for path in (ROOT / "core").rglob("*.py")
        if path.parent == ROOT / "core" or path.parent.parent == ROOT / "core"
    }
    packages |= {
        module_of(path.relative_to(ROOT).as_posix())
        for path in (ROOT / "core" / "bindings").glob("*/__init__.py")
    }

    unplaced = sorted(p for p in packages if p not in ("core", "core.bindings"))
    assert [p for p in unplaced if package_of(p) is None] == []


def test_every_exception_is_still_needed() -> None:
    imports = project_imports()

    stale = [
        key
        for key in NOT_YET
        if not any(i.file == key[0] and within(i.module, key[1]) for i in imports)
    ]
    assert stale == [], "remove these from NOT_YET, they no longer occur"


def test_the_walk_sees_the_real_tree() -> None:
    imports = project_imports()
    files = {i.file for i in imports}

    # Guards against a walk that silently finds nothing (wrong root, wrong glob).
    assert {"core/backend/__init__.py", "core/registry.py", "core/bindings/http/app.py"} <= files
    assert any(
        i.file == "core/bindings/http/app.py" and within(i.module, "aiohttp") for i in imports
    )
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
    imports = imports_in("from core.bindings.http.app import create_app\n", "core/engine/bad.py")

    assert layer_violations(imports) == [
        "core/engine/bad.py:1 imports core.bindings.http.app.create_app"
        " (core.engine may not import core.bindings.http)"
    ]


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("core/storage/x.py", "from core.engine.task_run import TaskRun"),
        ("core/push/x.py", "from core.usage.budgets import Budgets"),
        ("core/bindings/grpc/x.py", "from core.bindings.http.app import create_app"),
        ("core/engine/x.py", "from core.cluster.lease import Cluster"),
        ("core/backend/x.py", "from core.registry import load"),
    ],
)
def test_an_arrow_up_or_sideways_is_caught(file: str, source: str) -> None:
    assert layer_violations(imports_in(source, file))


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("core/engine/x.py", "from core.storage.contracts import TaskStore"),
        ("core/engine/x.py", "from core.engine.broker import Broker"),
        ("core/bindings/http/x.py", "from core.engine.service import TaskService"),
        ("core/cli.py", "from core.bindings.http.serve import serve"),
        ("bench/x.py", "from core.storage.sqlite.tasks import SqliteTaskStore"),
    ],
)
def test_an_arrow_down_passes(file: str, source: str) -> None:
    assert layer_violations(imports_in(source, file)) == []


@pytest.mark.parametrize(
    ("file", "source", "rule_name"),
    [
        (
            "core/engine/x.py",
            "import aiohttp",
            "only core/bindings/http import aiohttp within core",
        ),
        (
            "core/bindings/http/x.py",
            "import grpc",
            "only core/bindings/grpc and core/client import grpc within core",
        ),
        (
            "core/wire/x.py",
            "from core.settings import Settings",
            "core/wire is pure: nothing else from core, no I/O, no anyio",
        ),
        (
            "core/wire/x.py",
            "import anyio",
            "core/wire is pure: nothing else from core, no I/O, no anyio",
        ),
        (
            "core/backend/__init__.py",
            "from core.wire import models",
            "core/backend imports nothing from core outside core.backend",
        ),
        (
            "wrappers/x/y.py",
            "from core.engine import service",
            "wrappers import only core.backend from core",
        ),
        (
            "core/bindings/http/x.py",
            "import wrappers.x",
            "only core/registry.py imports wrappers within core",
        ),
        (
            "core/client/x.py",
            "from core.engine.service import TaskService",
            "core/client (any A2A agent's client) imports nothing of the daemon",
        ),
        (
            "core/bindings/http/x.py",
            "from core.client.remote import RemoteAgents",
            "only core/cli.py and the daemon's MCP face import core/client within core",
        ),
        (
            "bench/x.py",
            "from tests.support.postgres import running_server",
            "bench, examples and harness import nothing from tests",
        ),
        (
            "bench/x.py",
            "from wrappers.claude.config import ClaudeConfig",
            "bench and examples import a wrapper only through its package (its BackendSpec)",
        ),
    ],
)
def test_each_rule_catches_a_wrong_way_arrow(file: str, source: str, rule_name: str) -> None:
    rule = next(r for r in RULES if r.name == rule_name)

    assert rule.violations(imports_in(source, file))


@pytest.mark.parametrize(
    ("file", "source"),
    [
        ("core/bindings/http/x.py", "from aiohttp import web"),
        ("wrappers/x/y.py", "from core.backend import Turn\nimport aiohttp"),
        ("core/registry.py", "import wrappers.claude"),
        ("core/engine/x.py", "from core.wire.models import Task"),
        ("bench/x.py", "from wrappers.claude import SPEC"),
    ],
)
def test_allowed_arrows_pass_every_rule(file: str, source: str) -> None:
    imports = imports_in(source, file)

    assert [v for rule in RULES for v in rule.violations(imports)] == []


def test_the_crew_reaches_core_through_one_module() -> None:
    crew = [i for i in project_imports() if i.file.startswith("examples/crew/")]
    door = [i for i in crew if i.file == CREW_DOOR and within(i.module, "core")]

    assert door  # the walk sees the crew, and its door imports core
    assert all(not within(i.module, "core") for i in crew if i.file != CREW_DOOR)
    rule = next(r for r in RULES if r.name.startswith("examples/crew reaches core"))
    assert rule.violations(imports_in("from core.engine import service", "examples/crew/x.py"))
