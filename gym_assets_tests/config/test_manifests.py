"""Environment manifests (``manifest.yaml`` beside a benchmark's config): each rule, through
the catalogue that loads them, and ``gym-assets list benchmarks``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.config.manifests import load_manifests
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
# The facts every manifest carries (NeMo Gym's required fields), then its own lines.
FACTS = """\
version: 1.2.0
integration_profile: custom-gym-verifier
domain: knowledge
description: Questions answered by exact match.
modality: text
authors: [gym_assets]
reward: {range: [0, 1], higher_is_better: true}
resources_server: exact_match
agent_server: simple_agent
model_server: policy_model
canonical_split: qa
standard_prompt_config: none
"""


def manifest(name: str, datasets: str, kind: str = "benchmark", extra: str = "") -> str:
    """A manifest of ``name`` listing ``datasets`` (YAML list items, one a line)."""
    return f"name: {name}\nkind: {kind}\n{FACTS}{extra}datasets:\n{datasets}"


QA_DATASETS = """\
  - {name: qa, type: benchmark, jsonl_fpath: qa.jsonl}
  - {name: qa_tasks, type: train, jsonl_fpath: qa.jsonl, taskset: "qa:train", num_repeats: 1}
"""
QA_MANIFEST = manifest("qa", QA_DATASETS)
QA_LINE = {"name": 1, "kind": 2, "datasets": 15}  # where QA_MANIFEST writes each key
DIALOGUE_DATASET = (
    '  - {name: dialogue, type: benchmark, jsonl_fpath: d.jsonl, taskset: "dialogue:test"}\n'
)
DRILLS_DATASET = "  - {name: assistant_drills, type: benchmark, jsonl_fpath: drills.jsonl}\n"


def _catalog(write_configs: WriteConfigs, tmp_path: Path, **files: str) -> Catalog:
    """The two folders and the routes, plus ``files`` (relative path -> text)."""
    tree = {
        "routes.yaml": ROUTES,
        "benchmarks/qa/config.yaml": QA,
        "benchmarks/dialogue/config.yaml": DIALOGUE,
        **{path.replace("__", "/").replace("_yaml", ".yaml"): text for path, text in files.items()},
    }
    return load_catalog(Workspace(write_configs(tree), tmp_path / "data"))


def _refusal(
    write_configs: WriteConfigs, tmp_path: Path, benchmark: str = "qa", **files: str
) -> ConfigError:
    """Why ``benchmark`` is refused: the catalogue loads, getting the benchmark raises."""
    catalog = _catalog(write_configs, tmp_path, **files)
    with pytest.raises(ConfigError) as caught:
        catalog.get(benchmark)
    assert caught.value in catalog.manifest_problems
    return caught.value


def test_a_manifest_describes_its_folders_datasets(write_configs, tmp_path):
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST)
    described = catalog.get("qa").manifest
    assert described is not None and described.status == "maintained"
    assert described.datasets == ("qa", "qa_tasks") and described.agent == "qa_agent"
    assert described.path == catalog.loaded.root / "benchmarks" / "qa" / "manifest.yaml"
    assert described.fields.version == "1.2.0"
    assert catalog.get("dialogue").manifest is None
    assert catalog.manifest_problems == ()
    # The manifest is not a config: its keys are no server instances.
    assert "name" not in catalog.loaded.data and "kind" not in catalog.loaded.data


def test_experimental_is_our_field_for_the_listing_status(write_configs, tmp_path):
    text = manifest("qa", QA_DATASETS, extra="experimental: true\n")
    described = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text).get("qa")
    assert described.manifest is not None and described.manifest.status == "experimental"


def test_the_name_must_equal_the_folder_path(write_configs, tmp_path):
    error = _refusal(
        write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST.replace("qa\n", "q\n", 1)
    )
    assert error.message.startswith("Manifest '")
    assert "declares name 'q', but its catalog path requires 'qa'" in error.message
    assert error.path is not None and error.path.endswith("benchmarks/qa/manifest.yaml")
    assert error.line == QA_LINE["name"]


def test_a_nested_folder_is_named_by_its_whole_path(write_configs, tmp_path):
    text = manifest("qa/hard", QA_DATASETS, extra="config_path: ../config.yaml\n")
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__hard__manifest_yaml=text)
    described = catalog.get("qa").manifest
    assert described is not None and described.name == "qa/hard"
    assert described.config_path.name == "config.yaml"


def test_the_kind_must_be_the_kind_of_its_catalogue_root(write_configs, tmp_path):
    text = QA_MANIFEST.replace("kind: benchmark", "kind: environment")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "declares kind 'environment', but its catalog path requires 'benchmark'" in error.message
    assert error.line == QA_LINE["kind"]


def test_a_manifest_needs_the_config_it_describes(write_configs, tmp_path):
    catalog = _catalog(
        write_configs, tmp_path, benchmarks__empty__manifest_yaml=manifest("empty", QA_DATASETS)
    )
    (problem,) = catalog.manifest_problems
    assert "requires a sibling config.yaml: it describes config.yaml, which is not a config" in (
        problem.message
    )
    assert catalog.get("qa").manifest is None  # it touches no benchmark: only listed


def test_every_manifest_dataset_must_be_declared_by_the_config(write_configs, tmp_path):
    text = QA_MANIFEST + "  - {name: qa_extra, type: train, jsonl_fpath: x.jsonl}\n"
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "manifest dataset 'qa_extra' is not declared by" in error.message
    assert "it declares 'qa', 'qa_tasks'" in error.message
    assert error.line == QA_LINE["datasets"] + 3


def test_repeated_fields_must_equal_the_config(write_configs, tmp_path):
    text = QA_MANIFEST.replace("num_repeats: 1", "num_repeats: 3")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert "'qa_tasks' says num_repeats: 3, but its config says 1" in error.message
    assert error.line == QA_LINE["datasets"] + 2


def test_a_prepared_benchmark_dataset_must_name_its_prepare_script(write_configs, tmp_path):
    """NeMo Gym's rule, checked against the config: bundled rows (ours) need no script."""
    config = QA.replace("jsonl_fpath: qa.jsonl}", "jsonl_fpath: qa.jsonl, prepare_script: p.py}", 1)
    error = _refusal(
        write_configs,
        tmp_path,
        benchmarks__qa__config_yaml=config,
        benchmarks__qa__manifest_yaml=QA_MANIFEST,
    )
    assert "datasets.0: a benchmark dataset requires: prepare_script" in error.message
    fixed = QA_MANIFEST.replace(
        "jsonl_fpath: qa.jsonl}", "jsonl_fpath: qa.jsonl, prepare_script: p.py}"
    )
    catalog = _catalog(
        write_configs,
        tmp_path,
        benchmarks__qa__config_yaml=config,
        benchmarks__qa__manifest_yaml=fixed,
    )
    assert catalog.get("qa").manifest is not None


