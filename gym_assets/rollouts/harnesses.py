"""The harness registry (top-level ``harnesses:`` key) and the upstream a run answers from.

A harness is the program that talks to the model and executes tools. Running a benchmark with
a harness swaps the agent *implementation* of the benchmark's agent instance; the instance name,
its resources server and its model server stay, so records keep their ``agent_ref``.

The upstream says where the model gateway gets its answers: ``reference`` (each task's reference
solution; offline), ``scripted`` (one script for every rollout; offline) or ``openai`` (any
OpenAI-compatible server). An API key is never part of this config: only the *name* of the
environment variable that holds it, read when the run starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gym_assets.config.locate import did_you_mean, locator_of
from gym_assets.config.model import AGENTS, attributed_agent, server_instances
from gym_assets.errors import ConfigError, UserError
from gym_assets.modes import UpstreamMode

HARNESSES_KEY = "harnesses"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Harness(BaseModel):
    """One registry entry. Only built-in agents exist so far (``kind: builtin``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: Literal["builtin"]
    agent_implementation: str = Field(min_length=1)
    description: str = ""


def load_harnesses(config: Mapping[str, Any]) -> dict[str, Harness]:
    """Every harness of the resolved config, in config order (none: an empty registry)."""
    locate = locator_of(config)
    block = config.get(HARNESSES_KEY) or {}
    if not isinstance(block, Mapping):
        raise ConfigError(
            "harnesses must map each harness name to its settings, e.g. "
            "`harnesses: {simple_agent: {kind: builtin, agent_implementation: simple_agent}}`.",
            **locate(HARNESSES_KEY),
        )
    registry: dict[str, Harness] = {}
    for name, entry in block.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"harness '{name}' must be a mapping with kind and agent_implementation.",
                **locate(HARNESSES_KEY, name),
            )
        try:
            registry[str(name)] = Harness.model_validate({**entry, "name": str(name)})
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise ConfigError(
                f"harness '{name}': {where}: {error['msg']}", **locate(HARNESSES_KEY, name)
            ) from None
    return registry


def get_harness(registry: Mapping[str, Harness], name: str) -> Harness:
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(registry) or "none"
        raise UserError(
            f"unknown harness '{name}'.{did_you_mean(name, registry)} Configured harnesses: "
            f"{known} (add one under the top-level `harnesses:` key)."
        ) from None


class Upstream(BaseModel):
    """Where the model gateway's answers come from, for one run.

    ``corrupt_fraction``/``seed``: replace the final answer of that share of reference
    rollouts with a wrong one. ``latency_s``: delay every offline answer (a stand-in for a
    model's think time in tests and benches).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: UpstreamMode = "reference"
    base_url: str | None = None
    api_key_env: str | None = None
    model: str | None = None
    corrupt_fraction: float = Field(default=0.0, ge=0.0, le=1.0, strict=True)
    seed: int = Field(default=0, strict=True)
    latency_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False, strict=True)

    @model_validator(mode="after")
    def _consistent(self) -> Upstream:
        if self.mode == "openai" and not (self.base_url and self.api_key_env):
            raise ValueError(
                "the openai upstream needs a base URL (--base-url) and the name of the "
                "environment variable holding its API key (--api-key-env)"
            )
        if self.mode != "openai" and (self.base_url or self.api_key_env):
            raise ValueError("a base URL and an API-key variable only apply to --upstream openai")
        if self.api_key_env is not None and not _ENV_NAME.match(self.api_key_env):
            raise ValueError(
                "api_key_env is the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                "not the key itself"
            )
        if self.corrupt_fraction and self.mode != "reference":
            raise ValueError("corrupting answers only applies to the reference upstream")
        if self.latency_s and self.mode == "openai":
            raise ValueError("simulated latency only applies to the offline upstreams")
        return self

    def api_key(self) -> str | None:
        """The key from the environment at run time (None when no variable is named)."""
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise UserError(
                f"environment variable {self.api_key_env} is not set; export the API key "
                "under that name before running"
            )
        return value


def with_harness(
    config: Mapping[str, Any], harness: Harness, environment_servers: Iterable[str]
) -> tuple[dict[str, Any], list[str]]:
    """The config with the agent each server's results belong to running ``harness``, and the
    servers that credit no single agent (their agents run as configured).

    Only the implementation changes; the instance keeps its name and settings. Agents a server
    merely talks to (e.g. a simulated user) are left alone. The input is not modified.
    """
    data = dict(config)
    instances = server_instances(config)
    unchanged = []
    for server in environment_servers:
        agent = attributed_agent(instances[server].config) if server in instances else None
        if agent is None or agent not in instances:
            unchanged.append(server)
            continue
        settings = instances[agent].config
        data[agent] = {**config[agent], AGENTS: {harness.agent_implementation: dict(settings)}}
    return data, unchanged


def upstream_of(**fields: Any) -> Upstream:
    """An ``Upstream`` from flags or resource config; inconsistencies are refusals."""
    try:
        return Upstream.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in error["loc"])
        raise UserError(f"upstream: {where + ': ' if where else ''}{message}") from None
