"""The harness registry (top-level ``harnesses:`` key).

A harness is the program that talks to the model and executes tools. Running a benchmark with
a harness swaps the agent *implementation* of the benchmark's agent instance; the instance name,
its resources server and its model server stay, so records keep their ``agent_ref``.

Three kinds: ``builtin`` names an agent implementation of this package; ``command`` is any
program, run by the ``command_agent`` implementation with the contract of docs/harnesses.md;
``cli`` is a third-party harness program (Codex CLI, pi, ...) at a pinned version, installed into
the project-local ``.harnesses/<name>/`` and driven by a named adapter
(``gym_assets.rollouts.harnesses.adapters``), also through ``command_agent``.
``interface`` says how episodes reach the agent (docs/harnesses.md): ``session``
(seed, activate and close through the environment server) is preferred; an agent without
session handlers (inherited ones count) falls back to ``legacy_run``, the ``/run`` relay. The
choice is made from the implementation, before anything runs, so a failure while seeding,
activating or closing is that episode's failure and never switches the interface.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gym_assets.config.locate import Locate, did_you_mean, locator_of
from gym_assets.config.model import AGENTS, ENVIRONMENTS, attributed_agent, server_instances
from gym_assets.config.names import NAME_RULE, is_name, shown
from gym_assets.errors import ConfigError, UserError
from gym_assets.plans.provenance import gym_version
from gym_assets.rollouts.episodes.legacy import LEGACY_RELAY
from gym_assets.rollouts.episodes.registry import agent_class
from gym_assets.rollouts.episodes.version_probe import VersionProbeFailed, version_of
from gym_assets.rollouts.harnesses.adapters.base import Api, adapter_named
from gym_assets.rollouts.harnesses.install import unavailable_reason
from gym_assets.sandbox import SandboxPolicy

HARNESSES_KEY = "harnesses"
COMMAND_AGENT = "command_agent"
SESSION_HANDLERS = ("seed_session", "activate", "close_session")
# Placeholders a command template may use, filled when the registry is loaded: the
# interpreter running gym-assets, and the directory of the file that defines the harness.
CONFIG_DIR = "{config_dir}"
_PLACEHOLDERS = ("{python}", CONFIG_DIR)

HARNESSES_DIR_ENV = "GYM_ASSETS_HARNESSES_DIR"
INSTALL_FOLDER = ".harnesses"

Interface = Literal["session", "legacy_run"]


# Registry models are strict: YAML already gives every value its type, so a string where a
# boolean or a number belongs ("yes", "60") is a mistake to report, not a value to coerce.
# YAML gives lists, which the tuple fields accept (``strict=False``; their items stay strict).
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)


class InstallRecipe(BaseModel):
    """Where a ``cli`` harness comes from: one npm package (installed with ``npm --prefix``) or
    one PyPI distribution (installed into a venv), at the entry's pinned ``version``."""

    model_config = _STRICT

    npm: str | None = Field(default=None, min_length=1)
    pip: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one(self) -> InstallRecipe:
        if (self.npm is None) == (self.pip is None):
            raise ValueError("give exactly one of npm: <package> or pip: <distribution>")
        return self


class OfflineProfile(BaseModel):
    """What keeps a ``cli`` harness from reaching anything but the gateway: variables set in
    its environment and flags added to its argv."""

    model_config = _STRICT

    env: dict[str, str] = Field(default_factory=dict)
    args: tuple[str, ...] = Field(default=(), strict=False)


