"""A ``legacy_agent`` relay serves tasksets (docs/rollouts.md).

The same arith rows run twice through the relay with the ``legacy_run`` harness: once as the
flat benchmark and once declared as a taskset (collated into materialized tasks). Real runs:
collation, plan, the gateway process on loopback and the bundled agent and verifier.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gym_assets.errors import UserError
from gym_assets.records.episode import EpisodeId, EpisodeRequest
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.episodes.legacy import flat_row_of_request, flat_row_of_task
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import Harness
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets.servers.responses_api_agents.simple_agent.app import SimpleAgent
from gym_assets_tests.rollouts.collection.conftest import REPO, Products

RELAYED = Harness(
    name="simple_agent", kind="builtin", agent_implementation="simple_agent",
    interface="legacy_run",
)  # fmt: skip
# The same rows declared a second time, as a taskset routed to arith's environment server.
TASKSET_DATASET = """
        - name: arith_tasks
          type: benchmark
          jsonl_fpath: arith_tasks.jsonl
          taskset: arith:tasks
          num_repeats: 1
          license: Apache-2.0
"""
# What differs by design between a flat row and the same task (docs/rollouts.md): collation
# stamps flat rows with their declaring instance and strips it from tasks; the flat row carries
# its environment-server stamp; the record names the task's taskset.
IDENTITY_KEYS = {"task_source", "_ng_environment_server", "_ng_task_id"}
# Fresh per call (ids, times) or per rollout directory.
VOLATILE_KEYS = {"response", "ng_trajectory", "ng_model_call_capture", "ng_agent_observations"}


def _configs_with(root: Path, benchmark: str, config: str, rows: str, route: str) -> Path:
    """The bundled configs plus ``benchmarks/<benchmark>/config.yaml`` (``config``), whose rows
    are a copy of arith's (as ``rows``), and the routes entry ``route``."""
    configs = root / "configs"
    shutil.copytree(REPO / "configs", configs, ignore=shutil.ignore_patterns("*_metrics.json"))
    folder = configs / "benchmarks" / benchmark
    folder.mkdir(exist_ok=True)
    shutil.copyfile(configs / "benchmarks" / "arith" / "arith.jsonl", folder / rows)
    (folder / "config.yaml").write_text(config)
    routes = configs / "routes.yaml"
    key = "environment_server_routes:\n"
    routes.write_text(routes.read_text().replace(key, f"{key}  {route}\n"))
    return configs


@pytest.fixture(scope="module")
def twin_products(tmp_path_factory: pytest.TempPathFactory) -> Products:
    """The bundled configs with arith's rows also declared as taskset ``arith:tasks``."""
    root = tmp_path_factory.mktemp("twin")
    config = (REPO / "configs" / "benchmarks" / "arith" / "config.yaml").read_text()
    anchor = "          license: Apache-2.0\n"
    config = config.replace(anchor, anchor + TASKSET_DATASET[1:], 1)
    route = "arith:tasks: arith_environment"
    return Products(root / "data", _configs_with(root, "arith", config, "arith_tasks.jsonl", route))


