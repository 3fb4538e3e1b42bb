"""Routing: ``resolve_dataset_agent`` with and without a taskset, fronting, rows, modes."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml

from gym_assets.config.errors import (
    AgentWithoutEnvironmentServerError,
    AmbiguousEnvironmentServerError,
    ServerRefNotFoundError,
)
from gym_assets.config.loader import load_configs
from gym_assets.config.routing import (
    environment_server_for_agent,
    environment_server_for_taskset,
    flat_route,
    refuse_unfronted,
    resolve_dataset_agent,
    servers_by_agent,
    taskset_environment_server,
)
from gym_assets.errors import ConfigError

BASE = """\
rs:
  resources_servers:
    exact: {entrypoint: app.py}
agent_a:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: rs}
agent_b:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: other_rs}
other_rs:
  resources_servers:
    exact: {entrypoint: app.py}
env_a:
  environment_servers:
    single_agent_turn:
      agent_server: {type: responses_api_agents, name: agent_a}
      resources_server: {type: resources_servers, name: rs}
env_b:
  environment_servers:
    single_agent_turn:
      agent_server: {type: responses_api_agents, name: agent_b}
      resources_server: {type: resources_servers, name: other_rs}
"""


def config(*extra: str) -> dict[str, Any]:
    """A config mapping built from YAML text (routing works on any resolved mapping)."""
    return yaml.safe_load(BASE + "".join(textwrap.dedent(text) for text in extra))


ROUTES = "environment_server_routes: {t: env_a}\n"

# -- with a taskset ----------------------------------------------------------------------------


def test_taskset_environment_server_returns_the_routed_instance():
    server = taskset_environment_server(config(ROUTES), "t")
    assert (server.name, server.kind, server.implementation) == (
        "env_a",
        "environment_servers",
        "single_agent_turn",
    )
    assert server.config["agent_server"]["name"] == "agent_a"


@pytest.mark.parametrize("routes", ["", "environment_server_routes: {t: ''}\n", ROUTES])
def test_missing_route_is_refused(routes):
    with pytest.raises(ConfigError, match="No Environment Server route for taskset 'u'"):
        resolve_dataset_agent(config(routes), "rs", taskset="u")


def test_route_to_a_non_environment_server_is_refused():
    cfg = config("environment_server_routes: {t: agent_a}\n")
    with pytest.raises(ConfigError, match="Taskset 't' route 'agent_a' must name an Environment"):
        resolve_dataset_agent(cfg, "rs", taskset="t")


def test_route_to_a_server_without_config_mapping_is_refused():
    cfg = config("environment_server_routes: {t: bare}\nbare: {environment_servers: {x: 3}}\n")
    with pytest.raises(ConfigError, match="Environment Server 'bare' must have a configuration"):
        resolve_dataset_agent(cfg, "rs", taskset="t")


def test_routed_server_must_reference_agents_only():
    cfg = config(
        "environment_server_routes: {t: env}\n",
        """\
        env:
          environment_servers:
            conversation:
              user_agent: {type: responses_api_agents, name: rs}
              resources_server: {type: resources_servers, name: rs}
        """,
    )
    with pytest.raises(ConfigError, match="Environment Server 'env' references 'rs', which is not"):
        resolve_dataset_agent(cfg, "rs", taskset="t")


def test_routed_server_must_reference_an_agent():
    cfg = config(
        "environment_server_routes: {t: env}\n",
        "env: {environment_servers: {legacy_agent: {entrypoint: app.py}}}\n",
    )
    with pytest.raises(ConfigError, match="'env' must bind a valid agent_server"):
        resolve_dataset_agent(cfg, "rs", taskset="t")


def test_pin_is_not_allowed_with_a_taskset():
    with pytest.raises(ConfigError, match=r"Taskset 't' pins agent 'agent_a'.*Remove the `agent`"):
        resolve_dataset_agent(config(ROUTES), "rs", "agent_a", taskset="t")


def test_taskset_declared_on_an_agent_routes_to_that_agent():
    assert resolve_dataset_agent(config(ROUTES), "agent_a", taskset="t") == "agent_a"
    with pytest.raises(
        ConfigError, match="Taskset 't' must route to its declaring agent 'agent_b'"
    ):
        resolve_dataset_agent(config(ROUTES), "agent_b", taskset="t")


def test_taskset_declared_on_resources_server_needs_the_binding():
    assert resolve_dataset_agent(config(ROUTES), "rs", taskset="t") == "agent_a"
    with pytest.raises(ConfigError, match="must bind declaring resources server 'other_rs'"):
        resolve_dataset_agent(config(ROUTES), "other_rs", taskset="t")


def test_binding_of_the_wrong_type_does_not_count():
    cfg = config(ROUTES)
    cfg["env_a"]["environment_servers"]["single_agent_turn"]["resources_server"]["type"] = (
        "responses_api_models"
    )
    with pytest.raises(ConfigError, match="must bind declaring resources server 'rs'"):
        resolve_dataset_agent(cfg, "rs", taskset="t")


MULTI = """\
environment_server_routes: {t: multi}
multi:
  environment_servers:
    conversation:
      user_agent: {type: responses_api_agents, name: agent_b}
      assistant_agent: {type: responses_api_agents, name: agent_a}
      resources_server: {type: resources_servers, name: rs}
