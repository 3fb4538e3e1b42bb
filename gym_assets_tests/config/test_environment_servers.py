"""Every agent needs an environment server: fronting, relays, renames, reference checks.

Cases 43–51 of the reference's test list, the relay naming rule, and the server-reference check.
"""

from __future__ import annotations

import warnings

import pytest

from gym_assets.config.errors import (
    AgentWithoutEnvironmentServerError,
    AmbiguousAgentRenameError,
    ServerRefNotFoundError,
)
from gym_assets.config.loader import load_configs
from gym_assets.config.references import rename_agent_references
from gym_assets.config.relays import relay_name
from gym_assets.config.routing import resolve_dataset_agent, servers_by_agent
from gym_assets.errors import ConfigError

STRICT = "error_on_agent_without_environment_server: true\n"

DIALOGUE = """\
dialogue_resources:
  resources_servers:
    dialogue:
      entrypoint: app.py
participant_a:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
participant_b:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
multi_agent_environment:
  environment_servers:
    conversation:
      entrypoint: app.py
      user_agent: {type: responses_api_agents, name: participant_a}
      assistant_agent: {type: responses_api_agents, name: participant_b}
      resources_server: {type: resources_servers, name: dialogue_resources}
"""

MCQA = """\
mcqa:
  resources_servers:
    mcqa:
      entrypoint: app.py
mcqa_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: mcqa}
"""

RELAY = """\
{name}:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      {field}: {{{type}name: {agent}}}
"""


def relay(name: str, agent: str, field: str = "agent_server", typed: bool = True) -> str:
    return RELAY.format(
        name=name, agent=agent, field=field, type="type: responses_api_agents, " if typed else ""
    )


def load_recording(root):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_configs(root)
    return loaded, [w for w in caught if issubclass(w.category, DeprecationWarning)]


# -- case 43: a multi-agent server fronts every agent it references -------------------------


def test_multi_agent_server_fronts_both_participants(write_configs):
    loaded, emitted = load_recording(write_configs({"a.yaml": DIALOGUE}))
    assert servers_by_agent(loaded.data) == {
        "participant_a": ["multi_agent_environment"],
        "participant_b": ["multi_agent_environment"],
    }
    assert emitted == [] and loaded.warnings == []
    assert list(loaded.data) == list(loaded.raw)  # no relay generated


# -- case 44 ----------------------------------------------------------------------------------


def test_removing_a_participant_leaves_it_unfronted(write_configs):
    text = DIALOGUE.replace(
        "      assistant_agent: {type: responses_api_agents, name: participant_b}\n", ""
    )
    root = write_configs({"a.yaml": STRICT + text})
    with pytest.raises(AgentWithoutEnvironmentServerError, match="participant_b") as caught:
        load_configs(root)
    assert "participant_a" not in str(caught.value)
    assert caught.value.line == 11  # where participant_b is defined


# -- case 45: renaming one participant changes only that field ---------------------------------


def test_renaming_a_participant_changes_only_its_field(load):
    data = load({"a.yaml": DIALOGUE}).data
    rename_agent_references(data, {"participant_b": "participant_b_swapped"})
    server = data["multi_agent_environment"]["environment_servers"]["conversation"]
    assert server["user_agent"] == {"type": "responses_api_agents", "name": "participant_a"}
    assert server["assistant_agent"]["name"] == "participant_b_swapped"
    assert server["resources_server"]["name"] == "dialogue_resources"
    assert "multi_agent_environment" in data


# -- case 46: a top-level rename is followed --------------------------------------------------


def test_inherit_from_rename_retargets_the_server_and_keeps_routes(load):
    loaded = load(
        {
            "a.yaml": STRICT
            + DIALOGUE
            + "environment_server_routes: {dialogue: multi_agent_environment}\n",
            "b.yaml": "renamed_b:\n  _inherit_from: participant_b\n",
        }
    )
    assert servers_by_agent(loaded.data) == {
        "participant_a": ["multi_agent_environment"],
        "renamed_b": ["multi_agent_environment"],
    }
    assert loaded.data["environment_server_routes"] == {"dialogue": "multi_agent_environment"}
    assert resolve_dataset_agent(loaded.data, "renamed_b", taskset="dialogue") == "renamed_b"
    # what was written is untouched
    raw_server = loaded.raw["multi_agent_environment"]["environment_servers"]["conversation"]
    assert raw_server["assistant_agent"]["name"] == "participant_b"


def test_rename_chains_are_followed_to_the_last_agent(load):
    loaded = load(
        {
            "a.yaml": STRICT + DIALOGUE,
            "b.yaml": "b2:\n  _inherit_from: participant_b\nb3:\n  _inherit_from: b2\n",
        }
    )
    assert servers_by_agent(loaded.data)["b3"] == ["multi_agent_environment"]