class Harness(BaseModel):
    """One registry entry.

    ``builtin``: ``agent_implementation`` names the agent. ``command``: ``command`` is the argv
    (placeholders ``{python}`` and ``{config_dir}``, filled when the registry is loaded);
    ``version`` pins the runtime version recorded in metadata (default: the program's answer
    to ``--version``); ``timeout_s`` is the program's wall time per activation. ``cli``:
    ``adapter``, the pinned ``version``, the ``install`` recipe, the ``api`` and ``stream`` mode
    it is driven with and its ``offline`` profile; ``install_dir`` is filled by the loader
    (``$GYM_ASSETS_HARNESSES_DIR/<name>``, else ``.harnesses/<name>`` beside the configs folder).
    ``expected_to_fail`` marks a negative control: a harness that must fail the P0 gate in
    every scenario, so its gate check passes when it does and fails (alerts) when it does not.
    """

    model_config = _STRICT

    name: str
    kind: Literal["builtin", "command", "cli"]
    interface: Interface = "session"
    agent_implementation: str = Field(min_length=1)
    command: tuple[str, ...] = Field(default=(), strict=False)
    version: str | None = Field(default=None, min_length=1)
    timeout_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    adapter: str | None = Field(default=None, min_length=1)
    install: InstallRecipe | None = None
    api: Api | None = None
    stream: bool | None = None
    offline: OfflineProfile = OfflineProfile()
    install_dir: Path | None = None
    description: str = ""
    expected_to_fail: bool = False

    @model_validator(mode="before")
    @classmethod
    def _command_agent(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("kind") in ("command", "cli"):
            if data.get("agent_implementation", COMMAND_AGENT) != COMMAND_AGENT:
                raise ValueError(
                    f"a {data['kind']} harness runs its program; drop agent_implementation"
                )
            return {**data, "agent_implementation": COMMAND_AGENT}
        return data

    @model_validator(mode="after")
    def _kind_fields(self) -> Harness:
        cli_fields = ("adapter", "install", "api", "stream", "offline")
        if self.kind != "cli" and (set(cli_fields) & self.model_fields_set):
            raise ValueError(f"{', '.join(cli_fields)} belong to a cli harness")
        if self.kind == "builtin":
            if self.command or self.version is not None or "timeout_s" in self.model_fields_set:
                raise ValueError("command, version and timeout_s belong to a command harness")
            return self
        if self.kind == "cli":
            return self._cli_fields()
        if not self.command or not all(self.command):
            raise ValueError("a command harness needs a non-empty argv list `command: [...]`")
        for arg in self.command:
            if re.search(r"\{[^}]*\}", arg.replace(CONFIG_DIR, "")):
                raise ValueError(
                    f"command argument {arg!r} has an unknown placeholder (only "
                    f"{', '.join(_PLACEHOLDERS)}; the episode's values come in the environment)"
                )
        return self

    def _cli_fields(self) -> Harness:
        missing = [
            name
            for name in ("adapter", "version", "install", "api", "stream")
            if getattr(self, name) is None
        ]
        if missing:
            raise ValueError(f"a cli harness needs {', '.join(missing)}")
        if self.command:
            raise ValueError("a cli harness is started by its adapter; drop command")
        assert self.adapter is not None and self.api is not None and self.stream is not None
        try:
            adapter = adapter_named(self.adapter)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        if (self.api, self.stream) not in adapter.supports:
            spoken = ", ".join(
                f"{api} {'streaming' if stream else 'JSON'}"
                for api, stream in sorted(adapter.supports)
            )
            raise ValueError(
                f"adapter '{self.adapter}' cannot drive {self.api} "
                f"{'streaming' if self.stream else 'JSON'}; it speaks {spoken}"
            )
        return self


def harnesses_dir(config_dir: Path | None) -> Path:
    """Where ``cli`` harnesses are installed: ``$GYM_ASSETS_HARNESSES_DIR``, else
    ``.harnesses`` beside the folder holding the registry file (the project's root for
    ``configs/harnesses.yaml``), else in the working directory."""
    chosen = os.environ.get(HARNESSES_DIR_ENV)
    if chosen:
        return Path(chosen).resolve()
    base = config_dir.parent if config_dir is not None else Path.cwd()
    return (base / INSTALL_FOLDER).resolve()


def _filled(name: str, entry: Mapping[str, Any], config_dir: Path | None) -> dict[str, Any]:
    """The entry with its name, and its command's placeholders filled or a cli harness's
    install folder."""
    for filled_in in ("name", "install_dir"):
        if filled_in in entry:
            raise ValueError(f"{filled_in} is filled in by the loader; drop it")
    entry = {**entry, "name": name}
    if entry.get("kind") == "cli":
        return {**entry, "install_dir": harnesses_dir(config_dir) / name}
    command = entry.get("command")
    if entry.get("kind") != "command" or not isinstance(command, list):
        return entry
    values = {"{python}": sys.executable}
    if config_dir is not None:  # else it stays, and using the harness is refused
        values[CONFIG_DIR] = str(config_dir)
    filled = []
    for arg in command:
        text = str(arg)
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        filled.append(text)
    return {**entry, "command": filled}


def load_harnesses(config: Mapping[str, Any]) -> dict[str, Harness]:
    """Every harness of the resolved config, in config order (none: an empty registry).

    A harness's name becomes its install folder and a segment of its runs' paths, so it must
    be a name (``gym_assets.config.names``); a refusal names the file, the line and the key."""
    locate = locator_of(config)
    block = config.get(HARNESSES_KEY)
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise ConfigError(
            "harnesses must map each harness name to its settings, e.g. "
            "`harnesses: {simple_agent: {kind: builtin, agent_implementation: simple_agent}}`.",
            **locate(HARNESSES_KEY),
        )
    registry: dict[str, Harness] = {}
    for name, entry in block.items():
        if not is_name(name):
            raise ConfigError(
                f"harness {shown(name)}: {NAME_RULE} (it names the harness's install folder)",
                **locate(HARNESSES_KEY, name),
            )
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"harness '{name}' must be a mapping with kind and agent_implementation.",
                **locate(HARNESSES_KEY, name),
            )
        where = locate(HARNESSES_KEY, name).get("path")
        config_dir = Path(where).resolve().parent if where is not None else None
        try:
            registry[name] = Harness.model_validate(_filled(name, entry, config_dir))
        except ValueError as exc:
            raise _entry_error(name, exc, locate) from None
    return registry


