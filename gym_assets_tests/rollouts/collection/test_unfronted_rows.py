"""Flat rows routed to an environment server that does not front their agent are refused before
dispatch, for multi-agent servers as for single-agent ones, naming the row's file and line and
the agents the server does front."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from gym_assets.cli import main
from gym_assets.config.errors import AmbiguousEnvironmentServerError
from gym_assets.errors import ConfigError
from gym_assets.rollouts.collection.inputs import materialize_inputs
from gym_assets.tasks import checks
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.pipeline import collate_benchmark, collated_path
from gym_assets.workspace import Workspace
from gym_assets_tests.tasks.multi_agent_tree import arith_row, write_jsonl, write_tree

# A flat benchmark declared on the assistant agent of the two-agent server.
BOT = "support_bot:\n  responses_api_agents:\n    simple_agent:\n"
CHAT = BOT + "      datasets: [{name: chat, type: benchmark, jsonl_fpath: chat.jsonl}]\n"
LEGACY = "environment_routing_mode: legacy\nenvironment_server_name: support_dialogue\n"


def _catalog(tmp_path: Path, extra: str = "", *, chat: bool = False) -> Catalog:
    root = write_tree(tmp_path / "configs", extra=extra)
    if chat:
        config = root / "support" / "config.yaml"
        config.write_text(config.read_text("utf-8").replace(BOT, CHAT), "utf-8")
    write_jsonl(root / "support" / "chat.jsonl", [arith_row("c-1", 1, 2)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_catalog(Workspace(root, tmp_path / "data"))


def _collated(catalog: Catalog, name: str, edit: dict[str, Any] | None = None) -> Path:
    """The benchmark collated for real, plus (with ``edit``) a copy of its last row so edited."""
    out = catalog.workspace.taskset_dir(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collate_benchmark(catalog, name, out)
    path = collated_path(out, catalog.get(name))
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    if edit is not None:
        rows.append({**rows[-1], **edit})
    taskset = out.parent / f"{name}-edited.jsonl"
    return write_jsonl(taskset, rows)


def _inputs(catalog: Catalog, name: str, taskset: Path):
    return materialize_inputs(taskset, catalog.get(name), catalog.loaded.data)


def test_rows_of_the_fronted_agent_run_and_are_stamped_with_it(tmp_path):
    catalog = _catalog(tmp_path, chat=True)
    chat = catalog.get("chat")
    assert chat.environment_server == "support_dialogue"
    (item,) = _inputs(catalog, "chat", _collated(catalog, "chat"))
    assert item.row["_ng_environment_server"] == "support_dialogue"
    assert item.row["task_source"] == "support_bot"
    assert item.row["agent_ref"] == {"name": "support_bot"}


def test_a_row_naming_an_agent_of_the_two_agent_server_is_refused_by_a_single_agent_one(tmp_path):
    catalog = _catalog(tmp_path)
    taskset = _collated(catalog, "arith", {"agent_ref": {"name": "customer_sim"}})
    with pytest.raises(ConfigError) as caught:
        _inputs(catalog, "arith", taskset)
    assert caught.value.message.startswith(
        "Row agent_ref 'customer_sim' is not an agent of environment server "
        "'arith_environment': 'arith_agent'."
    )
    assert caught.value.path == str(taskset) and caught.value.line == 3


def test_a_row_of_another_dataset_sent_to_the_two_agent_server_is_refused(tmp_path):
    catalog = _catalog(tmp_path, chat=True)
    taskset = _collated(catalog, "chat", {"task_source": "arith_resources"})
    with pytest.raises(ConfigError) as caught:
        _inputs(catalog, "chat", taskset)
    message = caught.value.message
    assert message.startswith(
        "Row task_source 'arith_resources' resolves to agent 'arith_agent', which is not an "
        "agent of environment server 'support_dialogue': 'customer_sim', 'support_bot'"
    )
    assert (caught.value.path, caught.value.line) == (str(taskset), 2)


def test_an_agent_ref_naming_an_agent_of_the_multi_agent_server_passes(tmp_path):
    catalog = _catalog(tmp_path, chat=True)
    taskset = _collated(catalog, "chat", {"agent_ref": {"name": "support_bot"}})
    first, second = _inputs(catalog, "chat", taskset)
    assert second.row["agent_ref"] == {"name": "support_bot"}
    assert {first.row["_ng_environment_server"], second.row["_ng_environment_server"]} == {
        "support_dialogue"
    }


def test_legacy_routing_to_a_multi_agent_server_refuses_rows_of_an_agent_it_does_not_front(
    tmp_path,
):
    catalog = _catalog(tmp_path, LEGACY)
    taskset = _collated(catalog, "arith")
    with pytest.raises(ConfigError) as caught:
        _inputs(catalog, "arith", taskset)
    assert "'arith_agent', which is not an agent of environment server 'support_dialogue': " in (
        caught.value.message
    )
    assert "'customer_sim', 'support_bot'" in caught.value.message
    assert (caught.value.path, caught.value.line) == (str(taskset), 1)
    # The route check of the benchmark says it too, at the config line that routes the rows.
    outcome = checks.route_resolves(catalog, catalog.get("arith"))
    assert not outcome.passed
    assert "is not an agent of environment server 'support_dialogue'" in outcome.description
    assert "config.yaml:" in outcome.description


SECOND_SERVER = """
arith_second:
  environment_servers:
    single_agent_turn_legacy:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: arith_agent}
      resources_server: {type: resources_servers, name: arith_resources}
"""


def test_rows_of_an_agent_fronted_by_two_servers_are_refused_as_ambiguous(tmp_path):
    catalog = _catalog(tmp_path, SECOND_SERVER)
    arith = catalog.get("arith")
    assert arith.environment_server is None
    assert arith.fronting.candidates == ("arith_environment", "arith_second")
    with pytest.raises(AmbiguousEnvironmentServerError) as caught:
        _inputs(catalog, "arith", _collated(catalog, "arith"))
    assert caught.value.message.startswith(
        "Agent 'arith_agent' is fronted by several environment servers: "
        "[arith_environment, arith_second]. Rows that route by agent cannot choose"
    )


def test_list_benchmarks_names_the_servers_an_ambiguous_agent_could_run_on(tmp_path, capsys):
    catalog = _catalog(tmp_path, SECOND_SERVER)
    argv = ["list", "benchmarks", "--configs", str(catalog.loaded.root)]
    argv += ["--data-root", str(tmp_path / "data")]
    assert main([*argv, "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["arith"]["environment_server"] is None
    assert rows["arith"]["environment_servers"] == ["arith_environment", "arith_second"]
    assert main(argv) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("arith ")]
    assert "ambiguous: arith_environment,arith_second" in line
