"""The adapter contract: prepare an activation, then read what the harness wrote.

``command_agent`` calls ``prepare`` before starting the program (the config files it writes go
under ``episode.files.home``; the argv and environment it returns are launched in the sandbox
with the scrubbed base environment of ``launch.base_environment`` underneath) and
``observations`` after the program has exited or been stopped, whatever its exit code. The
bundle ``observations`` returns is validated like any command harness's; model calls are
attributed by the gateway (the base URL names the invocation), so an adapter references a call
only by an identifier the harness itself recorded (a response id), never by guessing.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from gym_assets.errors import ConfigError
from gym_assets.rollouts.episodes.launch import EpisodeFiles

Api = Literal["chat", "responses"]

# Adapter name → module defining ``ADAPTER``; imported only when a harness names it.
ADAPTER_MODULES: dict[str, str] = {
    "codex": "gym_assets.rollouts.harnesses.adapters.codex",
    "hermes": "gym_assets.rollouts.harnesses.adapters.hermes",
    "mini_swe_agent": "gym_assets.rollouts.harnesses.adapters.mini_swe_agent",
    "opencode": "gym_assets.rollouts.harnesses.adapters.opencode",
    "pi": "gym_assets.rollouts.harnesses.adapters.pi",
}


@dataclass(frozen=True)
class CliEpisode:
    """One activation as an adapter sees it."""

    files: EpisodeFiles  # the activation directory: workspace (cwd), home, log
    base_url: str  # this invocation's gateway URL, ending in /v1, reachable from the sandbox
    model: str  # the model name to put in requests
    model_server: str  # the model server's name (model_ref.name of response-id references)
    prompt: str  # the task's user text
    invocation_id: str
    install_dir: Path  # .harnesses/<name>/: the npm prefix or venv the harness lives in
    api: Api
    stream: bool
    offline_env: Mapping[str, str]  # the registry entry's offline profile
    offline_args: tuple[str, ...]


@dataclass(frozen=True)
class Prepared:
    """What to start: the argv and the variables added to the scrubbed base environment."""

    argv: tuple[str, ...]
    env: Mapping[str, str]


class Adapter(Protocol):
    name: str
    supports: frozenset[tuple[Api, bool]]  # the (api, stream) pairs the harness can speak
    # None when a text reply ends an episode; else the shell command the harness needs the
    # model to run, in the reply that gives its final answer, to end it (mini's submit). A
    # reference run plays each final answer that way.
    finish_command: str | None

    def executable(self, install_dir: Path) -> Path:
        """The program inside its install folder."""
        ...

    def prepare(self, episode: CliEpisode) -> Prepared:
        """Write the activation's config files and say how to start the program."""
        ...

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        """The ``ng_agent_observations`` bundle read from what the program wrote (``None``:
        it was stopped before it exited)."""
        ...


def adapter_named(name: str) -> Adapter:
    """The adapter ``name``; an unknown name is a config error listing the known ones."""
    module = ADAPTER_MODULES.get(name)
    if module is None:
        known = ", ".join(sorted(ADAPTER_MODULES)) or "none"
        raise ConfigError(f"no harness adapter named '{name}'; known adapters: {known}")
    adapter: Adapter = importlib.import_module(module).ADAPTER
    return adapter
