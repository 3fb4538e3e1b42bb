"""Adapters of third-party CLI harnesses (``kind: cli`` in the harness registry).

An adapter knows one harness program: how to configure an activation of it against the model
gateway (config files under the activation's private home, argv, environment), and how to read
back what the program itself wrote (its session file, event stream, export or trajectory) as an
``ng_agent_observations`` bundle. It never runs the program (``command_agent`` does, in the
sandbox) and never fills in evidence the program did not keep: a missing link is a gap.
"""

from gym_assets.rollouts.harnesses.adapters.base import (
    ADAPTER_MODULES,
    Adapter,
    Api,
    CliEpisode,
    Prepared,
    adapter_named,
)

__all__ = ["ADAPTER_MODULES", "Adapter", "Api", "CliEpisode", "Prepared", "adapter_named"]