def test_datasets_that_resolve_to_different_agents_are_refused(write_configs, tmp_path):
    """``dialogue_extra`` is declared on the resources server (-> its one bound agent would be
    ambiguous, so it pins ``customer``); ``assistant_drills`` is declared on ``assistant``."""
    config = DIALOGUE.replace(
        'taskset: "dialogue:test"}',
        'taskset: "dialogue:test"}\n'
        "        - {name: dialogue_extra, type: train, jsonl_fpath: e.jsonl, agent: customer}",
    )
    text = manifest(
        "dialogue",
        "  - {name: dialogue_extra, type: train, jsonl_fpath: e.jsonl}\n" + DRILLS_DATASET,
    )
    error = _refusal(
        write_configs,
        tmp_path,
        "assistant_drills",
        benchmarks__dialogue__config_yaml=config,
        benchmarks__dialogue__manifest_yaml=text,
    )
    assert "describes datasets that resolve to different agents" in error.message
    assert "'dialogue_extra' -> 'customer'; 'assistant_drills' -> 'assistant'" in error.message
    assert error.line == QA_LINE["datasets"]


def test_a_manifest_cannot_describe_a_multi_agent_taskset(write_configs, tmp_path):
    text = manifest("dialogue", DIALOGUE_DATASET)
    error = _refusal(write_configs, tmp_path, "dialogue", benchmarks__dialogue__manifest_yaml=text)
    assert error.message.startswith("a manifest cannot describe a multi-agent taskset")
    assert "taskset 'dialogue:test'" in error.message
    assert "environment server 'dialogue_environment'" in error.message
    assert "('customer', 'assistant')" in error.message
    assert error.line == QA_LINE["datasets"] + 1


def test_a_manifest_of_one_agents_datasets_beside_a_multi_agent_taskset_is_fine(
    write_configs, tmp_path
):
    text = manifest("dialogue", DRILLS_DATASET)
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


