"""The harness registry, the upstream config, and seeded corruption."""

from __future__ import annotations

import sys

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.errors import ConfigError, UserError
from gym_assets.rollouts.collection.corruption import WRONG_ANSWER, corrupt, corrupted_keys
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import (
    Harness,
    get_harness,
    load_harnesses,
    with_harness,
)
from gym_assets_tests.rollouts.collection.conftest import REPO

AGENTS = "responses_api_agents"


def test_the_bundled_registry():
    registry = load_harnesses(load_configs(REPO / "configs"))
    assert list(registry)[:3] == ["simple_agent", "minimal_agent", "negative_control"]
    assert registry["negative_control"].kind == "command"  # the suite's negative control
    assert {h.kind for h in list(registry.values())[3:]} == {"cli"}  # third-party programs
    assert {"codex", "pi", "opencode", "hermes"} <= {
        n for n, h in registry.items() if h.kind == "cli"
    }
    assert registry["mini_swe_agent"].kind == "cli"  # with the other third-party CLIs
    assert registry["simple_agent"].agent_implementation == "simple_agent"
    example = registry["minimal_agent"]
    assert example.kind == "command" and example.agent_implementation == "command_agent"
    # placeholders filled from the interpreter and the defining file's directory
    assert example.command == (
        sys.executable,
        str(REPO / "configs" / ".." / "examples" / "harnesses" / "minimal_agent.py"),
    )
    assert load_harnesses({}) == {}


@pytest.mark.parametrize(
    "block",
    [
        ["simple_agent"],
        {"x": "builtin"},
        {"x": {"kind": "docker", "agent_implementation": "a"}},
        {"x": {"kind": "builtin"}},
        {"x": {"kind": "builtin", "agent_implementation": "a", "typo": 1}},
        {"x": {"kind": "builtin", "agent_implementation": "a", "command": ["prog"]}},
        {"x": {"kind": "builtin", "agent_implementation": "a", "interface": "rest"}},
        {"x": {"kind": "builtin", "agent_implementation": "a", "timeout_s": 5}},
        {"x": {"kind": "command"}},
        {"x": {"kind": "command", "command": []}},
        {"x": {"kind": "command", "command": ["prog", ""]}},
        {"x": {"kind": "command", "command": ["prog", "{prompt}"]}},
        {"x": {"kind": "command", "command": ["prog"], "agent_implementation": "simple_agent"}},
        {"x": {"kind": "command", "command": ["prog"], "timeout_s": 0}},
    ],
)
def test_malformed_registries_are_config_errors(block):
    with pytest.raises(ConfigError):
        load_harnesses({"harnesses": block})


def test_unknown_harness_suggests_a_close_name():
    registry = load_harnesses(load_configs(REPO / "configs"))
    with pytest.raises(UserError, match="Did you mean 'simple_agent'"):
        get_harness(registry, "simple_agnt")


def test_a_harness_replaces_only_the_credited_agents_implementation():
    config = load_configs(REPO / "configs").data
    other = Harness(name="other", kind="builtin", agent_implementation="user_simulator")
    servers = ["humaneval_environment", "support_dialogue"]
    swapped, unchanged = with_harness(config, other, servers)
    assert list(swapped["humaneval_simple_agent"][AGENTS]) == ["user_simulator"]
    assert swapped["humaneval_simple_agent"][AGENTS]["user_simulator"]["max_steps"] == 4
    assert list(swapped["arith_simple_agent"][AGENTS]) == ["simple_agent"]  # not in the run
    assert list(config["humaneval_simple_agent"][AGENTS]) == ["simple_agent"]  # input untouched
    # a server with a simulated user and an assistant credits no single agent: left as is
    assert unchanged == ["support_dialogue"]
    assert list(swapped["support_bot"][AGENTS]) == ["simple_agent"]
    assert list(swapped["customer_sim"][AGENTS]) == ["user_simulator"]


@pytest.mark.parametrize(
    "fields",
    [
        {"mode": "openai"},
        {"mode": "openai", "base_url": "http://x/v1"},
        {"mode": "reference", "base_url": "http://x/v1"},
        {"mode": "openai", "base_url": "http://x/v1", "api_key_env": "sk-live-123"},
        {"mode": "scripted", "corrupt_fraction": 0.1},
        {"mode": "openai", "base_url": "http://x/v1", "api_key_env": "K", "latency_s": 1},
        {"mode": "reference", "corrupt_fraction": 2},
    ],
)
def test_inconsistent_upstreams_are_refused(fields):
    with pytest.raises(UserError):
        upstream_config(**fields)


def test_the_key_is_read_from_the_named_variable_only(monkeypatch):
    upstream = upstream_config(mode="openai", base_url="http://x/v1", api_key_env="GYM_TEST_KEY")
    assert "GYM_TEST_KEY" in upstream.model_dump_json()
    monkeypatch.setenv("GYM_TEST_KEY", "secret")
    assert upstream.api_key() == "secret"
    assert "secret" not in upstream.model_dump_json()
    monkeypatch.delenv("GYM_TEST_KEY")
    with pytest.raises(UserError, match="GYM_TEST_KEY is not set"):
        upstream.api_key()


def test_corruption_picks_an_exact_seeded_share():
    keys = [(task, 0) for task in range(164)]
    chosen = corrupted_keys(keys, 0.1, seed=7)
    assert len(chosen) == 16
    assert chosen == corrupted_keys(list(reversed(keys)), 0.1, seed=7)  # order-free
    assert chosen != corrupted_keys(keys, 0.1, seed=8)
    assert corrupted_keys(keys, 0.0, seed=7) == frozenset()
    streamed = corrupted_keys(iter(keys), 0.1, seed=7, total=len(keys))  # as a shard streams
    assert streamed == chosen


def test_corrupt_replaces_the_final_text_step():
    steps = [{"call": "calculate", "args": {"expression": "1"}}, {"text": "1"}, {"error": 429}]
    assert corrupt(steps) == [steps[0], {"text": WRONG_ANSWER}, steps[2]]
    assert corrupt([{"call": "x", "args": {}}]) == [
        {"call": "x", "args": {}},
        {"text": WRONG_ANSWER},
    ]


def test_config_dir_needs_a_config_file():
    """A registry built in code keeps ``{config_dir}``; only using that harness is refused."""
    registry = load_harnesses(
        {"harnesses": {"x": {"kind": "command", "command": ["{config_dir}/p"]}}}
    )
    with pytest.raises(UserError, match=r"uses \{config_dir\}, but the registry was not read"):
        with_harness({}, registry["x"], [])
