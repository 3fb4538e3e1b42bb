"""Building servers from the resolved config."""

from __future__ import annotations

import copy

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


@pytest.mark.parametrize(
    ("instance", "path", "setting", "value", "problem"),
    [
        # YAML `true` is not 1, "30" is not 30, 2.0 turns is not a count: settings are strict.
        (
            "units_simple_agent",
            ("responses_api_agents", "simple_agent"),
            "max_steps",
            True,
            "integer",
        ),
        (
            "units_simple_agent",
            ("responses_api_agents", "simple_agent"),
            "max_retries",
            "2",
            "integer",
        ),
        (
            "units_simple_agent",
            ("responses_api_agents", "simple_agent"),
            "request_timeout_seconds",
            True,
            "number",
        ),
        ("support_dialogue", ("environment_servers", "conversation"), "max_turns", 2.0, "integer"),
        (
            "units_environment",
            ("environment_servers", "single_agent_turn"),
            "cleanup_timeout_seconds",
            "30",
            "number",
        ),
        (
            "humaneval_resources",
            ("resources_servers", "humaneval"),
            "memory_limit_mb",
            True,
            "integer",
        ),
        (
            "humaneval_resources",
            ("resources_servers", "humaneval"),
            "timeout_seconds",
            False,
            "number",
        ),
    ],
)
def test_server_settings_are_strict_and_refused_as_config_errors(
    bundled_config, start_gateway, instance, path, setting, value, problem
) -> None:
    config = copy.deepcopy(dict(bundled_config))
    kind, implementation = path
    config[instance][kind][implementation][setting] = value
    environment = {
        "units_simple_agent": "units_environment",
        "units_environment": "units_environment",
        "support_dialogue": "support_dialogue",
        "humaneval_resources": "humaneval_environment",
    }[instance]
    with pytest.raises(ConfigError) as caught:
        build_environment(config, environment, start_gateway(ReferenceUpstream()))
    assert caught.value.message.startswith(
        f"'{instance}' ({kind}.{implementation}): setting '{setting}': Input should be a valid "
        f"{problem}"
    )


def test_float_settings_take_whole_numbers(bundled_config, start_gateway) -> None:
    config = copy.deepcopy(dict(bundled_config))
    config["units_simple_agent"]["responses_api_agents"]["simple_agent"][
        "request_timeout_seconds"
    ] = 30
    env = build_environment(config, "units_environment", start_gateway(ReferenceUpstream()))
    assert env.agent.settings.request_timeout_seconds == 30.0