def test_resources_server_must_name_the_agents_resources_server(write_configs, tmp_path):
    """Cross-checked like agent_server (NeMo Gym mirrors the agent's resources binding)."""
    text = QA_MANIFEST.replace("resources_server: exact_match", "resources_server: humaneval")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert error.message == (
        "manifest resources_server 'humaneval' is not the resources server of agent 'qa_agent', "
        "'qa_resources' (exact_match); set `resources_server: exact_match`."
    )
    assert error.path is not None and error.path.endswith("benchmarks/qa/manifest.yaml")
    assert error.line == text.splitlines().index("resources_server: humaneval") + 1
    for good in ("exact_match", "qa_resources"):
        text = QA_MANIFEST.replace("resources_server: exact_match", f"resources_server: {good}")
        assert _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text).get("qa")


def test_a_refused_nested_manifest_stops_the_config_it_names(write_configs, tmp_path):
    """Its ``config_path`` leads out of its folder; the refusal follows it: an error for the
    benchmark it describes, naming the manifest and the field, not only a warning."""
    text = manifest("qa/hard", QA_DATASETS, extra="config_path: ../config.yaml\n")
    text = text.replace("agent_server: simple_agent", "agent_server: hermes_agent")
    error = _refusal(write_configs, tmp_path, benchmarks__qa__hard__manifest_yaml=text)
    assert error.path is not None and error.path.endswith("benchmarks/qa/hard/manifest.yaml")
    assert error.line == text.splitlines().index("agent_server: hermes_agent") + 1
    assert "agent_server 'hermes_agent' is not the agent" in error.message
    # a manifest too broken to parse names no config: it stops its own folder only
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__hard__manifest_yaml="- [\n")
    assert catalog.get("qa").manifest is None and len(catalog.manifest_problems) == 1


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (
            ("datasets:\n", "colour: red\ndatasets:\n"),
            "colour",
            "Extra inputs are not permitted (known fields: name,",
        ),
        (("version: 1.2.0\n", ""), "version", "Field required"),
        (("domain: knowledge", "domain: cooking"), "domain", "Input should be 'math', 'coding'"),
        (("model_server: policy_model\n", ""), "manifest", "manifest requires: model_server"),
        (("canonical_split: qa\n", ""), "manifest", "manifest requires: canonical_split"),
        (("authors: [gym_assets]", "authors: [a, a]"), "authors", "authors must be unique"),
        (("range: [0, 1]", "range: [1, 0]"), "reward", "reward.range must be ordered with lower"),
        (
            ("modality: text\n", "modality: text\nlicensing: not a licence\n"),
            "licensing",
            "licensing must be an SPDX license expression",
        ),
        (
            ("model_server: policy_model\n", "model_server: m\nrollout_driver: pkg.run:collect\n"),
            "manifest",
            "rollout_driver is only valid for the external-rollout-driver profile",
        ),
        (("{name: qa_tasks,", "{name: qa,"), "manifest", "dataset names must be unique"),
        (("higher_is_better: true", "higher_is_better: yes please"), "reward.higher_is_better", ""),
    ],
)
def test_the_reference_schema_refuses_with_its_messages(
    write_configs, tmp_path, edit, field, message
):
    old, new = edit
    assert old in QA_MANIFEST
    text = QA_MANIFEST.replace(old, new, 1)
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml=text)
    assert error.message.startswith(f"Invalid environment manifest '{error.path}': {field}: ")
    assert message in error.message


def test_a_bad_shape_is_refused(write_configs, tmp_path):
    error = _refusal(write_configs, tmp_path, benchmarks__qa__manifest_yaml="- name: qa\n")
    assert "expected a YAML mapping. A manifest is a mapping of fields" in error.message


def test_a_dataset_is_described_by_one_manifest(write_configs, tmp_path):
    error = _refusal(
        write_configs,
        tmp_path,
        benchmarks__qa__manifest_yaml=QA_MANIFEST,
        benchmarks__qa__copy__manifest_yaml=manifest(
            "qa/copy", QA_DATASETS, extra="config_path: ../config.yaml\n"
        ),
    )
    assert "dataset 'qa' is described by two manifests" in error.message


