"""The one Settings model: the only reader of the config file and the environment.

Precedence: defaults < JSON file < environment (`A2A_WRAPPER__SERVER__PORT=…`) < CLI flags.
Keys are camelCase; unknown keys and wrong types are errors that name the key path.
`${VAR}` and `${VAR:-default}` are substituted in every string of the file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.alias_generators import to_camel

from core import registry
from core.backend.config import Block
from core.settings.cluster import ClusterSettings, redacted_dsn
from core.settings.control import TurnOptionSettings
from core.settings.engine import (
    ApprovalSettings,
    HookSettings,
    OutputSettings,
    SessionSettings,
    TimeoutSettings,
)
from core.settings.sandbox import SandboxSettings
from core.settings.server import (
    ConsoleSettings,
    McpSettings,
    PushSettings,
    ServerSettings,
    is_loopback,
)
from core.settings.usage import BudgetSettings, MetricsSettings, TracingSettings
from core.settings.workspace import WorkspaceSettings
from core.wire import signing

ENV_PREFIX = "A2A_WRAPPER__"


class ConfigError(ValueError):
    """The configuration is unusable; the message names the key path."""


class SkillSettings(Block):
    id: str
    name: str
    description: str
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class ProviderSettings(Block):
    organization: str
    url: str


class ExtensionSettings(Block):
    uri: str
    description: str | None = None
    required: bool = False
    params: dict[str, JsonValue] | None = None


class ExtendedCardSettings(Block):
    description: str | None = Field(default=None, description="Replaces the public description")
    skills: list[SkillSettings] = Field(
        default_factory=list, description="Skills shown to authenticated callers only"
    )
    allow_anonymous: bool = Field(
        default=False,
        description="Serve the extended card to the anonymous callers of a loopback daemon "
        "without tokens (conformance runs: the TCK cannot authenticate); A2A wants it "
        "authenticated, so leave this off otherwise",
    )


class SigningKeySettings(Block):
    private_key_file: Path = Field(description="PEM private key (unencrypted) that signs the card")
    algorithm: Literal[
        "ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"
    ] = Field(default="ES256", description="JWS `alg` of the signature")
    key_id: str = Field(min_length=1, description="JWS `kid`: how verifiers find the public key")
    jwks_url: str | None = Field(
        default=None, description="JWS `jku`: where verifiers can fetch the public key set"
    )

    @model_validator(mode="after")
    def _key_loads(self) -> SigningKeySettings:
        signing.load_private_key(self.private_key_file, self.algorithm)
        return self

    def key(self) -> signing.SigningKey:
        private = signing.load_private_key(self.private_key_file, self.algorithm)
        return signing.SigningKey(self.key_id, self.algorithm, private, self.jwks_url)


class SigningSettings(SigningKeySettings):
    additional_keys: list[SigningKeySettings] = Field(
        default_factory=list,
        description="More keys that also sign the card, one signature each (key rotation: "
        "docs/operations.md)",
    )

    def signing_keys(self) -> list[signing.SigningKey]:
        return [self.key(), *(k.key() for k in self.additional_keys)]


class AgentCardSettings(Block):
    name: str = "a2a-wrapper"
    description: str = "A coding agent served over A2A"
    version: str = "0.1.0"
    documentation_url: str | None = None
    icon_url: str | None = None
    provider: ProviderSettings | None = None
    default_input_modes: list[str] = Field(default_factory=lambda: ["text/plain"])
    default_output_modes: list[str] = Field(default_factory=lambda: ["text/plain"])
    skills: list[SkillSettings] = Field(default_factory=list)
    extensions: list[ExtensionSettings] = Field(default_factory=list)
    extended: ExtendedCardSettings | None = Field(
        default=None,
        description="The extended card, served only to authenticated callers (needs "
        "server.auth.tokens)",
    )
    signing: SigningSettings | None = Field(
        default=None, description="Sign the card (JWS, A2A §8.4); unset = unsigned"
    )
    max_age: int = Field(default=300, ge=0, description="Cache-Control max-age of the card (s)")
    v03_fields: bool = Field(
        default=True,
        description="Merge the v0.3 card fields (url, preferredTransport, ...) into the v1.0 card "
        "so v0.3 clients can read it; a request with A2A-Version 1.x always gets the strict card",
    )


# Shorter tokens are accepted with a warning (at start and in `check`): 16 characters is the
# least that random-looking tokens need to resist guessing over the network.
class StorageSettings(Block):
    kind: Literal["sqlite", "memory", "postgres"] = "sqlite"
    path: Path | None = None
    url: str | None = Field(
        default=None,
        description='With kind "postgres": the database DSN (postgresql://user@host/db; a '
        "password is better given by env A2A_WRAPPER__STORAGE__URL or PGPASSWORD)",
    )
    retention: int = Field(
        default=7 * 24 * 3600 * 1000, ge=0, description="ms a terminal task is kept; 0 = forever"
    )
    sweep_interval: int = Field(default=3600 * 1000, ge=0, description="ms; 0 disables")

    @model_validator(mode="after")
    def _url_for_postgres(self) -> StorageSettings:
        if self.kind == "postgres" and not self.url:
            raise ValueError('storage.url is required with storage.kind "postgres"')
        return self

    def where(self) -> str:
        """The storage for an operator's message: the file, or the DSN without its password."""
        if self.kind == "postgres" and self.url:
            return redacted_dsn(self.url)
        return str(self.resolved_path())

    def local_path(self) -> Path | None:
        """The file this process locks and keeps its instance records beside (the agent
        processes a crashed run left, core/instance): the SQLite file; with "postgres", the
        replica's own `path` when set (each replica on a machine its own); else none."""
        if self.kind == "sqlite":
            return self.resolved_path()
        if self.kind == "postgres" and self.path is not None:
            return self.path.expanduser()
        return None

    def resolved_path(self) -> Path:
        if self.path is not None:
            return self.path.expanduser()
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(state) / "a2a-wrapper" / "tasks.sqlite3"

    def state_directory(self) -> Path:
        """The daemon's state directory: the storage file's folder (workspaces live there)."""
        return self.resolved_path().parent


