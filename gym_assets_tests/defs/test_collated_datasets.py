"""``collated_datasets``: every dataset of the configs collated per mode, materialized for real
on an ephemeral instance over the two-agent config tree."""

import json
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.defs.partitions import benchmark_partitions, collation_mode_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.assets import collated_datasets, prepared_benchmark
from gym_assets_tests.tasks.multi_agent_tree import write_jsonl, write_tree
from gym_assets_tests.tasks.test_pipeline import snapshot


def _materialize(workspace, instance, mode, **kwargs):
    return dg.materialize(
        [collated_datasets],
        resources={"workspace": workspace},
        instance=instance,
        partition_key=mode,
        raise_on_error=False,
        **kwargs,
    )


def _workspace(tmp_path: Path) -> GymWorkspace:
    root = write_tree(tmp_path / "tree")
    return GymWorkspace(configs_root=str(root), data_root=str(tmp_path / "data"))


def test_each_mode_is_a_partition_with_its_own_directory(tmp_path, instance):
    workspace = _workspace(tmp_path)
    assert _materialize(workspace, instance, "train_preparation").success
    assert _materialize(workspace, instance, "example_validation").success
    events = instance.fetch_materializations(collated_datasets.key, limit=10).records
    by_mode = {r.partition_key: r.asset_materialization.metadata for r in events}
    assert set(by_mode) == {"train_preparation", "example_validation"}
    train = by_mode["train_preparation"]
    directory = Path(train["path"].value)
    assert directory == workspace.paths.collation_dir("train_preparation")
    assert (train["datasets"].value, train["rows"].value, train["tasks"].value) == (5, 12, 9)
    assert train["tasksets"].value == "support:dialogue, support:train, support:validation"
    assert (
        "| `benchmark` | 4 |" in train["types"].value and "| `train` | 7 |" in train["types"].value
    )
    assert train["metrics"].value["train"]["Number of examples"] == 7
    train_rows = (directory / "train.jsonl").read_text("utf-8").splitlines()
    assert len(train_rows) == 7
    assert json.loads(train_rows[1])["task_id"] == {"taskset": "support:train", "task_id": "t-1"}
    example = by_mode["example_validation"]
    assert example["validation"].value.startswith("mode: `error`")
    assert Path(example["path"].value, "example.jsonl").is_file()
    assert not Path(example["path"].value, "train.jsonl").exists()


def test_a_refused_collation_fails_the_step_with_one_message(tmp_path, instance):
    workspace = _workspace(tmp_path)
    write_jsonl(Path(workspace.paths.configs, "support", "example.jsonl"), [{"task_id": "e-9"}])
    result = _materialize(workspace, instance, "example_validation")
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1/1 rows failed task_data validation" in failure.event_specific_data.error.message
    # run config picks the validation mode: off lets the same rows through
    config = {"ops": {"collated_datasets": {"config": {"validation": "off"}}}}
    assert _materialize(workspace, instance, "example_validation", run_config=config).success


@pytest.mark.slow
def test_every_mode_offered_succeeds_on_the_bundled_configs(configs, workspace, instance):
    """The UI offers each mode as a partition: the shipped configs satisfy all of them (the
    example datasets and their sidecars are bundled), and none writes into the configs."""
    before = snapshot(configs)
    instance.add_dynamic_partitions(benchmark_partitions.name, ["humaneval"])
    prepared = dg.materialize(
        [prepared_benchmark],
        resources={"workspace": workspace},
        instance=instance,
        partition_key="humaneval",  # train_preparation takes its prepared rows
    )
    assert prepared.success
    modes = collation_mode_partitions.get_partition_keys()
    assert set(modes) == {"train_preparation", "example_validation"}
    for mode in modes:
        result = _materialize(workspace, instance, mode)
        assert result.success, mode
        (event,) = result.get_asset_materialization_events()
        metadata = event.materialization.metadata
        assert metadata["warnings"].value == 0, mode
    example = workspace.paths.collation_dir("example_validation") / "example.jsonl"
    assert len(example.read_text("utf-8").splitlines()) == 10  # every bundled server's examples
    assert snapshot(configs) == before