def _entry_error(name: str, exc: ValueError, locate: Locate) -> ConfigError:
    """One line for a bad entry, at the line of the key it is about when there is one."""
    if not isinstance(exc, ValidationError):
        return ConfigError(f"harness '{name}': {exc}", **locate(HARNESSES_KEY, name))
    error = exc.errors()[0]
    key = tuple(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden" and len(key) == 1:
        known = [field for field in Harness.model_fields if field not in ("name", "install_dir")]
        message = f"unknown key (known keys: {', '.join(known)})"
    shown_key = ".".join(str(part) for part in key)
    return ConfigError(
        f"harness '{name}': {shown_key + ': ' if key else ''}{message}",
        **locate(HARNESSES_KEY, name, *key),
    )


def get_harness(registry: Mapping[str, Harness], name: str) -> Harness:
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(registry) or "none"
        raise UserError(
            f"unknown harness '{name}'.{did_you_mean(name, registry)} Configured harnesses: "
            f"{known} (add one under the top-level `harnesses:` key)."
        ) from None


@dataclass(frozen=True)
class ResolvedHarness:
    """A harness as a run uses it: the interface chosen and the runtime version it runs."""

    harness: Harness
    interface: Interface
    runtime_version: str

    def metadata(self) -> dict[str, str]:
        return {
            "harness": self.harness.name,
            "kind": self.harness.kind,
            "interface": self.interface,
            "runtime_version": self.runtime_version,
        }


def _located(harness: Harness) -> None:
    """A command whose ``{config_dir}`` could not be filled (the registry was read from a config
    built in code, not from a file) cannot run."""
    if any(CONFIG_DIR in arg for arg in harness.command):
        raise UserError(
            f"harness '{harness.name}': its command uses {CONFIG_DIR}, but the registry was not "
            "read from a config file; load the configs tree, or give the program's absolute path"
        )


def resolve_interface(harness: Harness) -> Interface:
    """``session`` when asked for and the agent has every session handler (inherited ones
    count), else the legacy ``/run`` relay when the agent has a ``run``; neither is refused."""
    cls = agent_class(harness.agent_implementation)
    if harness.interface == "session" and all(
        callable(getattr(cls, handler, None)) for handler in SESSION_HANDLERS
    ):
        return "session"
    if callable(getattr(cls, "run", None)):
        return "legacy_run"
    missing = (
        f"session handlers ({', '.join(SESSION_HANDLERS)}) nor a legacy run"
        if harness.interface == "session"
        else "legacy run"
    )
    raise UserError(
        f"harness '{harness.name}': agent implementation '{harness.agent_implementation}' has "
        f"no {missing}; pick another implementation or interface"
    )


def runtime_version(harness: Harness, sandbox: SandboxPolicy) -> str:
    """The configured ``version``; else a builtin's is the package's, a command's is the first
    line its program prints for ``--version``, asked in the run's harness sandbox
    (``version_probe``; a program that cannot answer is refused)."""
    if harness.version is not None:
        return harness.version
    if harness.kind == "builtin":
        return f"gym-assets {gym_version()}"
    _located(harness)
    shown = " ".join([*harness.command, "--version"])
    try:
        version = version_of(harness.command, sandbox.isolation())
    except (OSError, VersionProbeFailed) as exc:
        raise UserError(
            f"harness '{harness.name}': `{shown}` failed ({exc}); fix the command or pin the "
            "runtime with `version:` in the harness entry"
        ) from None
    if not version:
        raise UserError(
            f"harness '{harness.name}': `{shown}` printed nothing; make the program print its "
            "version or pin it with `version:` in the harness entry"
        )
    return version


class HarnessUnavailable(UserError):
    """A ``cli`` harness that is not installed (or not at its pinned version) here."""


def require_installed(harness: Harness) -> None:
    """A ``cli`` harness must be installed at its pinned version (its program in its install
    folder) before anything runs."""
    reason = unavailable_reason(harness)
    if reason is not None:
        raise HarnessUnavailable(reason)


def resolve(harness: Harness, sandbox: SandboxPolicy) -> ResolvedHarness:
    """Interface and runtime version, settled before a run writes anything (a ``cli`` harness
    that is not installed is refused here); ``sandbox``: the run's, where a version is asked."""
    require_installed(harness)
    return ResolvedHarness(harness, resolve_interface(harness), runtime_version(harness, sandbox))


def with_harness(
    config: Mapping[str, Any],
    harness: Harness,
    environment_servers: Iterable[str],
    *,
    episodes_dir: Path | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The config with the agent each server's results belong to running ``harness``, and the
    servers that credit no single agent (their agents run as configured).

    Only the implementation changes; the instance keeps its name and settings (a command
    harness adds its command, wall time and, with ``episodes_dir``, where its activation
    directories go). With the ``legacy_run`` interface the server becomes a ``legacy_agent``
    relay in front of the agent. Agents a server merely talks to (e.g. a simulated user) are
    left alone. The input is not modified.
    """
    _located(harness)
    legacy = resolve_interface(harness) == "legacy_run"
    data = dict(config)
    instances = server_instances(config)
    unchanged = []
    for server in environment_servers:
        agent = attributed_agent(instances[server].config) if server in instances else None
        if agent is None or agent not in instances:
            unchanged.append(server)
            continue
        settings = dict(instances[agent].config)
        if harness.kind != "builtin":
            settings |= {"harness": harness.name, "wall_time_s": harness.timeout_s}
            if harness.kind == "command":
                settings["command"] = list(harness.command)
            else:
                settings["adapter"] = adapter_settings(harness)
            if episodes_dir is not None:
                settings["episodes_dir"] = str(episodes_dir)
        data[agent] = {**config[agent], AGENTS: {harness.agent_implementation: settings}}
        if legacy:  # the relay keeps the server's resources binding (reference scripts)
            relay = {"agent_server": {"type": AGENTS, "name": agent}}
            bound = instances[server].config.get("resources_server")
            relay |= {} if bound is None else {"resources_server": bound}
            data[server] = {ENVIRONMENTS: {LEGACY_RELAY: relay}}
    return data, unchanged


def adapter_settings(harness: Harness) -> dict[str, Any]:
    """What ``command_agent`` needs to drive a ``cli`` harness through its adapter."""
    return {
        "name": harness.adapter,
        "install_dir": str(harness.install_dir),
        "api": harness.api,
        "stream": harness.stream,
        "offline_env": dict(harness.offline.env),
        "offline_args": list(harness.offline.args),
    }
