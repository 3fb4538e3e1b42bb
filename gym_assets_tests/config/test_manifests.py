"""Environment manifests (``manifest.yaml`` beside a benchmark's config): each rule, through
the catalogue that loads them, and ``gym-assets list benchmarks``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.errors import ConfigError
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.workspace import Workspace
from gym_assets_tests.config.conftest import WriteConfigs

# Two benchmark folders. qa: a flat benchmark and a taskset, both resolving to qa_agent.
# dialogue: a taskset routed to a server fronting two agents, plus a flat dataset declared on
# another agent (helper_agent).
QA = """\
qa_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      datasets:
        - {name: qa, type: benchmark, jsonl_fpath: qa.jsonl}
        - {name: qa_tasks, type: train, jsonl_fpath: qa.jsonl, taskset: "qa:train"}
qa_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: qa_resources}
qa_environment:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: qa_agent}
      resources_server: {type: resources_servers, name: qa_resources}
"""
DIALOGUE = """\
dialogue_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      datasets:
        - {name: dialogue, type: benchmark, jsonl_fpath: d.jsonl, taskset: "dialogue:test"}
customer:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
assistant:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: dialogue_resources}
      datasets:
        - {name: assistant_drills, type: benchmark, jsonl_fpath: drills.jsonl}
dialogue_environment:
  environment_servers:
    conversation:
      entrypoint: app.py
      user_agent: {type: responses_api_agents, name: customer}
      assistant_agent: {type: responses_api_agents, name: assistant}
      resources_server: {type: resources_servers, name: dialogue_resources}
assistant_environment:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: assistant}
      resources_server: {type: resources_servers, name: dialogue_resources}
"""
ROUTES = """\
environment_server_routes:
  "qa:train": qa_environment
  "dialogue:test": dialogue_environment
"""
QA_MANIFEST = """\
name: qa
kind: benchmark
version: 1.2.0
agent_server: simple_agent
datasets:
  - {name: qa, type: benchmark}
  - {name: qa_tasks, taskset: "qa:train", num_repeats: 1}
