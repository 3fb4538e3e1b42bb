"""Every example under docs/examples/ behaves as docs/examples/README.md says."""

import json
import shutil
import warnings
from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.config.migrate import add_environment_servers
from gym_assets.config.routing import resolve_dataset_agent
from gym_assets.errors import UserError
from gym_assets.plans.build import refuse_prompt_template
from gym_assets.tasks.catalog import load_catalog
from gym_assets.tasks.pipeline import collate_benchmark
from gym_assets.tasks.row_routing import environment_server_for_row
from gym_assets.workspace import Workspace

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def test_unfronted_agent_gets_a_relay_and_one_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_configs(EXAMPLES / "unfronted_agent")
    relay = loaded.data["mcqa_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay["agent_server"]["name"] == "mcqa_simple_agent"
    deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1 and "mcqa_simple_agent" in str(deprecations[0].message)

    root = _copy("unfronted_agent", tmp_path)
    before = (root / "config.yaml").read_text()
    assert add_environment_servers([root], check=False, configs_root=root) == 0
    after = (root / "config.yaml").read_text()
    assert after.startswith(before) and "mcqa_environment_server:" in after[len(before) :]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_configs(root)
    assert not [w for w in caught if issubclass(w.category, DeprecationWarning)]


def test_prompt_template_renders_messages_before_materialization(tmp_path):
    root = _copy("prompt_template", tmp_path)
    catalog = load_catalog(Workspace(root, tmp_path / "data"))
    report = collate_benchmark(catalog, "trivia", tmp_path / "out", validation="warn")
    assert "question (2 rows)" in report.validation_summary  # template fields are not task data
    first = json.loads((tmp_path / "out" / "benchmark.jsonl").read_text().splitlines()[0])
    assert first["task_id"] == {"taskset": "trivia", "task_id": "t1"}
    assert first["task_input"]["responses_create_params"]["input"] == [
        {"role": "system", "content": "Answer with one word."},
        {"role": "user", "content": "Q: What colour is the sky on a clear day?"},
    ]
    with pytest.raises(UserError, match="prompt templates"):
        refuse_prompt_template("trivia", catalog.get("trivia").dataset.prompt_config)


def test_renamed_participant_keeps_the_route():
    loaded = load_configs(EXAMPLES / "renamed_participant")
    server = loaded.data["multi_agent_environment"]["environment_servers"]["conversation"]
    assert server["assistant_agent"]["name"] == "renamed_b"
    assert "participant_b" not in loaded.data
    assert resolve_dataset_agent(loaded.data, "renamed_b", taskset="dialogue") == "renamed_b"


def test_legacy_routing_sends_flat_rows_to_the_named_server():
    loaded = load_configs(EXAMPLES / "legacy_routing")
    row = {"responses_create_params": {"input": "hi"}, "expected_answer": "x"}
    assert environment_server_for_row(loaded.data, row) == "shared_environment"
