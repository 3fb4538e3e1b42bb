"""A collated row's environment server: a task by its taskset's route, a flat row by the mode."""

import pytest

from gym_assets.errors import ConfigError
from gym_assets.tasks.row_routing import environment_server_for_row

AGENTS = {
    "rs": {"resources_servers": {"exact": {"entrypoint": "app.py"}}},
    "agent": {
        "responses_api_agents": {
            "simple_agent": {"resources_server": {"type": "resources_servers", "name": "rs"}}
        }
    },
    "env_a": {"environment_servers": {"legacy_agent": {"agent_server": {"name": "agent"}}}},
    "env_b": {"environment_servers": {"legacy_agent": {"agent_server": {"name": "agent"}}}},
    "environment_server_routes": {"t": "env_a"},
}
TASK = {"task_id": {"taskset": "t", "task_id": "0"}, "task_input": {}}
FLAT = {"responses_create_params": {"input": "hi"}}


def test_a_task_goes_to_the_route_of_its_taskset_whatever_the_mode():
    legacy = {**AGENTS, "environment_routing_mode": "legacy", "environment_server_name": "env_b"}
    assert environment_server_for_row(AGENTS, TASK) == "env_a"
    assert environment_server_for_row(legacy, TASK) == "env_a"


def test_a_flat_row_follows_the_mode():
    legacy = {**AGENTS, "environment_routing_mode": "legacy", "environment_server_name": "env_b"}
    assert environment_server_for_row(AGENTS, FLAT) is None
    assert environment_server_for_row(legacy, FLAT) == "env_b"
    with pytest.raises(ConfigError, match="taskset routing requires rows containing"):
        environment_server_for_row({**AGENTS, "environment_routing_mode": "taskset"}, FLAT)


def test_a_task_id_object_without_task_input_is_a_flat_row():
    row = {"task_id": {"taskset": "t", "task_id": "0"}}
    assert environment_server_for_row(AGENTS, row) is None


def test_a_task_with_an_unusable_taskset_is_routed_as_a_flat_row():
    row = {"task_id": {"taskset": "", "task_id": "0"}, "task_input": {}}
    assert environment_server_for_row(AGENTS, row) is None
