"""Build environment servers, with their agents and resources servers, from a resolved config.

An instance ``<name>: {<kind>: {<impl>: {...}}}`` is built by the ``create`` factory of
``gym_assets.servers.<kind>.<impl>.app``. One build shares each named server between everyone
who references it, so an agent's tool calls and the verifier see the same resources sessions.
A resources server or agent whose ``create`` takes a ``sandbox`` argument runs model-written code
(or a harness that runs a model's commands) and gets the run's ``SandboxPolicy``; the others never
see it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from gym_assets.config.model import (
    AGENTS,
    ENVIRONMENTS,
    RESOURCES,
    ServerInstance,
    agent_references,
    bound_resources_server,
    server_instances,
)
from gym_assets.config.plugins import module_name, server_module
from gym_assets.errors import ConfigError
from gym_assets.records.contracts import EnvironmentServer, GatewayHandle, ResourcesServer
from gym_assets.sandbox import SandboxPolicy


def build_environment(
    config: Mapping[str, Any],
    name: str,
    gateway: GatewayHandle,
    sandbox: SandboxPolicy | None = None,
) -> EnvironmentServer:
    """The environment server ``name``, ready to run episodes against ``gateway``; model code
    is verified under ``sandbox`` (default: a sandbox is required)."""
    return _Build(config, gateway, sandbox or SandboxPolicy()).environment(name)


def build_resources(
    config: Mapping[str, Any], name: str, sandbox: SandboxPolicy | None = None
) -> ResourcesServer:
    """The resources server ``name`` on its own (for reference scripts and verification)."""
    return _Build(config, None, sandbox or SandboxPolicy()).resources(name)


def implementation_module(kind: str, implementation: str) -> ModuleType:
    """The ``app`` module of an implementation: a missing one is a config error naming where it
    was looked for; a broken one raises as it is."""
    app = server_module(kind, implementation, "app")
    if app is None:
        raise ConfigError(
            f"no {kind} implementation named '{implementation}' (looked for "
            f"{module_name(kind, implementation, 'app')}); check the implementation key of the "
            "instance."
        )
    return app


def agent_class(implementation: str) -> type:
    """The class an agent implementation's ``create`` returns (from its annotations), so its
    handlers can be inspected without building it."""
    module = implementation_module(AGENTS, implementation)
    made = typing.get_type_hints(module.create).get("return")
    if not isinstance(made, type):
        raise ConfigError(
            f"agent implementation '{implementation}': its create() must be annotated with the "
            "class it returns"
        )
    return made


class _Build:
    def __init__(
        self, config: Mapping[str, Any], gateway: GatewayHandle | None, sandbox: SandboxPolicy
    ) -> None:
        self.instances = server_instances(config)
        self.gateway = gateway
        self.sandbox = sandbox
        self.built: dict[str, Any] = {}

    def environment(self, name: str) -> EnvironmentServer:
        instance = self._instance(name, ENVIRONMENTS)
        agents = {
            field: self.agent(str(ref.get("name")))
            for field, ref in agent_references(instance.config)
        }
        return self._create(instance, agents=agents, resources=self._bound_resources(instance))

    def agent(self, name: str) -> Any:
        instance = self._instance(name, AGENTS)
        return self._memo(
            name,
            lambda: self._create(
                instance,
                gateway=self.gateway,
                resources=self._bound_resources(instance),
                sandbox=self.sandbox,
            ),
        )

    def resources(self, name: str) -> ResourcesServer:
        instance = self._instance(name, RESOURCES)
        return self._memo(name, lambda: self._create(instance, sandbox=self.sandbox))

    def _bound_resources(self, instance: ServerInstance) -> ResourcesServer | None:
        name = bound_resources_server(instance.config)
        return None if name is None else self.resources(name)

    def _memo(self, name: str, build: Any) -> Any:
        if name not in self.built:
            self.built[name] = build()
        return self.built[name]

    def _instance(self, name: str, kind: str) -> ServerInstance:
        instance = self.instances.get(name)
        if instance is None or instance.kind != kind:
            known = ", ".join(sorted(n for n, i in self.instances.items() if i.kind == kind))
            raise ConfigError(
                f"no {kind} instance named '{name}' in the config; known: {known or 'none'}"
            )
        return instance

    @staticmethod
    def _create(instance: ServerInstance, **dependencies: Any) -> Any:
        module = implementation_module(instance.kind, instance.implementation)
        if "sandbox" in dependencies and not _takes(module, "sandbox"):
            del dependencies["sandbox"]
        try:
            return module.create(instance.name, instance.config, **dependencies)
        except ValidationError as exc:  # the implementation's settings model refused them
            error = exc.errors()[0]
            setting = ".".join(str(part) for part in error["loc"]) or "(settings)"
            raise ConfigError(
                f"'{instance.name}' ({instance.kind}.{instance.implementation}): setting "
                f"'{setting}': {error['msg']}; fix it in the instance's config"
            ) from None


def _takes(module: ModuleType, parameter: str) -> bool:
    return parameter in inspect.signature(module.create).parameters