"""


def test_multi_agent_server_without_agent_server_attributes_to_nobody():
    assert resolve_dataset_agent(config(MULTI), "rs", taskset="t") is None


def test_multi_agent_server_attributes_to_its_agent_server():
    multi = MULTI.replace("user_agent:", "agent_server:")
    assert resolve_dataset_agent(config(multi), "rs", taskset="t") == "agent_b"


# -- without a taskset -------------------------------------------------------------------------


def test_flat_dataset_on_an_agent_runs_on_that_agent():
    assert resolve_dataset_agent(config(), "agent_a") == "agent_a"
    assert resolve_dataset_agent(config(), "agent_a", "agent_a") == "agent_a"
    with pytest.raises(ConfigError, match=r"pins agent 'agent_b'.*would not apply"):
        resolve_dataset_agent(config(), "agent_a", "agent_b")


def test_flat_dataset_on_resources_server_uses_its_single_agent():
    assert resolve_dataset_agent(config(), "rs") == "agent_a"


def test_flat_pin_must_reference_the_resources_server():
    with pytest.raises(
        ConfigError, match=r"no agent of that name.*Agents referencing it: \[agent_a"
    ):
        resolve_dataset_agent(config(), "rs", "agent_b")
    extra = "lonely: {resources_servers: {exact: {}}}\n"
    with pytest.raises(ConfigError, match="Agents referencing it: none"):
        resolve_dataset_agent(config(extra), "lonely", "agent_b")


def test_flat_pin_that_is_a_candidate_wins():
    extra = BASE.split("agent_b:")[0].split("agent_a:")[1]
    cfg = config("agent_c:" + extra)
    assert resolve_dataset_agent(cfg, "rs", "agent_c") == "agent_c"


def test_flat_dataset_without_any_agent_is_refused():
    extra = "lonely: {resources_servers: {exact: {}}}\n"
    with pytest.raises(ConfigError, match=r"No agent in the running config references .*'lonely'"):
        resolve_dataset_agent(config(extra), "lonely")


def test_flat_dataset_with_two_agents_needs_a_pin():
    extra = BASE.split("agent_b:")[0].split("agent_a:")[1]
    with pytest.raises(ConfigError, match=r"2 agents reference this resources server \(\[agent_a"):
        resolve_dataset_agent(config("agent_c:" + extra), "rs")


def test_template_agents_are_not_candidates():
    template = """\
    template:
      responses_api_agents:
        simple_agent: {resources_server: {name: '???'}}
    broken: {responses_api_agents: {simple_agent: {resources_server: rs}}}
    """
    assert resolve_dataset_agent(config(template), "rs") == "agent_a"


@pytest.mark.parametrize("instance", ["nowhere", "env_a"])
def test_datasets_must_be_declared_on_an_agent_or_resources_server(instance):
    with pytest.raises(ConfigError, match=f"Datasets of '{instance}' cannot be routed"):
        resolve_dataset_agent(config(), instance)


# -- fronting ----------------------------------------------------------------------------------


def test_servers_by_agent_lists_each_server_once_in_config_order():
    twice = """\
    twice:
      environment_servers:
        conversation:
          agent_server: {name: agent_a}
          peer: {type: responses_api_agents, name: agent_a}
    """
    assert servers_by_agent(config(twice)) == {
        "agent_a": ["env_a", "twice"],
        "agent_b": ["env_b"],
    }


def test_environment_server_for_agent():
    assert environment_server_for_agent(config(), "agent_a") == "env_a"


def test_agent_fronted_by_two_servers_is_ambiguous_when_routed_by_agent():
    second = "env_a2: {environment_servers: {legacy_agent: {agent_server: {name: agent_a}}}}\n"
    with pytest.raises(AmbiguousEnvironmentServerError, match=r"\[env_a, env_a2\]"):
        environment_server_for_agent(config(second), "agent_a")
    # case 59: the same agent's rows are accepted when stamped through legacy mode
    legacy = config(second, "environment_routing_mode: legacy\nenvironment_server_name: env_a2\n")
    assert environment_server_for_taskset(legacy, None) == "env_a2"


def test_agent_without_server_cannot_be_routed_by_agent():
    cfg = config()
    del cfg["env_b"]
    with pytest.raises(AgentWithoutEnvironmentServerError, match="Agent 'agent_b' has no"):
        environment_server_for_agent(cfg, "agent_b")


def test_unknown_agent_is_named_with_a_suggestion():
    with pytest.raises(ConfigError, match=r"'agent_x'.*Did you mean 'agent_b' or 'agent_a'"):
        environment_server_for_agent(config(), "agent_x")


# -- rows by taskset (reading a row's taskset: tasks/test_row_routing) -------

MODES = {
    "agent": "",
    "legacy": "environment_routing_mode: legacy\nenvironment_server_name: env_b\n",
    "taskset": "environment_routing_mode: taskset\n",
}


@pytest.mark.parametrize("mode", MODES)
def test_a_taskset_goes_to_its_route_in_every_mode(mode):
    assert environment_server_for_taskset(config(ROUTES, MODES[mode]), "t") == "env_a"


@pytest.mark.parametrize("mode", MODES)
def test_a_taskset_without_route_is_refused(mode):
    cfg = config("environment_server_routes: {other: env_a}\n", MODES[mode])
    with pytest.raises(ConfigError, match="No environment server route is configured for taskset"):
        environment_server_for_taskset(cfg, "t")


def test_flat_rows_follow_the_mode():
    assert environment_server_for_taskset(config(ROUTES, MODES["agent"]), None) is None
    assert environment_server_for_taskset(config(ROUTES, MODES["legacy"]), None) == "env_b"
    with pytest.raises(ConfigError, match="taskset routing requires rows containing"):
        environment_server_for_taskset(config(ROUTES, MODES["taskset"]), None)


@pytest.mark.parametrize("unusable", ["", 7, None])
def test_an_unusable_taskset_is_flat(unusable):
    assert environment_server_for_taskset(config(ROUTES), unusable) is None


def test_unknown_routing_mode_is_refused_for_rows():
    with pytest.raises(ConfigError, match="must be one of agent, legacy, taskset"):
        environment_server_for_taskset(config("environment_routing_mode: magic\n"), None)


# -- validation at load (modes and routes), with file:line --------------------------------------


def load_with(write_configs, extra: str):
    return load_configs(write_configs({"a.yaml": BASE, "routes.yaml": extra}))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("environment_routing_mode: fast\n", "must be one of agent, legacy, taskset"),
        ("environment_routing_mode: legacy\n", "environment_server_name is required when"),
        ("environment_routing_mode: taskset\n", "environment_server_routes are required when"),
        ("environment_server_routes: [t]\n", "must map each taskset name"),
        ("environment_server_routes: {t: agent_a}\n", "which is a responses_api_agents instance"),
        ("environment_server_name: rs\n", "environment_server_name names 'rs'"),
        ("error_on_agent_without_environment_server: 'yes'\n", "must be true or false"),
    ],
)
def test_bad_routing_settings_are_refused_at_load(write_configs, extra, message):
    with pytest.raises(ConfigError, match=message) as caught:
        load_with(write_configs, extra)
    assert caught.value.path.endswith("routes.yaml") and caught.value.line == 1


def test_unknown_route_target_names_the_line_and_a_suggestion(write_configs):
    with pytest.raises(ServerRefNotFoundError, match="'env_c', which is not defined") as caught:
        load_with(write_configs, "environment_server_routes:\n  good: env_a\n  bad: env_c\n")
    assert "Did you mean 'env_b' or 'env_a'?" in str(caught.value)
    assert caught.value.path.endswith("routes.yaml") and caught.value.line == 3


def test_errors_from_a_loaded_config_carry_file_and_line(write_configs):
    loaded = load_with(write_configs, "environment_server_routes:\n  t: env_a\n")
    with pytest.raises(ConfigError, match="must bind declaring resources server") as caught:
        resolve_dataset_agent(loaded, "other_rs", taskset="t")
    assert caught.value.path.endswith("routes.yaml") and caught.value.line == 2
    assert resolve_dataset_agent(loaded, "rs", taskset="t") == "agent_a"


# -- flat rows and the server they are routed to -------------------------------------------------

DUO = """\
sim:
  responses_api_agents:
    user_simulator: {entrypoint: app.py}
