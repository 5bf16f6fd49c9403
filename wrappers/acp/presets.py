"""Named ACP agents: each a registry entry (`"backend": "gemini"`) with its own defaults on
top of the `acp` backend (docs/backends.md#acp).

A preset says how its agent's binary is found (`cliPath` > the pinned npm install in .tools >
`PATH`, through `core.backend.binaries`), the arguments that start its ACP mode, which
variable its `home` key sets, and how its CLI reopens a session in a terminal.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.backend import Diagnosis
from core.backend.base import BackendUnavailableError
from core.backend.binaries import PROJECT_TOOLS, CliNotFoundError, CliSource, find_cli
from core.backend.credentials import epoch, expiry_note, read_json
from wrappers import pins


@dataclass(frozen=True)
class Preset:
    name: str
    what: str  # "Gemini CLI"
    path_name: str  # the command on PATH
    args: tuple[str, ...]  # what starts its ACP mode
    install: str  # the pinned npm package, as the not-found message names it
    pinned: Callable[[], list[Path]]
    home_variable: str | None
    resume: str | None  # the terminal command, `{}` for the session id
    model_variable: str | None = None  # what `model` sets; None: the session's model option
    # Its modes (or mode option values) that prevent edits, each proven by a test with a
    # write that leaves the workspace unchanged: what `plan` and `readOnly` turns run in.
    edit_free_modes: tuple[str, ...] = ()
    notices: re.Pattern[str] | None = None  # status lines it sends as message text (events.py)
    file_system: bool = True  # whether the daemon offers it fs/* (else it uses its own)
    env: Mapping[str, str] = field(default_factory=dict)  # defaults; the block's `env` wins
    # What to do on the daemon's host when the provider refuses the agent's credentials.
    credentials: str = "log the agent in again or give it a valid API key (its block's env)"
    # Where `check` finds its credentials, from the agent's environment (None: not known).
    credential_check: Callable[[Mapping[str, str]], Diagnosis] | None = None

    def binary(self, cli_path: Path | None, search_path: str | None) -> Path:
        source = CliSource(f"the {self.what} binary", f"{self.name}.cliPath", self.install)
        try:
            return find_cli(
                cli_path, self.pinned(), self.path_name, source, search_path=search_path
            )
        except CliNotFoundError as exc:
            raise BackendUnavailableError(str(exc)) from exc

    def resume_command(self, session_id: str) -> str | None:
        return None if self.resume is None else self.resume.format(shlex.quote(session_id))


def gemini_credentials(env: Mapping[str, str]) -> Diagnosis:
    """Gemini CLI's credentials: a key variable, Vertex AI, or a Google login it recorded in
    `.gemini/oauth_creds.json` under its home (with the access token's expiry)."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        if env.get(name):
            return Diagnosis("credentials", True, f"{name} is set")
    if env.get("GOOGLE_GENAI_USE_VERTEXAI"):
        return Diagnosis("credentials", True, "Vertex AI (GOOGLE_GENAI_USE_VERTEXAI is set)")
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()).expanduser()
    creds = home / ".gemini" / "oauth_creds.json"
    recorded = read_json(creds)
    if recorded is None:
        return Diagnosis(
            "credentials",
            False,
            f"none: set GEMINI_API_KEY (gemini.env) or run `gemini` once to log in (looked for"
            f" {creds})",
        )
    ok, note = expiry_note(
        epoch(recorded.get("expiry_date")), renewable=bool(recorded.get("refresh_token"))
    )
    detail = f"a Google login in {creds}; {note}"
    return Diagnosis("credentials", ok, detail if ok else f"{detail}: run `gemini` to log in again")


# Pinned in wrappers/npm-agents.txt (`a2a-wrapper agents install`, the Makefile).
GEMINI_NPM = pins.npm("gemini")
OPENCODE_NPM = pins.npm("opencode")
COPILOT_NPM = pins.npm("copilot")

GEMINI = Preset(
    name="gemini",
    what="Gemini CLI",
    path_name="gemini",
    args=("--acp",),
    install=pins.install_hint("gemini"),
    pinned=lambda: [PROJECT_TOOLS / "@google" / "gemini-cli" / "bundle" / "gemini.js"],
    home_variable="GEMINI_CLI_HOME",
    model_variable="GEMINI_MODEL",
    edit_free_modes=("plan",),
    # Its ACP file service cannot tell a missing file from a failed read (the error it gets
    # is not an Error object, so it never sees ENOENT): with fs/* offered, every write of a new
    # file fails. Without it, Gemini CLI uses its own files, confined to its workspace.
    file_system=False,
    resume="gemini --resume {}",
    credentials="set GEMINI_API_KEY to a valid key (gemini.env), or run `gemini` once to log in",
    credential_check=gemini_credentials,
)
OPENCODE = Preset(
    name="opencode-acp",
    what="opencode",
    path_name="opencode",
    args=("acp",),
    install=pins.install_hint("opencode"),
    pinned=lambda: sorted(PROJECT_TOOLS.glob("opencode-*/bin/opencode")),
    home_variable="XDG_DATA_HOME",
    # No edit-free mode: its `plan` agent denies only its edit tools; its shell stays as its
    # config permits (`allow` by default, the config's rules winning over the agent's), so a
    # command still writes (tests/backends/acp/test_control.py saw one).
    resume="opencode --session {}",
    credentials="run `opencode auth login`, or set the provider's key in opencode-acp.env",
    # As the `opencode` backend: OpenCode does not reach out on its own (a blocked fetch of
    # the models list or of a plugin slows its first prompt by seconds).
    env={
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "npm_config_registry": "http://127.0.0.1:9/",
    },
)
COPILOT = Preset(
    name="copilot-acp",
    what="copilot CLI",
    path_name="copilot",
    args=("--acp",),
    install=pins.install_hint("copilot"),
    pinned=lambda: sorted(PROJECT_TOOLS.glob("@github/copilot-*/copilot")),
    home_variable="COPILOT_HOME",
    env={"COPILOT_AUTO_UPDATE": "false"},
    model_variable="COPILOT_MODEL",
    edit_free_modes=("https://agentclientprotocol.com/protocol/session-modes#plan",),
    resume="copilot --resume {}",
    credentials="set COPILOT_GITHUB_TOKEN (or GH_TOKEN) to a valid token, or run `copilot login`",
    # Its model errors arrive as text ("Error: Failed to get response from the AI model; ...
    # Last error: 500 <body>") and the prompt still ends with `end_turn`.
    notices=re.compile(r"(?P<level>Info|Error): \S[^\n]* ", re.S),
)
