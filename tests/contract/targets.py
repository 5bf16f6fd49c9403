"""The backends the contract suite runs against: one `BackendTarget` each.

A target says how the daemon serves its real agent against a mock model: the mock's wire
format, the backend's config block pointed at the mock, and the few facts in which backends
differ on purpose (what their shell tool is called in an approval question, what makes them
ask). Adding a backend to the suite is adding one target to `TARGETS`; a backend package outside
this repository adds its own through the entry-point group `a2a_wrapper.contract_targets` (each
entry a `BackendTarget`), and a test may call `add_target` before collection.

Capabilities select cases without skipping any. A case (or a whole module, by `pytestmark`)
says what it needs with `@pytest.mark.needs("approvals", ...)`, naming entries of
`CAPABILITIES`; a target says what its agent cannot do in `lacks`. The suite's
`pytest_generate_tests` parametrizes each case only over the targets that lack none of what it
needs (`targets_for`), so a target never collects a case it cannot pass, and nothing is skipped.
A refusal case (what an agent lacking a capability answers) says
`@pytest.mark.lacks("steer")` and runs on the targets that lack it. A case no target can run
is a collection error, not a skip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from harness.codex import codex_block
from harness.mock_models.model import MockKind
from harness.mock_models.openai_chat import MODEL as CHAT_MODEL
from harness.opencode import TEST_ENV, provider_config
from tests.backends.acp import support as acp
from tests.backends.copilot.conftest import API_KEY as COPILOT_KEY
from tests.backends.copilot.conftest import BUNDLED_CLI as COPILOT_CLI
from wrappers.claude import options as claude_options
from wrappers.opencode.launch import find_binary

CLAUDE_KEY = "sk-ant-e2e-test-key"
# Why the Codex model asks to leave its sandbox (its question carries it as the reason).
ESCALATION = "The marker lives outside the working directory."

CAPABILITIES: dict[str, str] = {
    "approvals": "asks the caller before a tool runs, under `approvals.mode: ask`",
    "shell": "has a shell tool that runs commands as processes below the daemon",
    "resume": "resumes a context's session after a daemon restart",
    "streaming": "streams its answer in pieces as the model sends them",
    "quota": "ends a turn whose model call is refused for a used-up quota (no endless retry)",
    "steer": "takes a message into its running turn (`delivery: steer`)",
    "fork": "starts a context from a native fork of another context's session (`forkFrom`)",
    "model": "runs a turn on the model its message chooses (`other_model`)",
    "readOnly": "runs a turn in `readOnly` mode without editing its workspace",
}
"""What a contract case may need (`@pytest.mark.needs(...)`) and a target may lack."""


@dataclass(frozen=True)
class Places:
    """Where one daemon of a target keeps its state (under `root`, per daemon) and what every
    daemon of the run shares (`cache`: e.g. the Copilot CLI unpacks itself there once)."""

    root: Path
    cache: Path

    @property
    def work(self) -> Path:
        return self.root / "work"


@dataclass(frozen=True)
class BackendTarget:
    name: str
    """The backend's name (`backend:` and its config block's key)."""
    mock: MockKind
    block: Callable[[str, Places], dict[str, Any]]
    """The backend's config block for a daemon in `places`, its agent pointed at the mock URL."""
    shell_tool: str
    """The `tool` of the approval question for a shell command."""
    approval_command: Callable[[Path], str]
    """A command that writes `marker` and prints `ran-it`, which the backend's own policy does
    not decide, so that under `approvals.mode: ask` the caller is asked."""
    marker_outside: bool
    """Whether that marker lies outside the working directory (what makes the agent ask)."""
    check_question: Callable[[dict[str, Any], str, Places], None]
    """Asserts what the backend's question says of that command (its summary and `detail`)."""
    resume: str
    """How its `resumeCommand` ends, `{}` standing for the session id."""
    api_key: str | None = None
    """The key the mock requires (None: any)."""
    runs_shell: dict[str, Any] = field(default_factory=dict)
    """Block keys with which, in policy mode, its shell tool runs without a question."""
    asks: dict[str, Any] = field(default_factory=dict)
    """Block keys with which, under `approvals.mode: ask`, the approval command is asked."""
    loads_sessions: bool = True
    """Whether the agent reliably continues a session after a daemon restart; when not, the
    restart case checks that the daemon reports a new session, and why, when it gets one."""
    lacks: frozenset[str] = frozenset()
    """The `CAPABILITIES` its agent does not have: it gets no case that needs one of them."""
    unconfined: dict[str, Any] = field(default_factory=dict)
    """Block keys with which its shell may write anything in its working directory, `.git`
    included (an agent run without its own sandbox: what the escape cases assume)."""
    credentials_fix: str = "a2a-wrapper check"
    """What the AUTH_REQUIRED status message tells the operator to do (a part of it)."""
    health_block: dict[str, Any] = field(default_factory=dict)
    """Block keys for the health cases (test_health.py): e.g. the agent's own retries."""
    other_model: str = "mock-model-b"
    """A model a message may choose (not the configured one): the per-message model case."""
    other_model_seen: str | None = None
    """The name the mock sees when a message chooses `other_model` (None: the same)."""

    def __post_init__(self) -> None:
        unknown = self.lacks - CAPABILITIES.keys()
        assert not unknown, f"target {self.name} lacks unknown capabilities {sorted(unknown)}"

    def __str__(self) -> str:
        return self.name