class Settings(BaseModel):
    """The whole config. `load` is its only reader: the JSON file, then the environment
    (`_env_overrides`, the one parser of `A2A_WRAPPER__*`), then CLI flags."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    schema_: str | None = Field(default=None, alias="$schema")
    backend: str
    agent_card: AgentCardSettings = Field(default_factory=AgentCardSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    session: SessionSettings = Field(default_factory=SessionSettings)
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    output: OutputSettings = Field(default_factory=OutputSettings)
    hooks: HookSettings = Field(default_factory=HookSettings)
    approvals: ApprovalSettings = Field(default_factory=ApprovalSettings)
    push: PushSettings = Field(default_factory=PushSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    turn_options: TurnOptionSettings = Field(default_factory=TurnOptionSettings)
    options: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Options passed to a third-party backend given as a plain factory",
    )
    # The backend blocks (`"<name>": {...}`), validated by each backend's own model.
    _blocks: dict[str, BaseModel] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _backend_blocks(cls, data: Any, handler: ModelWrapValidatorHandler[Settings]) -> Settings:
        """Validate each backend block with its backend's model (the registry's spec), so a
        backend owns its keys and the error paths still start with the block's name."""
        if not isinstance(data, dict):
            return handler(data)
        rest = dict(data)
        blocks = {name: rest.pop(name) for name in block_names(rest.get("backend")) if name in rest}
        settings = handler(rest)
        selected = _spec_or_none(settings.backend)
        if selected is not None:
            blocks.setdefault(selected.name, {})
        validated: dict[str, BaseModel] = {}
        problems: list[str] = []
        for name, raw in blocks.items():
            spec = selected if selected is not None and selected.name == name else None
            spec = spec or _spec_or_none(name)
            if spec is None:  # pragma: no cover - block_names only names loadable specs
                continue
            try:
                validated[name] = spec.config_model.model_validate(raw)
            except ValidationError as exc:
                problems.extend(error_lines(exc, prefix=f"{name}."))
        if problems:
            raise ValueError("; ".join(problems))
        settings._blocks = validated
        return settings

    @model_validator(mode="after")
    def _safe_to_serve(self) -> Settings:
        server = self.server
        server.auth.refuse_unusable_tokens()
        if (
            not server.auth.tokens
            and not is_loopback(server.host)
            and not server.allow_unauthenticated
        ):
            raise ValueError(
                f"server.host {server.host!r} is reachable from other machines but "
                "server.auth.tokens is empty: add a token, or set "
                "server.allowUnauthenticated: true to accept that anyone reaching the port "
                "can drive the agent"
            )
        extended = self.agent_card.extended
        anonymous_ok = (
            extended is not None and extended.allow_anonymous and is_loopback(server.host)
        )
        if extended is not None and not server.auth.tokens and not anonymous_ok:
            raise ValueError(
                "agentCard.extended is served to authenticated callers only: "
                "it needs server.auth.tokens (or agentCard.extended.allowAnonymous on a "
                "loopback bind)"
            )
        return self

    def backend_block(self) -> BaseModel | None:
        """The validated block of the configured backend, or None when it is a plain factory
        (which takes `options`) or unknown (the registry says so when the app is built)."""
        spec = _spec_or_none(self.backend)
        return None if spec is None else self._blocks.get(spec.name)

    def block(self, model: type[BlockT]) -> BlockT:
        """The configured backend's block as `model` (its spec's config model)."""
        block = self.backend_block()
        if not isinstance(block, model):
            raise TypeError(f"backend {self.backend!r} has no {model.__name__} block")
        return block

    def backend_config(self) -> object:
        """What the backend factory takes: its validated block, else `options`."""
        block = self.backend_block()
        return block if block is not None else dict(self.options)