"""


def _catalog(write_configs: WriteConfigs, tmp_path: Path, **files: str) -> Catalog:
    """The two folders and the routes, plus ``files`` (relative path -> text)."""
    tree = {
        "routes.yaml": ROUTES,
        "benchmarks/qa/config.yaml": QA,
        "benchmarks/dialogue/config.yaml": DIALOGUE,
        **{path.replace("__", "/").replace("_yaml", ".yaml"): text for path, text in files.items()},
    }
    return load_catalog(Workspace(write_configs(tree), tmp_path / "data"))


def _refusal(write_configs: WriteConfigs, tmp_path: Path, **files: str) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        _catalog(write_configs, tmp_path, **files)
    return caught.value


def test_a_manifest_describes_its_folders_datasets(write_configs, tmp_path):
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST)
    manifest = catalog.get("qa").manifest
    assert manifest is not None and manifest.status == "maintained"
    assert manifest.datasets == ("qa", "qa_tasks") and manifest.agent == "qa_agent"
    assert manifest.path == catalog.loaded.root / "benchmarks" / "qa" / "manifest.yaml"
    assert manifest.fields.version == "1.2.0"
    assert catalog.get("dialogue").manifest is None
    # The manifest is not a config: its keys are no server instances.
    assert "name" not in catalog.loaded.data and "kind" not in catalog.loaded.data


def test_without_datasets_a_manifest_describes_every_dataset_of_its_config(write_configs, tmp_path):
    text = "name: qa\nkind: benchmark\nexperimental: true\n"
    manifest = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text).get("qa")
    assert manifest.manifest is not None and manifest.manifest.status == "experimental"
    assert manifest.manifest.datasets == ("qa", "qa_tasks")


def test_the_name_must_equal_the_folder_path(write_configs, tmp_path):
    error = _refusal(
        write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST.replace("qa\n", "q\n", 1)
    )
    assert "manifest name 'q' must equal its folder path 'qa'" in error.message
    assert error.path is not None and error.path.endswith("benchmarks/qa/manifest.yaml")
    assert error.line == 1


def test_a_nested_folder_is_named_by_its_whole_path(write_configs, tmp_path):
    text = "name: qa/hard\nkind: benchmark\nconfig_path: ../config.yaml\n"
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__hard__manifest_yaml=text)
    manifest = catalog.get("qa").manifest
    assert manifest is not None and manifest.name == "qa/hard"
    assert manifest.config_path.name == "config.yaml"


def test_the_kind_must_be_benchmark(write_configs, tmp_path):
    text = QA_MANIFEST.replace("kind: benchmark", "kind: environment")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "manifest kind 'environment' must be 'benchmark'" in error.message
    assert error.line == 2


def test_a_manifest_needs_the_config_it_describes(write_configs, tmp_path):
    error = _refusal(
        write_configs, tmp_path, benchmarks__empty__manifest_yaml="name: empty\nkind: benchmark\n"
    )
    assert "describes config.yaml, which is not a config of this configs tree" in error.message


def test_every_manifest_dataset_must_be_declared_by_the_config(write_configs, tmp_path):
    text = QA_MANIFEST + "  - {name: qa_extra}\n"
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "manifest dataset 'qa_extra' is not declared by" in error.message
    assert "it declares 'qa', 'qa_tasks'" in error.message
    assert error.line == 8


def test_repeated_fields_must_equal_the_config(write_configs, tmp_path):
    text = QA_MANIFEST.replace("num_repeats: 1", "num_repeats: 3")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "'qa_tasks' says num_repeats: 3, but its config says 1" in error.message
    assert error.line == 7


def test_datasets_that_resolve_to_different_agents_are_refused(write_configs, tmp_path):
    """``dialogue_extra`` is declared on the resources server (-> its one bound agent would be
    ambiguous, so it pins ``customer``); ``assistant_drills`` is declared on ``assistant``."""
    config = DIALOGUE.replace(
        'taskset: "dialogue:test"}',
        'taskset: "dialogue:test"}\n'
        "        - {name: dialogue_extra, type: train, jsonl_fpath: e.jsonl, agent: customer}",
    )
    text = "name: dialogue\nkind: benchmark\ndatasets:\n"
    text += "  - {name: dialogue_extra}\n  - {name: assistant_drills}\n"
    with pytest.raises(ConfigError) as caught:
        load_catalog(
            Workspace(
                write_configs(
                    {
                        "routes.yaml": ROUTES,
                        "benchmarks/qa/config.yaml": QA,
                        "benchmarks/dialogue/config.yaml": config,
                        "benchmarks/dialogue/manifest.yaml": text,
                    }
                ),
                tmp_path / "data",
            )
        )
    message = caught.value.message
    assert "describes datasets that resolve to different agents" in message
    assert "'dialogue_extra' -> 'customer'; 'assistant_drills' -> 'assistant'" in message
    assert caught.value.line == 3


def test_a_manifest_cannot_describe_a_multi_agent_taskset(write_configs, tmp_path):
    text = "name: dialogue\nkind: benchmark\ndatasets:\n  - {name: dialogue}\n"
    error = _refusal(write_configs, tmp_path, benchmarks__dialogue__manifest_yaml=text)
    assert error.message.startswith("a manifest cannot describe a multi-agent taskset")
    assert "taskset 'dialogue:test'" in error.message
    assert "environment server 'dialogue_environment'" in error.message
    assert "('customer', 'assistant')" in error.message
    assert error.line == 4
    # Without a dataset list the manifest describes the taskset too, and is refused alike.
    error = _refusal(
        write_configs,
        tmp_path,
        benchmarks__dialogue__manifest_yaml="name: dialogue\nkind: benchmark\n",
    )
    assert error.message.startswith("a manifest cannot describe a multi-agent taskset")


def test_a_manifest_of_one_agents_datasets_beside_a_multi_agent_taskset_is_fine(
    write_configs, tmp_path
):
    text = "name: dialogue\nkind: benchmark\ndatasets:\n  - {name: assistant_drills}\n"
    catalog = _catalog(write_configs, tmp_path, benchmarks__dialogue__manifest_yaml=text)
    drills = catalog.get("assistant_drills").manifest
    assert drills is not None and drills.agent == "assistant"
    assert catalog.get("dialogue").manifest is None


def test_agent_server_must_name_the_resolved_agent(write_configs, tmp_path):
    text = QA_MANIFEST.replace("agent_server: simple_agent", "agent_server: hermes_agent")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "agent_server 'hermes_agent' is not the agent its datasets resolve to" in error.message
    assert "'qa_agent' (simple_agent)" in error.message
    for good in ("simple_agent", "qa_agent"):
        text = QA_MANIFEST.replace("agent_server: simple_agent", f"agent_server: {good}")
        assert _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)


def test_a_benchmark_manifest_describes_a_benchmark_dataset(write_configs, tmp_path):
    text = "name: qa\nkind: benchmark\ndatasets:\n  - {name: qa_tasks}\n"
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "describes no dataset of type benchmark" in error.message


def test_unknown_fields_and_bad_shapes_are_refused(write_configs, tmp_path):
    error = _refusal(
        write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST + "colour: red\n"
    )
    assert "manifest field 'colour': Extra inputs are not permitted" in error.message
    assert "known fields: name, kind" in error.message and error.line == 8
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml="- name: qa\n")
    assert "a manifest is a mapping of fields" in error.message


def test_a_dataset_is_described_by_one_manifest(write_configs, tmp_path):
    error = _refusal(
        write_configs,
        tmp_path,
        benchmarks__qa__manifest_yaml=QA_MANIFEST,
        benchmarks__qa__copy__manifest_yaml="name: qa/copy\nkind: benchmark\n"
        "config_path: ../config.yaml\n",
    )
    assert "dataset 'qa' is described by two manifests" in error.message


def test_list_benchmarks_shows_status_and_manifest(write_configs, tmp_path, capsys):
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST)
    argv = ["list", "benchmarks", "--json", "--configs", str(catalog.loaded.root)]
    assert main([*argv, "--data-root", str(tmp_path / "data")]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["qa"]["status"] == "maintained" and rows["qa"]["version"] == "1.2.0"
    assert rows["qa"]["manifest"] == str(catalog.loaded.root / "benchmarks/qa/manifest.yaml")
    assert rows["dialogue"]["status"] == "no-manifest" and rows["dialogue"]["manifest"] is None


def test_list_benchmarks_refuses_a_bad_manifest_with_one_error_line(
    write_configs, tmp_path, capsys
):
    text = "name: dialogue\nkind: benchmark\n"
    root = write_configs(
        {
            "routes.yaml": ROUTES,
            "benchmarks/qa/config.yaml": QA,
            "benchmarks/dialogue/config.yaml": DIALOGUE,
            "benchmarks/dialogue/manifest.yaml": text,
        }
    )
    argv = ["list", "benchmarks", "--configs", str(root), "--data-root", str(tmp_path / "d")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err
    assert "a manifest cannot describe a multi-agent taskset" in err
