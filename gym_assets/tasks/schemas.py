"""Find the task-data schema and the metrics hook a server directory ships.

A server implementation lives in ``<package>/<kind>/<implementation>/``. It may ship
``task_data.py`` exporting ``TaskData`` (a pydantic model or a union of models) and
``dataset_metrics.py`` exporting ``compute_task_metrics``. Both are optional: a missing module
means "nothing to check", while a module that exists but is broken is reported, because a
silently skipped schema would let bad data through.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from pydantic import BaseModel, TypeAdapter

from gym_assets.config.model import (
    AGENTS,
    ENVIRONMENTS,
    RESOURCES,
    ServerInstance,
    bound_resources_server,
    server_instances,
)
from gym_assets.config.plugins import SERVERS_PACKAGE, server_module
from gym_assets.json_shapes import is_mapping
from gym_assets.tasks.task_inputs import SingleAgentTaskData

SINGLE_AGENT_ENVIRONMENTS = frozenset(
    {"single_agent_turn", "single_agent_turn_legacy", "legacy_agent"}
)
LEGACY_LOCATION = "verifier_metadata"
REQUEST_FIELD = "responses_create_params"

# A server's ``compute_task_metrics(task_input)``: it should return a mapping of metric names
# to values, but it is the server's code, so what it returns is checked at each call.
MetricsHook = Callable[[Mapping[str, Any]], object]


@dataclass(frozen=True)
class ServerDir:
    """Where a server implementation's modules live: ``<package>/<kind>/<implementation>/``."""

    kind: str
    implementation: str


def owner_dir(config: Mapping[str, Any], declaring: ServerInstance) -> ServerDir | None:
    """The server directory that owns a dataset's task data (its schema and metrics hook).

    A resources server owns its own datasets; an agent's datasets belong to the resources server
    it references, or to the agent itself when it is self-contained (no ``resources_server``).
    A dangling reference owns nothing.
    """
    if declaring.kind == RESOURCES:
        return ServerDir(RESOURCES, declaring.implementation)
    if declaring.kind != AGENTS:
        return None
    if "resources_server" not in declaring.config:
        return ServerDir(AGENTS, declaring.implementation)
    return resources_dir(config, bound_resources_server(declaring.config))


def resources_dir(config: Mapping[str, Any], name: str | None) -> ServerDir | None:
    """The directory of the resources server instance ``name``, if it exists."""
    target = server_instances(config).get(name) if name else None
    if target is None or target.kind != RESOURCES:
        return None
    return ServerDir(RESOURCES, target.implementation)


class SchemaLoadError(Exception):
    """A server's ``task_data.py`` exists but cannot be used."""


class MetricsHookError(ValueError):
    """A server's ``dataset_metrics.py`` is broken or its hook returned unusable values."""


@dataclass(frozen=True)
class TaskSchema:
    """A task-data schema plus the facts validation needs about its fields."""

    name: str
    adapter: TypeAdapter[Any]
    fields: frozenset[str]
    legacy_fields: frozenset[str]
    # The schema checks the request and nothing else (the single-agent environments): a row
    # whose request is already known to be valid passes without being validated again.
    request_only: bool = False


def _models_of(annotation: Any) -> Iterator[type[BaseModel]]:
    """The pydantic models inside a model, a union, or an ``Annotated`` union."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) in (
        typing.Union,
        typing.Annotated,
    ):
        args = typing.get_args(annotation)
        if typing.get_origin(annotation) is typing.Annotated:
            args = args[:1]
        for arg in args:
            yield from _models_of(arg)


def task_schema(name: str, task_data: Any) -> TaskSchema:
    """Describe ``task_data``: the fields it declares and those read from ``verifier_metadata``."""
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(task_data)
    except Exception as exc:
        raise SchemaLoadError(f"`TaskData` is not TypeAdapter-compatible ({exc})") from None
    fields: set[str] = set()
    legacy: set[str] = set()
    for model in _models_of(task_data):
        for field_name, info in model.model_fields.items():
            key = info.alias or field_name
            fields.add(key)
            extra = info.json_schema_extra
            if is_mapping(extra) and extra.get("legacy_location") == LEGACY_LOCATION:
                legacy.add(key)
    display = task_data.__name__ if isinstance(task_data, type) else name
    return TaskSchema(display, adapter, frozenset(fields), frozenset(legacy))


SINGLE_AGENT_SCHEMA = replace(
    task_schema("SingleAgentTaskData", SingleAgentTaskData), request_only=True
)


def load_task_schema(
    kind: str, implementation: str, *, package: str = SERVERS_PACKAGE
) -> TaskSchema | None:
    """The ``TaskData`` schema of one server implementation, or None if it ships none."""
    if kind == ENVIRONMENTS and implementation in SINGLE_AGENT_ENVIRONMENTS:
        return SINGLE_AGENT_SCHEMA
    try:
        module = server_module(kind, implementation, "task_data", package=package)
    except Exception as exc:
        raise SchemaLoadError(
            f"Failed to import {kind}/{implementation}/task_data.py: {exc}"
        ) from None
    if module is None:
        return None
    if not hasattr(module, "TaskData"):
        raise SchemaLoadError(f"{kind}/{implementation}/task_data.py does not export `TaskData`")
    return task_schema(implementation, module.TaskData)


def load_metrics_hook(
    kind: str, implementation: str, *, package: str = SERVERS_PACKAGE
) -> MetricsHook | None:
    """The ``compute_task_metrics`` hook of one server implementation, or None if it has none."""
    where = f"{kind}/{implementation}"
    try:
        module = server_module(kind, implementation, "dataset_metrics", package=package)
    except Exception as exc:
        raise MetricsHookError(f"Invalid dataset metrics hook for {where}: {exc}") from None
    if module is None:
        return None
    hook = getattr(module, "compute_task_metrics", None)
    if not callable(hook):
        raise MetricsHookError(
            f"Invalid dataset metrics hook for {where}: dataset_metrics.py must define a "
            "callable `compute_task_metrics(task_input)`"
        )
    return cast(MetricsHook, hook)  # what it returns is checked at each call