duo:
  environment_servers:
    conversation:
      user_agent: {type: responses_api_agents, name: sim}
      assistant_agent: {type: responses_api_agents, name: agent_b}
      resources_server: {type: resources_servers, name: other_rs}
"""
LEGACY_DUO = "environment_routing_mode: legacy\nenvironment_server_name: duo\n"


def test_flat_route_in_agent_mode_is_the_server_fronting_the_agent():
    assert flat_route(config(), "rs") == ("env_a", "agent_a")
    assert flat_route(config(), "agent_b") == ("env_b", "agent_b")


def test_flat_route_in_legacy_mode_takes_the_named_multi_agent_server_when_it_fronts_the_agent():
    assert flat_route(config(DUO, LEGACY_DUO), "other_rs") == ("duo", "agent_b")


def test_flat_rows_of_an_agent_the_legacy_multi_agent_server_does_not_front_are_refused():
    with pytest.raises(ConfigError) as caught:
        flat_route(config(DUO, LEGACY_DUO), "rs")
    # the agents the server does front, sorted (the server lists them sim, agent_b)
    assert caught.value.message.startswith(
        "Datasets of 'rs' run agent 'agent_a', which is not an agent of environment server "
        "'duo': 'agent_b', 'sim'."
    )
    assert "Route them to an environment server that fronts 'agent_a'" in caught.value.message


def test_flat_rows_of_an_agent_a_legacy_single_agent_server_does_not_front_are_refused():
    legacy = "environment_routing_mode: legacy\nenvironment_server_name: env_b\n"
    with pytest.raises(
        ConfigError, match=r"'agent_a', which is not an agent of .* 'env_b': 'agent_b'"
    ):
        flat_route(config(legacy), "rs")


def test_the_refusal_names_the_line_of_environment_server_name(write_configs):
    loaded = load_configs(write_configs({"a.yaml": BASE + DUO, "routes.yaml": LEGACY_DUO}))
    with pytest.raises(ConfigError, match="is not an agent of environment server 'duo'") as caught:
        flat_route(loaded, "rs")
    assert caught.value.path.endswith("routes.yaml") and caught.value.line == 2


def test_refuse_unfronted_lets_fronted_agents_and_agentless_servers_pass():
    cfg = config(DUO, "bare: {environment_servers: {legacy_agent: {entrypoint: app.py}}}\n")
    refuse_unfronted(cfg, "duo", "sim", "Row agent_ref 'sim'")
    refuse_unfronted(cfg, "bare", "agent_a", "Row agent_ref 'agent_a'")
    with pytest.raises(ConfigError, match=r"^Row agent_ref 'agent_a' is not an agent of"):
        refuse_unfronted(cfg, "duo", "agent_a", "Row agent_ref 'agent_a'")