def _relayed_run(
    products: Products, name: str, out: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Records (in task order) and the rows the agent's ``run`` received (in task order)."""
    received: list[dict[str, Any]] = []
    original = SimpleAgent.run

    async def observed(self: SimpleAgent, row: Mapping[str, Any]) -> dict[str, Any]:
        received.append(dict(row))
        return await original(self, row)

    monkeypatch.setattr(SimpleAgent, "run", observed)
    products.plan(name)
    result = run_rollouts(
        products.catalog, name, RELAYED, out, upstream_config(mode="reference"), RunOptions(limit=3)
    )
    assert not list(read_jsonl(result.files.failures))
    records = sorted(read_jsonl(result.files.records), key=lambda r: r["_ng_task_index"])
    return records, sorted(received, key=lambda r: r["_ng_task_index"])


def _without(row: Mapping[str, Any], keys: set[str]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in keys}


def _first_model_request(record: Mapping[str, Any]) -> Any:
    """What the agent first asked the model (later calls carry fresh tool-call ids)."""
    return record["ng_trajectory"]["model_calls"][0]["request"]


def _final_answer(record: Mapping[str, Any]) -> Any:
    return record["response"]["output"][-1]["content"]


def test_a_flat_row_and_its_task_project_the_same_result(twin_products, tmp_path, monkeypatch):
    flat_records, flat_bodies = _relayed_run(twin_products, "arith", tmp_path / "f", monkeypatch)
    task_records, task_bodies = _relayed_run(
        twin_products, "arith_tasks", tmp_path / "t", monkeypatch
    )
    assert len(flat_records) == len(task_records) == 3
    assert [r["_ng_result_type"] for r in task_records] == ["legacy_agent"] * 3

    # The agent gets the same flat row: the task's input at top level, the same collector keys
    # (so the same episode identity and capture key), and agent_ref naming the relay's agent.
    for flat, task in zip(flat_bodies, task_bodies, strict=True):
        assert "task_id" in task and not isinstance(task["task_id"], Mapping)
        assert "task_input" not in task and task["agent_ref"] == {"name": "arith_simple_agent"}
        assert _without(task, IDENTITY_KEYS) == _without(flat, IDENTITY_KEYS)
        assert task.keys() == flat.keys() - {"task_source", "_ng_environment_server"}

    # The records agree on everything but the documented identity keys and fresh ids/times.
    for flat, task in zip(flat_records, task_records, strict=True):
        assert task["reward"] == flat["reward"] == 1.0
        assert task.keys() == flat.keys() - {"task_source"}
        ignored = IDENTITY_KEYS | VOLATILE_KEYS
        assert _without(task, ignored) == _without(flat, ignored)
        assert _first_model_request(task) == _first_model_request(flat)
        assert _final_answer(task) == _final_answer(flat)
        assert task["_ng_task_id"] == {"taskset": "arith:tasks", "task_id": flat["task_id"]}
        assert flat["_ng_task_id"]["task_id"] == flat["task_id"]


def _two_relayed_records(
    products: Products, name: str, harness: Harness, out: Path
) -> list[dict[str, Any]]:
    """The records of the first two tasks on the reference upstream, each scored 1.0 by a
    ``legacy_agent`` relay."""
    products.plan(name)
    upstream = upstream_config(mode="reference")
    result = run_rollouts(products.catalog, name, harness, out, upstream, RunOptions(limit=2))
    records = list(read_jsonl(result.files.records))
    assert [r["reward"] for r in records] == [1.0, 1.0]
    assert {r["_ng_result_type"] for r in records} == {"legacy_agent"}
    return records


def test_nested_task_data_reaches_the_verifier_through_the_relay(products, tmp_path):
    """units nests its answer under ``task_data``: the relayed agent splices it for the
    verifier, as ``single_agent_turn`` does, so the materialized tasks score."""
    records = _two_relayed_records(products, "units", RELAYED, tmp_path / "run")
    assert all(r["_ng_task_id"]["taskset"] == "units" for r in records)
    assert all("expected_answer" in r and "task_data" not in r for r in records)


RELAYED_CONFIG = """\
relayed_resources:
  resources_servers:
    arith: {entrypoint: app.py}
relayed_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: relayed_resources}
      model_server: {type: responses_api_models, name: policy_model}
      max_steps: 6
      datasets:
        - {name: relayed, type: benchmark, jsonl_fpath: relayed.jsonl, taskset: "relayed:test"}
relayed_environment_server:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: relayed_agent}
"""


def test_a_taskset_routed_to_a_declared_relay_runs_on_its_agents_resources(tmp_path):
    """The relay binds no resources server (as a generated one): its agent runs the episode
    on its own, and the reference upstream scripts it from the agent's resources server."""
    route = "relayed:test: relayed_environment_server"
    configs = _configs_with(tmp_path, "relayed", RELAYED_CONFIG, "relayed.jsonl", route)
    builtin = Harness(name="simple_agent", kind="builtin", agent_implementation="simple_agent")
    products = Products(tmp_path / "data", configs)
    records = _two_relayed_records(products, "relayed", builtin, tmp_path / "run")
    assert {r["_ng_task_id"]["taskset"] for r in records} == {"relayed:test"}
    assert all(r["agent_ref"] == {"name": "relayed_agent"} for r in records)


def test_a_server_with_no_resources_server_is_refused_before_any_rollout(tmp_path):
    """Without a resources server the reference model cannot script answers: the run says so
    once, naming the server, before it dispatches anything (not per rollout)."""
    unbound = RELAYED_CONFIG.replace(
        "      resources_server: {type: resources_servers, name: relayed_resources}\n", ""
    )
    route = "relayed:test: relayed_environment_server"
    configs = _configs_with(tmp_path, "relayed", unbound, "relayed.jsonl", route)
    builtin = Harness(name="simple_agent", kind="builtin", agent_implementation="simple_agent")
    products = Products(tmp_path / "data", configs)
    products.plan("relayed")
    out = tmp_path / "run"
    with pytest.raises(UserError, match="relayed_environment_server bind no resources server"):
        run_rollouts(
            products.catalog,
            "relayed",
            builtin,
            out,
            upstream_config(mode="reference"),
            RunOptions(),
        )
    assert not RunFiles(out).records.exists()


TASK_ROW = {
    "task_id": {"taskset": "arith:tasks", "task_id": "a1"},
    "task_input": {"task_id": "a1", "responses_create_params": {"input": "2+2"}, "x": 1},
    "_ng_task_index": 4,
    "_ng_rollout_index": 1,
    "_ng_attempt_index": 2,
    "_ng_environment_server": "arith_environment",
}


def test_a_task_row_is_rebuilt_as_the_flat_row_it_stands_for():
    assert flat_row_of_task(TASK_ROW, "agent") == {
        "task_id": "a1",
        "responses_create_params": {"input": "2+2"},
        "x": 1,
        "_ng_task_index": 4,
        "_ng_rollout_index": 1,
        "_ng_attempt_index": 2,
        "agent_ref": {"name": "agent"},
    }
    with pytest.raises(ValueError, match="task_input must be an object, got list"):
        flat_row_of_task({**TASK_ROW, "task_input": []}, "agent")


def test_an_episode_request_carries_its_episode_identity_into_the_flat_row():
    request = EpisodeRequest.model_validate(
        {
            "episode_id": {"rollout_id": "4-1", "attempt": 2},
            "task": {"task_id": TASK_ROW["task_id"], "task_input": TASK_ROW["task_input"]},
        }
    )
    row = flat_row_of_request(request, "agent")
    assert row == {
        **TASK_ROW["task_input"],
        "_ng_rollout_id": "4-1",
        "_ng_attempt_index": 2,
        "agent_ref": {"name": "agent"},
    }
    first = EpisodeRequest(episode_id=EpisodeId(rollout_id="4-1"), task=request.task)
    assert "_ng_attempt_index" not in flat_row_of_request(first, "agent")
