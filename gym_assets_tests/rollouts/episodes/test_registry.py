"""Building servers from the resolved config."""

from __future__ import annotations

import pytest

from gym_assets.errors import ConfigError
from gym_assets.rollouts.episodes.registry import build_environment, build_resources
from gym_assets.rollouts.gateway import ReferenceUpstream

ENVIRONMENTS = {
    "humaneval_environment": "single_agent_turn",
    "units_environment": "single_agent_turn",
    "arith_environment": "single_agent_turn_legacy",
    "support_dialogue": "conversation",
}


@pytest.mark.parametrize(("name", "implementation"), sorted(ENVIRONMENTS.items()))
def test_every_bundled_environment_builds(bundled_config, start_gateway, name, implementation):
    env = build_environment(bundled_config, name, start_gateway(ReferenceUpstream()))
    assert env.name == name and env.implementation == implementation


def test_one_build_shares_each_resources_server(bundled_config, start_gateway) -> None:
    env = build_environment(bundled_config, "support_dialogue", start_gateway(ReferenceUpstream()))
    assert env.assistant.resources is env.resources  # the bot's tools hit the verifier's sessions
    assert env.assistant.settings.max_steps == 4


def test_unknown_instances_and_implementations_are_config_errors(bundled_config) -> None:
    with pytest.raises(ConfigError, match="no resources_servers instance named 'nope'"):
        build_resources(bundled_config, "nope")
    with pytest.raises(
        ConfigError, match="no resources_servers instance named 'units_environment'"
    ):
        build_resources(bundled_config, "units_environment")
    config = {"x": {"resources_servers": {"no_such_impl": {}}}}
    with pytest.raises(
        ConfigError, match="no resources_servers implementation named 'no_such_impl'"
    ):
        build_resources(config, "x")
