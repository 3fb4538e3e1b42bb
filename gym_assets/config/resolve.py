"""Turn the merged config into the resolved one that every other part of the project reads.

Order matters: inheritance first (it creates and retires instances), then renamed agent
references follow their agent, then every reference must resolve, then unfronted agents get
relays (or are refused), and last the routing keys and datasets are checked against the
final set of servers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gym_assets.config.inheritance import apply_inheritance
from gym_assets.config.locate import Locate, nowhere, quoted
from gym_assets.config.model import (
    MODELS,
    RESERVED_TOP_LEVEL_KEYS,
    SERVER_KINDS,
    DatasetConfig,
    server_instances,
)
from gym_assets.config.names import NAME_RULE, is_name, shown
from gym_assets.config.references import check_server_references, retarget_renamed_agents
from gym_assets.config.relays import STRICT_FLAG, deprecation_message, front_every_agent
from gym_assets.config.routing import validate_routing
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_list, is_mapping


@dataclass(frozen=True)
class Resolution:
    """The resolved config, the deprecation warnings, and the relays that were generated."""

    data: dict[str, Any]
    warnings: list[str]
    relays: dict[str, str]  # generated relay -> the agent it fronts


def resolve_config(raw: Mapping[str, Any], locate: Locate = nowhere) -> Resolution:
    """Apply inheritance and the reference rules to a merged config, or raise ``ConfigError``."""
    _check_top_level_keys(raw, locate)
    inheritance = apply_inheritance(raw, locate)
    data = inheritance.data
    _check_server_blocks(data, locate)
    retarget_renamed_agents(data, inheritance, locate)
    check_server_references(data, inheritance, locate)
    strict = data.get(STRICT_FLAG, False)
    if not isinstance(strict, bool):
        raise ConfigError(
            f"{STRICT_FLAG} must be true or false; got {strict!r}.", **locate(STRICT_FLAG)
        )
    relays = front_every_agent(data, locate)
    validate_routing(data, locate)
    _check_datasets(data, locate)
    warnings = [deprecation_message(relays, locate)] if relays else []
    return Resolution(data=data, warnings=warnings, relays=relays)


def _check_top_level_keys(raw: Mapping[Any, Any], locate: Locate) -> None:
    """YAML keys may be numbers or null, whatever the caller's type says: check each one."""
    for key in raw:
        if not isinstance(key, str) or not key:
            raise ConfigError(
                f"top-level key {key!r} is not a name; server instances and settings are named "
                "by non-empty strings.",
                **locate(key),
            )


def _check_server_blocks(data: Mapping[str, Any], locate: Locate) -> None:
    """A block that mentions a server kind must define exactly one server."""
    for name, block in data.items():
        if name in RESERVED_TOP_LEVEL_KEYS or not is_mapping(block):
            continue
        kinds = [kind for kind in SERVER_KINDS if block.get(kind) is not None]
        if not kinds:
            continue
        if len(kinds) > 1:
            raise ConfigError(
                f"'{name}' defines several kinds of server ({', '.join(kinds)}); an instance "
                "defines exactly one. Split it into one instance per server.",
                **locate(name),
            )
        implementations = block[kinds[0]]
        if not is_mapping(implementations) or len(implementations) != 1:
            raise ConfigError(
                f"'{name}': {kinds[0]} must hold exactly one implementation, written as "
                f"`{kinds[0]}: {{<implementation>: {{...settings}}}}`.",
                **locate(name, kinds[0]),
            )
        ((implementation, settings),) = implementations.items()
        if settings is not None and not is_mapping(settings):
            raise ConfigError(
                f"'{name}': the settings of {kinds[0]}.{implementation} must be a mapping; got "
                f"{type(settings).__name__}.",
                **locate(name, kinds[0], implementation),
            )


def _check_datasets(data: Mapping[str, Any], locate: Locate) -> None:
    """Every dataset entry is a valid ``DatasetConfig``; model servers declare none."""
    declaring = [s for s in server_instances(data).values() if s.config.get("datasets") is not None]
    on_models = [server.name for server in declaring if server.kind == MODELS]
    if on_models:
        raise ConfigError(
            f"Datasets cannot be declared on model servers: [{quoted(on_models)}]. Move them to "
            "the resources server (or agent) whose rows they are.",
            **locate(on_models[0]),
        )
    for server in declaring:
        if not is_name(server.name):  # <data>/metrics/<instance>.<dataset> is built from it
            raise ConfigError(
                f"instance {shown(server.name)} declares datasets, whose products are named by "
                f"their instance: {NAME_RULE}.",
                **locate(server.name),
            )
        at = (server.name, server.kind, server.implementation, "datasets")
        datasets = server.config["datasets"]
        if not is_list(datasets):
            raise ConfigError(
                f"'{server.name}': datasets must be a list of dataset entries; got "
                f"{type(datasets).__name__}.",
                **locate(*at),
            )
        for index, entry in enumerate(datasets):
            try:
                DatasetConfig.model_validate(entry)
            except ValidationError as exc:
                raise _dataset_error(server.name, index, exc, locate, (*at, index)) from None


def _dataset_error(
    instance: str, index: int, exc: ValidationError, locate: Locate, at: tuple[Any, ...]
) -> ConfigError:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"]) or "(entry)"
    hint = _FIELD_HINTS.get(str(error["loc"][0]) if error["loc"] else "", _ENTRY_HINT)
    return ConfigError(
        f"dataset {index} of '{instance}' is invalid: field '{field}': "
        f"{error['msg'].removeprefix('Value error, ')}. {hint}",
        **locate(*at, *error["loc"][:1]),
    )


_ENTRY_HINT = (
    "A dataset entry needs `name`, `type` (train, validation, benchmark or example) and "
    "`jsonl_fpath`."
)
_FIELD_HINTS = {
    "name": "A dataset's name is a folder name of its products under the data root.",
    "prepare_dependencies": "prepare_dependencies is a list of non-empty strings, e.g. "
    "`prepare_dependencies: [datasets, numpy]`.",
}