BlockT = TypeVar("BlockT", bound=BaseModel)


def _spec_or_none(name: str) -> registry.BlockModel | None:
    try:
        return registry.block_for(name)
    except registry.UnknownBackendError:
        return None


def block_names(backend: object) -> list[str]:
    """Top-level keys that are backend blocks: every backend known by name, and the spec a
    `package.module:attr` backend names."""
    known = registry.names()
    if isinstance(backend, str) and backend not in known:
        spec = _spec_or_none(backend)
        if spec is not None:
            known.append(spec.name)
    return known


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _substitute(value: Any, path: str, environ: dict[str, str]) -> Any:
    if isinstance(value, str):

        def repl(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{path}: environment variable {name} is not set")

        return _VAR.sub(repl, value)
    if isinstance(value, dict):
        return {k: _substitute(v, f"{path}.{k}" if path else k, environ) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, f"{path}[{i}]", environ) for i, v in enumerate(value)]
    return value


def substitute(value: Any, environ: Mapping[str, str], path: str = "") -> Any:
    """`${VAR}` and `${VAR:-default}` in every string of a JSON value (ConfigError naming the
    key path for an unset variable without a default): the one implementation, used for the
    config file and by tools that read JSON documents of their own (the crew's plans)."""
    return _substitute(value, path, dict(environ))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _camel_key(key: str) -> str:
    return to_camel(key.lower())


def _env_overrides(environ: dict[str, str]) -> dict[str, Any]:
    """`A2A_WRAPPER__SERVER__PORT=9` -> {"server": {"port": 9}}; values are JSON when they parse."""
    out: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        keys = [_camel_key(k) for k in name[len(ENV_PREFIX) :].split("__") if k]
        if not keys:
            continue
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        node = out
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return out


def error_lines(exc: ValidationError, *, prefix: str = "") -> list[str]:
    """One `key.path: what is wrong` line per error."""
    lines = []
    for err in exc.errors(include_url=False):
        path = prefix + ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        msg = msg.removeprefix("Value error, ")
        lines.append(f"{path.rstrip('.')}: {msg}" if path else msg)
    return lines


def _describe(exc: ValidationError) -> str:
    return "; ".join(error_lines(exc))


def load(
    path: Path | None,
    *,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Settings:
    """Build Settings from a JSON file, the environment and CLI overrides (highest wins)."""
    env = dict(os.environ if environ is None else environ)
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config {path}: {exc.strerror}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: the config must be a JSON object")
        data = _substitute(loaded, "", env)
    data = _merge(data, _env_overrides(env))
    data = _merge(data, overrides or {})
    try:
        return Settings(**data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from exc


def _block_description(name: str) -> str:
    needs = registry.needs(name)
    head = f'The block of backend "{name}"'
    return f"{head}; it needs {needs}" if needs else head


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the config file (committed as config/schema.json; a test keeps it
    in sync with the models)."""
    # Settings as if it declared every known backend's block (they are validated by the
    # backends' own models, see Settings._backend_blocks).
    blocks: dict[str, Any] = {
        block.name: (
            block.config_model,
            Field(default_factory=block.config_model, description=_block_description(block.name)),
        )
        for block in registry.blocks()
    }
    declared = create_model("Settings", __base__=Settings, **blocks)
    schema = declared.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "a2a-wrapper daemon config"
    return schema


__all__ = ["ConfigError", "Settings", "json_schema", "load", "substitute"]