def _echo(marker: Path) -> str:
    return f"echo ran > {marker} && echo ran-it"


def _home(places: Places) -> Path:
    """A HOME of the daemon's own: agents run their shell tools as login shells, which must
    not read the machine's shell profile (pyenv, ...: slow, and it takes a lock)."""
    home = places.root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return home


def _claude_block(url: str, places: Places) -> dict[str, Any]:
    binary = claude_options.bundled_cli()
    assert binary is not None, "claude-agent-sdk with its bundled CLI is not installed"
    return {
        "workingDirectory": str(places.work),
        "home": str(places.root / "claude-home"),
        "model": "claude-sonnet-4-5",
        "env": {
            "HOME": str(_home(places)),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            # One request per failing model call: errors surface at once.
            "CLAUDE_CODE_MAX_RETRIES": "0",
        },
    }


def _codex_block(url: str, places: Places) -> dict[str, Any]:
    block = codex_block(url, places.root)
    block["env"] = {**block["env"], "HOME": str(_home(places))}
    return block


def _opencode_block(url: str, places: Places) -> dict[str, Any]:
    config = provider_config(url)
    models = config["provider"]["mock"]["models"]
    models["mock-model-b"] = {**models["mock-model"], "name": "Mock B"}  # other_model
    return {
        "workingDirectory": str(places.work),
        "home": str(places.root / "opencode-home"),
        "cliPath": str(find_binary(None)),
        "model": "mock/mock-model",
        "maxRetries": 1,
        "env": {**TEST_ENV, "HOME": str(_home(places))},
        "config": config,
    }


def _copilot_block(url: str, places: Places) -> dict[str, Any]:
    assert COPILOT_CLI.is_file(), f"the copilot CLI is not at {COPILOT_CLI}: run `make test`"
    return {
        "workingDirectory": str(places.work),
        "cliPath": str(COPILOT_CLI),
        "home": str(places.root / "copilot-home"),
        "model": CHAT_MODEL,
        "offline": True,
        "provider": {"baseUrl": url, "apiKey": COPILOT_KEY},
        "env": {"HOME": str(_home(places)), "XDG_CACHE_HOME": str(places.cache)},
    }


def _claude_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert question["summary"] == f"Run `{command}` in the working directory"
    assert question["detail"]["command"] == command
    assert question["detail"]["input"] == {"command": command, "description": "run it"}


def _codex_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert command in question["summary"]
    assert question["detail"]["command"] == command
    assert question["detail"]["reason"] == ESCALATION
    assert question["detail"]["cwd"] == str(places.work)


def _opencode_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert question["summary"] == f"Run `{command}` in the working directory"
    assert question["detail"]["permission"] == "bash"
    assert question["detail"]["metadata"]["command"] == command
    assert question["detail"]["patterns"]