# -- cases 47-50: relays for unfronted agents --------------------------------------------------


def test_unfronted_agent_gets_a_relay_and_one_deprecation_warning(write_configs):
    loaded, emitted = load_recording(write_configs({"a.yaml": MCQA}))
    assert loaded.data["mcqa_environment_server"] == {
        "environment_servers": {
            "legacy_agent": {
                "entrypoint": "app.py",
                "agent_server": {"type": "responses_api_agents", "name": "mcqa_simple_agent"},
            }
        }
    }
    assert len(emitted) == 1 and str(emitted[0].message) == loaded.warnings[0]
    (message,) = loaded.warnings
    assert message.startswith(
        "DEPRECATED: agents without an environment server: `mcqa_simple_agent`"
    )
    assert "AgentWithoutEnvironmentServerError" in message
    assert "gym-assets config add-environment-servers path/to/config.yaml" in message
    assert "mcqa_environment_server:\n" in message
    assert "      legacy_agent:\n" in message
    assert "name: mcqa_simple_agent" in message
    assert "error_on_agent_without_environment_server: true" in message
    assert loaded.file_of("mcqa_environment_server") == loaded.file_of("mcqa_simple_agent")


def test_strict_flag_refuses_unfronted_agents_and_generates_nothing(write_configs):
    root = write_configs({"a.yaml": STRICT + MCQA})
    with pytest.raises(AgentWithoutEnvironmentServerError) as caught:
        load_configs(root)
    message = str(caught.value)
    assert "'mcqa_simple_agent'" in message
    assert "gym-assets config add-environment-servers" in message
    assert "agent_server" in message


def test_strict_flag_passes_once_a_relay_is_declared(write_configs):
    root = write_configs(
        {"a.yaml": STRICT + MCQA + relay("mcqa_environment_server", "mcqa_simple_agent")}
    )
    loaded, emitted = load_recording(root)
    assert emitted == [] and loaded.warnings == []


def test_agent_fronted_by_its_own_server_gets_no_relay(write_configs):
    loaded, emitted = load_recording(
        write_configs({"a.yaml": MCQA + relay("mcqa_served", "mcqa_simple_agent")})
    )
    assert "mcqa_environment_server" not in loaded.data
    assert emitted == [] and loaded.warnings == []


def test_taken_relay_name_falls_back_to_the_agent_name(load):
    loaded = load({"a.yaml": MCQA + "mcqa_environment_server: {something: else}\n"})
    assert loaded.data["mcqa_environment_server"] == {"something": "else"}
    server = loaded.data["mcqa_simple_agent_environment_server"]
    assert server["environment_servers"]["legacy_agent"]["agent_server"]["name"] == (
        "mcqa_simple_agent"
    )


def test_fallback_name_keeps_growing_while_taken(load):
    loaded = load(
        {"a.yaml": MCQA + "mcqa_environment_server: 1\nmcqa_simple_agent_environment_server: 2\n"}
    )
    assert "mcqa_simple_agent_environment_server_environment_server" in loaded.data


def test_two_unfronted_agents_share_one_warning_and_distinct_relays(write_configs):
    other = MCQA.replace("mcqa_simple_agent", "mcqa_hermes_agent").replace(
        "simple_agent:", "hermes_agent:"
    )
    other = other.replace("mcqa:\n  resources_servers:\n    mcqa:\n      entrypoint: app.py\n", "")
    loaded, emitted = load_recording(write_configs({"a.yaml": MCQA + other}))
    assert len(emitted) == 1
    assert "`mcqa_simple_agent`, `mcqa_hermes_agent`" in loaded.warnings[0]
    relays = [name for name in loaded.data if name not in loaded.raw]
    assert relays == ["mcqa_environment_server", "mcqa_hermes_agent_environment_server"]


def test_unbound_template_needs_no_server(load):
    text = MCQA.replace("name: mcqa}", "name: '???'}")
    assert load({"a.yaml": STRICT + text}).warnings == []


def test_agent_without_entrypoint_needs_no_server(load):
    text = MCQA.replace(
        "      entrypoint: app.py\n      resources_server", "      resources_server"
    )
    assert load({"a.yaml": STRICT + text}).warnings == []


def test_native_session_harness_with_null_binding_needs_no_server(load):
    loaded = load(
        {
            "a.yaml": STRICT + "hermes:\n  responses_api_agents:\n    hermes_agent:\n"
            "      entrypoint: app.py\n      resources_server: null\n"
        }
    )
    assert loaded.warnings == []


