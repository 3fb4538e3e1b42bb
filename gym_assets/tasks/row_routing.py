"""Which environment server a collated row goes to, and which agent a flat row runs on.

The config knows routes per taskset and agents per instance (``gym_assets.config.routing``);
only here is a row read for its taskset, ``agent_ref`` or ``task_source``, so the config layer
never needs to know what a row looks like.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.config.routing import (
    environment_server_for_taskset,
    flat_dataset_agent,
    refuse_unfronted,
)
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping
from gym_assets.tasks.materialize import is_materialized


def environment_server_for_row(config: Mapping[str, Any], row: Mapping[str, Any]) -> str | None:
    """The server a row is stamped with before dispatch; None means "find it by agent"."""
    taskset = row["task_id"].get("taskset") if is_materialized(row) else None
    return environment_server_for_taskset(config, taskset)


class FlatRowAgents:
    """The agent each flat row runs on, checked against the server it is routed to.

    A row names its agent through ``agent_ref``, else through ``task_source`` (the instance
    that declared its dataset, resolved by ``flat_dataset_agent``, with that dataset's pin
    from ``pins``). Each (name, server) pair is resolved once, so a large taskset costs one
    lookup per row.
    """

    def __init__(self, config: Mapping[str, Any], pins: Mapping[str, str | None]):
        self._config = config
        self._pins = pins
        self._known: dict[tuple[str, str, str], str] = {}

    def agent_of(self, row: Mapping[str, Any], server: str, **at: Any) -> str | None:
        """The row's agent (None: the row names none); refused, at ``at``, when ``server``
        does not front it."""
        ref = row.get("agent_ref")
        name = ref.get("name") if is_mapping(ref) else None
        if isinstance(name, str) and name:
            return self._checked("agent_ref", name, server, at)
        source = row.get("task_source")
        if isinstance(source, str) and source:
            return self._checked("task_source", source, server, at)
        return None

    def _checked(self, field: str, name: str, server: str, at: dict[str, Any]) -> str:
        key = (field, name, server)
        known = self._known.get(key)
        if known is not None:
            return known
        if field == "agent_ref":
            agent, subject = name, f"Row agent_ref '{name}'"
        else:
            try:
                agent = flat_dataset_agent(self._config, name, self._pins.get(name))
            except ConfigError as exc:
                raise ConfigError(
                    f"Cannot resolve task_source '{name}' to an agent: {exc.message}", **at
                ) from None
            subject = f"Row task_source '{name}' resolves to agent '{agent}', which"
        refuse_unfronted(self._config, server, agent, subject, **at)
        self._known[key] = agent
        return agent