def _copilot_question(question: dict[str, Any], command: str, places: Places) -> None:
    marker = command.split(" > ")[1].split(" && ", maxsplit=1)[0]
    summary = question["summary"]
    assert summary.startswith("The shell command 'echo ran > /")
    assert summary.endswith("\u2026'")  # a long command is clipped; detail has all of it
    assert question["detail"]["command"] == command
    assert f"names {marker}, outside the working directory" in question["detail"]["reason"]


TARGETS: list[BackendTarget] = [
    BackendTarget(
        name="claude",
        resume="claude --resume {}",
        mock="anthropic",
        block=_claude_block,
        api_key=CLAUDE_KEY,
        shell_tool="Bash",
        # Not read-only and not a file edit: acceptEdits leaves it to the permission callback.
        approval_command=lambda marker: (
            f"python3 -c \"open('{marker}', 'w').write('ran')\" && echo ran-it"
        ),
        marker_outside=False,
        check_question=_claude_question,
        runs_shell={"allowedTools": ["Bash"]},
        credentials_fix="ANTHROPIC_API_KEY",
        # Lacks nothing (wrappers/claude/control.py); Claude Code sends a model as named, but
        # for aliases and retired models, which it maps to its current ones.
        other_model="claude-haiku-4-5",
        # One retry: the provider's retry-after shows in Claude Code's api_retry message.
        health_block={"env": {"CLAUDE_CODE_MAX_RETRIES": "1"}},
    ),
    BackendTarget(
        name="codex",
        resume="codex resume {}",
        mock="openai_responses",
        block=_codex_block,
        shell_tool="shell",
        approval_command=_echo,
        # The workspace-write sandbox does not let a command write there: Codex asks to escalate.
        marker_outside=True,
        check_question=_codex_question,
        # Codex's sandbox keeps each writable root's .git read-only (with any bubblewrap).
        unconfined={"sandbox": "danger-full-access", "dangerouslyAllowFullAccess": True},
        credentials_fix="codex login",
        # One retry: Codex reports the provider's delay when it retries.
        health_block={"config": {"model_providers": {"mock": {"request_max_retries": 1}}}},
    ),
    BackendTarget(
        name="opencode",
        resume="opencode --session {}",
        mock="openai_chat",
        block=_opencode_block,
        shell_tool="bash",
        approval_command=_echo,
        marker_outside=False,
        check_question=_opencode_question,
        asks={"permission": {"bash": "ask"}},
        credentials_fix="opencode auth login",
        other_model="mock/mock-model-b",
        other_model_seen="mock-model-b",
    ),
    BackendTarget(
        name="copilot",
        resume="copilot --resume {}",
        mock="openai_chat",
        block=_copilot_block,
        api_key=COPILOT_KEY,
        shell_tool="shell",
        approval_command=_echo,
        # Only what the default policy would refuse is asked: a write outside the directory.
        marker_outside=True,
        check_question=_copilot_question,
        credentials_fix="copilot.provider.apiKey",
    ),
]


def _antigravity_block(url: str, places: Places) -> dict[str, Any]:
    return {
        "workingDirectory": str(places.work),
        "home": str(places.root / "antigravity-home"),
        "model": CHAT_MODEL,
        "endpoint": {"kind": "openai", "baseUrl": url},
        "env": {"HOME": str(_home(places))},
    }


def _antigravity_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert question["summary"] == f"Run `{command}` in {places.work}"
    assert question["detail"]["command"] == command
    assert question["detail"]["cwd"] == str(places.work)


TARGETS.append(
    BackendTarget(
        name="antigravity",
        resume="--conversation {}",
        mock="openai_chat",
        block=_antigravity_block,
        shell_tool="run_command",
        approval_command=_echo,
        # antigravity.commands is "ask" by default: every command is the caller's to approve.
        marker_outside=False,
        check_question=_antigravity_question,
        runs_shell={"commands": "allow"},
        credentials_fix="the proxy in front of the OpenAI-compatible endpoint",
        lacks=frozenset({"steer", "fork"}),
    )
)


def targets_for(
    needs: Iterable[str], targets: Iterable[BackendTarget] | None = None
) -> list[BackendTarget]:
    """The targets (default: `TARGETS`) that have every capability in `needs`."""
    needed = frozenset(needs)
    unknown = needed - CAPABILITIES.keys()
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)} (known: {sorted(CAPABILITIES)})")
    return [t for t in (TARGETS if targets is None else targets) if not t.lacks & needed]