def test_list_benchmarks_shows_status_and_manifest(write_configs, tmp_path, capsys):
    catalog = _catalog(write_configs, tmp_path, benchmarks__qa__manifest_yaml=QA_MANIFEST)
    argv = ["list", "benchmarks", "--json", "--configs", str(catalog.loaded.root)]
    assert main([*argv, "--data-root", str(tmp_path / "data")]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["qa"]["status"] == "maintained" and rows["qa"]["version"] == "1.2.0"
    assert rows["qa"]["manifest"] == str(catalog.loaded.root / "benchmarks/qa/manifest.yaml")
    assert rows["qa"]["lifecycle"] == "active"
    assert rows["dialogue"]["status"] == "no-manifest" and rows["dialogue"]["manifest"] is None


def test_a_bad_manifest_blocks_only_its_own_folder(write_configs, tmp_path, capsys):
    """``list benchmarks`` warns and lists it as invalid-manifest; commands on the other folder
    run; a command on one of its benchmarks is refused, naming the file and the field."""
    root = write_configs(
        {
            "routes.yaml": ROUTES,
            "benchmarks/qa/config.yaml": QA,
            "benchmarks/dialogue/config.yaml": DIALOGUE,
            "benchmarks/dialogue/manifest.yaml": manifest("dialogue", DIALOGUE_DATASET),
            "benchmarks/qa/qa.jsonl": '{"task_id": "q1", "question": "2+2?"}\n',
        }
    )
    flags = ["--configs", str(root), "--data-root", str(tmp_path / "d")]
    assert main(["list", "benchmarks", "--json", *flags]) == 0
    captured = capsys.readouterr()
    rows = {row["name"]: row for row in json.loads(captured.out)}
    assert rows["dialogue"]["status"] == rows["assistant_drills"]["status"] == "invalid-manifest"
    assert rows["qa"]["status"] == "no-manifest"
    assert captured.err.count("warning: ") == 1
    assert (
        "dialogue/manifest.yaml:16: a manifest cannot describe a multi-agent taskset"
        in captured.err
    )
    collate = ["collate", "--out", str(tmp_path / "out"), "--validation", "off", *flags]
    assert main([*collate, "--benchmark", "qa"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main([*collate, "--benchmark", "dialogue"]) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == 1 and "Traceback" not in err
    assert "dialogue/manifest.yaml:16: a manifest cannot describe a multi-agent taskset" in err


NEMO = Path(__file__).parent / "nemo_manifests"
# A config for nemo_manifests/environment_manifest.yaml: a manifest in the environment form NeMo
# Gym ships (its fields and layout, our own values).
EXAMPLE_CONFIG = """\
example_resources_server:
  resources_servers:
    exact_match:
      entrypoint: app.py
      datasets:
        - {name: validation, type: validation, jsonl_fpath: data/validation.jsonl}
example_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: example_resources_server}
"""


def test_a_manifest_as_nemo_gym_ships_one_loads_under_environments(write_configs, tmp_path):
    shipped = (NEMO / "environment_manifest.yaml").read_text("utf-8")
    catalog = _catalog(
        write_configs,
        tmp_path,
        environments__example_environment__config_yaml=EXAMPLE_CONFIG,
        environments__example_environment__manifest_yaml=shipped,
    )
    assert catalog.manifest_problems == ()
    described = load_manifests(catalog.loaded).by_dataset["validation"]
    assert described.fields.kind == "environment" and described.agent == "example_agent"
    assert described.fields.reward.range == (0.0, 1.0)
    assert described.fields.determinism == "seeded" and described.fields.licensing == "Apache-2.0"


def test_a_nemo_gym_benchmark_manifest_loads(write_configs, tmp_path):
    """The benchmark form of NeMo Gym's manifest: canonical split, standard prompt, a prepared
    benchmark dataset with its prepare script and prompt."""
    config = QA.replace(
        "jsonl_fpath: qa.jsonl}",
        "jsonl_fpath: data/qa.jsonl, prepare_script: prepare.py, "
        "prompt_config: prompts/standard.yaml}",
        1,
    )
    text = (NEMO / "benchmark_manifest.yaml").read_text("utf-8")
    catalog = _catalog(
        write_configs,
        tmp_path,
        benchmarks__qa__config_yaml=config,
        benchmarks__qa__manifest_yaml=text,
    )
    described = catalog.get("qa").manifest
    assert described is not None and described.fields.canonical_split == "validation"
    assert described.fields.adopted_from is not None
    assert str(described.fields.adopted_from.reconciled) == "2026-03-01"
