"""The modes a user picks by flag, config or Dagster run config, as ``Literal`` types.

Each type comes with the tuple of its values, so a flag's ``choices`` and a refusal's list of
valid values are the type itself. Stdlib only: the command line offers these choices without
importing the code that acts on them, which keeps ``gym-assets --help`` instant.
"""

from __future__ import annotations

from typing import Literal, get_args

ValidationLevel = Literal["off", "warn", "error"]
"""How task-data validation failures are treated once ``auto`` is resolved."""

ValidationMode = Literal[ValidationLevel, "auto"]
"""Task-data validation as asked for; ``auto`` is ``error`` for examples, else ``warn``."""
VALIDATION_MODES: tuple[ValidationMode, ...] = get_args(ValidationMode)

CollationMode = Literal["train_preparation", "example_validation"]
"""Which dataset types a collation takes: training data, or the example datasets."""
COLLATION_MODES: tuple[CollationMode, ...] = get_args(CollationMode)

RoutingMode = Literal["agent", "legacy", "taskset"]
"""``environment_routing_mode``: how flat rows find their environment server."""
ROUTING_MODES: tuple[RoutingMode, ...] = get_args(RoutingMode)

UpstreamMode = Literal["reference", "scripted", "openai"]
"""Where the model gateway gets its answers."""
UPSTREAM_MODES: tuple[UpstreamMode, ...] = get_args(UpstreamMode)

UpstreamApi = Literal["auto", "responses", "chat"]
"""Which API an openai upstream speaks; ``auto`` asks the server once when the gateway starts."""
UPSTREAM_APIS: tuple[UpstreamApi, ...] = get_args(UpstreamApi)