def targets_lacking(
    lacked: Iterable[str], targets: Iterable[BackendTarget] | None = None
) -> list[BackendTarget]:
    """The targets (default: `TARGETS`) that lack every capability in `lacked` (what a
    refusal case runs on)."""
    wanted = frozenset(lacked)
    unknown = wanted - CAPABILITIES.keys()
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)} (known: {sorted(CAPABILITIES)})")
    return [t for t in (TARGETS if targets is None else targets) if wanted <= t.lacks]


def add_target(target: BackendTarget) -> None:
    """Run the contract suite against one more backend too (call before collection)."""
    TARGETS.append(target)


for _entry in entry_points(group="a2a_wrapper.contract_targets"):
    _target = _entry.load()
    assert isinstance(_target, BackendTarget), f"{_entry.value} is not a BackendTarget"
    add_target(_target)


# ----- ACP agents (the `acp` backend's presets, docs/backends.md#acp) ---------------------------

# In policy mode the daemon answers their permission requests: `approveKinds` lets shell run.
_ACP_RUNS_SHELL = {"approveKinds": ["read", "search", "think", "execute"]}


def _acp_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert question["summary"] == f"Run `{command}` in the working directory"
    assert question["detail"]["command"] == command
    assert question["detail"]["kind"] == "execute"
    kinds = {o["kind"] for o in question["detail"]["options"]}
    assert {"allow_once", "reject_once"} <= kinds


def _acp_target(
    name: str, mock: MockKind, block: Callable[[str, Places], dict[str, Any]], **more: Any
) -> BackendTarget:
    return BackendTarget(
        name=name,
        mock=mock,
        block=block,
        shell_tool="execute",  # the ACP tool kind of a shell call
        approval_command=_echo,
        marker_outside=False,
        check_question=_acp_question,
        runs_shell=_ACP_RUNS_SHELL,
        **{"lacks": frozenset({"steer"}), **more},
    )


TARGETS += [
    _acp_target(
        "gemini",
        "gemini",
        lambda url, p: acp.gemini_block(url, p.root, p.work, _home(p)),
        api_key=acp.GEMINI_KEY,
        resume="gemini --resume {}",
        credentials_fix="GEMINI_API_KEY",
        # Gemini CLI 0.61.0's session/load empties a session loaded in the same minute as it
        # was created (both write session-<minute>-<id>.jsonl): docs/backends.md#acp.
        loads_sessions=False,
        # It advertises no session/fork; its model list (unstable session/set_model) and its
        # `plan` mode (edit-free) are what a message chooses.
        lacks=frozenset({"steer", "fork"}),
        other_model="gemini-3.5-flash-lite",
    ),
    _acp_target(
        "opencode-acp",
        "openai_chat",
        lambda url, p: acp.opencode_block(url, p.root, p.work, _home(p)),
        # OpenCode 1.18.33 retries an HTTP 429 `insufficient_quota` from a chat-completions
        # provider without end (only the Responses stream's error event is final to it), and
        # its ACP face reports no retry: the turn ends at timeouts.turn. The `opencode` backend
        # sees the retries (maxRetries) and names the quota.
        # Its `plan` agent still runs shell commands that write (wrappers/acp/presets.py): no
        # readOnly. It forks (session/fork) and takes its provider's models (its model option).
        lacks=frozenset({"quota", "steer", "readOnly"}),
        resume="opencode --session {}",
        credentials_fix="opencode auth login",
        other_model=acp.OPENCODE_OTHER_MODEL,
        other_model_seen="mock-model-b",
    ),
    _acp_target(
        "copilot-acp",
        "openai_chat",
        lambda url, p: acp.copilot_block(url, p.root, p.work, _home(p), p.cache),
        api_key=acp.COPILOT_KEY,
        resume="copilot --resume {}",
        credentials_fix="COPILOT_GITHUB_TOKEN",
        # Copilot CLI 1.0.102 advertises no session/fork and no model list or model option
        # (its model is COPILOT_MODEL); its `plan` mode is edit-free.
        lacks=frozenset({"steer", "fork", "model"}),
    ),
]