@pytest.mark.parametrize(
    ("agent", "agent_type", "expected"),
    [
        ("workplace_assistant_simple_agent", "simple_agent", "workplace_assistant"),
        ("gpqa_mcqa_hermes_agent", "hermes_agent", "gpqa_mcqa"),
        ("simple_agent", "simple_agent", "simple_agent"),
        ("mcqa_simple_agent", "simple_agent", "mcqa"),
        ("my_agent", "simple_agent", "my"),
        ("mcqasimple_agent", "simple_agent", "mcqa"),
        ("solver", "simple_agent", "solver"),
    ],
)
def test_relay_naming_rule(agent, agent_type, expected):
    assert relay_name(agent, agent_type) == f"{expected}_environment_server"


# -- case 51: a rename with two destinations is ambiguous -------------------------------------


@pytest.mark.parametrize(
    ("field", "typed"),
    [("agent_server", True), ("agent_server", False), ("user_agent", True)],
)
def test_two_destinations_of_a_referenced_agent_are_ambiguous(write_configs, field, typed):
    root = write_configs(
        {
            "a.yaml": MCQA + relay("mcqa_environment_server", "mcqa_simple_agent", field, typed),
            "b.yaml": "mcqa_one:\n  _inherit_from: mcqa_simple_agent\n"
            "mcqa_two:\n  _inherit_from: mcqa_simple_agent\n",
        }
    )
    with pytest.raises(AmbiguousAgentRenameError) as caught:
        load_configs(root)
    message = str(caught.value)
    assert "'mcqa_simple_agent'" in message
    assert "'mcqa_one', 'mcqa_two'" in message
    assert f"mcqa_environment_server.environment_servers.legacy_agent.{field}.name" in message
    assert caught.value.path.endswith("a.yaml") and caught.value.line == 14


def test_two_destinations_of_an_unreferenced_agent_each_get_a_relay(load):
    loaded = load(
        {
            "a.yaml": MCQA,
            "b.yaml": "mcqa_one:\n  _inherit_from: mcqa_simple_agent\n"
            "mcqa_two:\n  _inherit_from: mcqa_simple_agent\n",
        }
    )
    assert servers_by_agent(loaded.data) == {
        "mcqa_one": ["mcqa_one_environment_server"],
        "mcqa_two": ["mcqa_two_environment_server"],
    }


# -- server references -----------------------------------------------------------------------


def test_reference_to_a_missing_agent_suggests_and_explains(write_configs):
    root = write_configs({"a.yaml": MCQA + relay("served", "mcqa_simple_agnet")})
    with pytest.raises(ServerRefNotFoundError) as caught:
        load_configs(root)
    message = str(caught.value)
    assert (
        "In server instance 'served', field 'agent_server' references "
        "responses_api_agents/'mcqa_simple_agnet', which is not defined" in message
    )
    assert "Did you mean 'mcqa_simple_agent'?" in message
    assert "point this server's agent_server.name at an existing agent" in message
    assert caught.value.line == 14


def test_rename_to_a_non_agent_leaves_a_dangling_reference_with_a_hint(write_configs):
    root = write_configs(
        {
            "a.yaml": MCQA + relay("served", "mcqa_simple_agent"),
            "b.yaml": "not_an_agent:\n  _inherit_from: mcqa_simple_agent\n"
            "  responses_api_agents: null\n",
        }
    )
    with pytest.raises(ServerRefNotFoundError, match="moved by `_inherit_from` to 'not_an_agent'"):
        load_configs(root)


def test_agent_model_server_must_exist(write_configs):
    text = MCQA.replace(
        "name: mcqa}\n",
        "name: mcqa}\n      model_server: {type: responses_api_models, name: gpt}\n",
    )
    root = write_configs({"a.yaml": text})
    with pytest.raises(ServerRefNotFoundError, match="responses_api_models/'gpt'"):
        load_configs(root)


def test_reference_to_an_instance_of_another_kind_says_what_it_is(write_configs):
    text = MCQA.replace("name: mcqa}", "name: mcqa_simple_agent}")
    root = write_configs({"a.yaml": text})
    with pytest.raises(ServerRefNotFoundError, match="is a responses_api_agents instance"):
        load_configs(root)


def test_agent_reference_without_a_name_is_refused(write_configs):
    root = write_configs(
        {
            "a.yaml": MCQA + "served:\n  environment_servers:\n    legacy_agent:\n"
            "      agent_server: {type: responses_api_agents}\n"
        }
    )
    with pytest.raises(ConfigError, match="has no `name`"):
        load_configs(root)
