"""The shape of a merged config: server instances, their datasets, and agent references.

A merged config is a plain mapping (the YAML of every file under the configs root). Server
instances look like ``<instance>: {<kind>: {<implementation>: {...fields}}}``; everything
else at the top level is a reserved key. These helpers read that mapping; they never mutate it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from gym_assets.config.names import valid_name
from gym_assets.json_shapes import is_mapping
from gym_assets.limits import MAX_REPEATS

RESOURCES = "resources_servers"
AGENTS = "responses_api_agents"
MODELS = "responses_api_models"
ENVIRONMENTS = "environment_servers"
SERVER_KINDS = (RESOURCES, AGENTS, MODELS, ENVIRONMENTS)

RESERVED_TOP_LEVEL_KEYS = frozenset(
    {
        "environment_server_routes",
        "environment_routing_mode",
        "environment_server_name",
        "error_on_agent_without_environment_server",
        "harnesses",
        "models",
    }
)

DatasetType = Literal["train", "validation", "benchmark", "example"]


class DatasetConfig(BaseModel):
    """One entry of a server instance's ``datasets:`` list."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: Annotated[str, AfterValidator(valid_name)]  # it names the dataset's product paths
    type: DatasetType
    jsonl_fpath: str = Field(min_length=1)
    taskset: str | None = None
    num_repeats: int = Field(default=1, ge=1, le=MAX_REPEATS, strict=True)
    license: str | None = None
    prepare_script: str | None = None
    prompt_config: str | None = None
    agent: str | None = None
    # What the prepare step needs installed (e.g. Python packages); kept in the metrics sidecar.
    prepare_dependencies: list[Annotated[str, Field(min_length=1)]] | None = None


@dataclass(frozen=True)
class ServerInstance:
    """A top-level config entry that defines one server."""

    name: str
    kind: str
    implementation: str
    config: Mapping[str, Any]

    @property
    def is_agent(self) -> bool:
        return self.kind == AGENTS


def server_instance(name: str, block: Any) -> ServerInstance | None:
    """Return the server defined by a top-level block, or None if it defines no server.

    A block defines a server when it holds exactly one known kind with exactly one
    implementation mapping; anything else is not a server (reserved keys, malformed blocks).
    """
    if not is_mapping(block):
        return None
    kinds = [kind for kind in SERVER_KINDS if kind in block]
    if len(kinds) != 1:
        return None
    impls = block[kinds[0]]
    if not is_mapping(impls) or len(impls) != 1:
        return None
    ((impl, impl_config),) = impls.items()
    if impl_config is None:
        impl_config = dict[str, Any]()
    if not is_mapping(impl_config):
        return None
    return ServerInstance(
        name=str(name), kind=kinds[0], implementation=str(impl), config=impl_config
    )


def server_instances(config: Mapping[str, Any]) -> dict[str, ServerInstance]:
    """All server instances, in the merged config's key order."""
    found: dict[str, ServerInstance] = {}
    for name, block in config.items():
        if name in RESERVED_TOP_LEVEL_KEYS:
            continue
        instance = server_instance(name, block)
        if instance is not None:
            found[name] = instance
    return found


def agent_references(server_config: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(field, reference)`` for every agent reference of one environment server, in order.

    A field is an agent reference when its value is a mapping whose ``type`` is
    ``responses_api_agents``, or when it is the ``agent_server`` field and has no type.
    """
    refs: list[tuple[str, Mapping[str, Any]]] = []
    for field, value in server_config.items():
        if not is_mapping(value):
            continue
        ref_type = value.get("type")
        if ref_type == AGENTS or (field == "agent_server" and ref_type is None):
            refs.append((str(field), value))
    return refs


def agent_names(server_config: Mapping[str, Any]) -> list[str]:
    """Names of the agents one environment server references, in field order."""
    return [
        str(ref["name"])
        for _, ref in agent_references(server_config)
        if ref.get("name") is not None
    ]


def attributed_agent(server_config: Mapping[str, Any]) -> str | None:
    """The agent an environment server's results are credited to, if there is exactly one."""
    agent_server = server_config.get("agent_server")
    if is_mapping(agent_server):
        name = agent_server.get("name")
        return None if name is None else str(name)
    names = agent_names(server_config)
    return names[0] if len(names) == 1 else None


def bound_resources_server(server_config: Mapping[str, Any]) -> str | None:
    """The resources server an environment server binds through ``resources_server``."""
    ref = server_config.get("resources_server")
    if is_mapping(ref) and ref.get("type", RESOURCES) in (RESOURCES, None):
        name = ref.get("name")
        return None if name is None else str(name)
    return None


@dataclass(frozen=True)
class DeclaredDataset:
    """A dataset together with the server instance that declares it."""

    instance: ServerInstance
    dataset: DatasetConfig
    position: int  # index in the instance's datasets list

    @property
    def name(self) -> str:
        return self.dataset.name


def iter_declared_datasets(config: Mapping[str, Any]) -> Iterator[DeclaredDataset]:
    """Every dataset declaration, in config order then declaration order.

    Raises pydantic ``ValidationError`` for a malformed entry; the config loader turns that into
    a ``ConfigError`` with the file and line.
    """
    for instance in server_instances(config).values():
        for position, raw in enumerate(instance.config.get("datasets") or []):
            yield DeclaredDataset(instance, DatasetConfig.model_validate(raw), position)
