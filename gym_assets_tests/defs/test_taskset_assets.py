"""Materialize the taskset assets for real, on an ephemeral instance, with their checks."""

import json
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.tasksets import assets, checks

ASSETS = [assets.prepared_benchmark, assets.collated_taskset]
CHECKS = [checks.collated_taskset_checks]


def _run(workspace, instance, name, **kwargs):
    instance.add_dynamic_partitions(benchmark_partitions.name, [name])
    return dg.materialize(
        [*ASSETS, *CHECKS],
        resources={"workspace": workspace},
        instance=instance,
        partition_key=name,
        raise_on_error=False,
        **kwargs,
    )


def _checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


@pytest.mark.parametrize(
    ("name", "tasks", "tasksets"),
    [
        ("humaneval", 164, "humaneval"),
        ("units", 30, "units"),
        ("support_dialogue", 12, "support:dialogue"),
    ],
)
def test_taskset_partitions_materialize_with_passing_checks(
    workspace, instance, name, tasks, tasksets
):
    result = _run(workspace, instance, name)
    assert result.success
    evaluations = _checks(result)
    assert set(evaluations) == {
        "task_data_valid",
        "task_ids_unique",
        "route_resolves",
        "stable_task_ids",
    }
    assert all(e.passed for e in evaluations.values()), {
        k: e.description for k, e in evaluations.items()
    }
    collated = instance.get_latest_materialization_event(
        dg.AssetKey("collated_taskset")
    ).asset_materialization.metadata
    assert collated["tasks"].value == tasks
    assert collated["tasksets"].value == tasksets
    path = Path(collated["path"].value)
    assert path.is_file() and sum(1 for _ in path.open()) == tasks
    assert str(path).startswith(workspace.data_root)


def test_flat_benchmark_collates_rows_without_tasks(workspace, instance):
    result = _run(workspace, instance, "arith")
    assert result.success
    meta = instance.get_latest_materialization_event(
        dg.AssetKey("collated_taskset")
    ).asset_materialization.metadata
    assert meta["tasks"].value == 40 and meta["rows"].value == 40
    first = json.loads(Path(meta["path"].value).read_text().splitlines()[0])
    assert first["task_source"] == "arith_resources" and "task_input" not in first


def test_a_flat_benchmark_gets_a_verdict_from_every_check(workspace, instance):
    result = _run(workspace, instance, "arith")
    assert result.success
    evaluations = _checks(result)
    assert set(evaluations) == {
        "task_data_valid",
        "task_ids_unique",
        "route_resolves",
        "stable_task_ids",
    }
    assert evaluations["stable_task_ids"].passed
    # Numbers as text: the UI plots a check's numbers across partitions as one line.
    assert evaluations["stable_task_ids"].metadata["rows"] == dg.MetadataValue.text("40")
    numeric = (dg.IntMetadataValue, dg.FloatMetadataValue)
    assert not [
        (e.check_name, name)
        for e in evaluations.values()
        for name, value in e.metadata.items()
        if isinstance(value, numeric)
    ]
    # Dagster logs a check step that leaves a planned check without a result as "did not
    # yield or return expected outputs", which reads like an error: no step here does that.
    logs = [e.message for e in instance.all_logs(result.run_id) if e.user_message]
    assert not [m for m in logs if "did not yield" in m], logs


def test_invalid_task_data_fails_blocking_check(configs, workspace, instance):
    source = configs / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text().splitlines()
    row = json.loads(lines[0])
    row["task_data"]["expected_answer"] = 3000  # schema wants a string
    row["task_data"]["typo_field"] = True  # exact_match forbids extra fields
    source.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    (configs / "benchmarks" / "units" / "units_metrics.json").unlink()
    result = _run(workspace, instance, "units")
    evaluation = _checks(result)["task_data_valid"]
    assert not evaluation.passed
    assert evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert "failed task-data validation" in evaluation.description
    assert not result.success  # a blocking ERROR check fails the run


def test_unknown_route_fails_route_check(configs, workspace, instance):
    routes = configs / "routes.yaml"
    routes.write_text(
        routes.read_text().replace("units: units_environment", "units: nowhere_environment")
    )
    result = _run(workspace, instance, "units")
    # the route is refused while collating, so the asset fails with the config error text
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "nowhere_environment" in str(failure.event_specific_data.error.message)


def test_user_error_is_one_clear_failure(configs, workspace, instance):
    source = configs / "benchmarks" / "support_dialogue" / "dialogue.jsonl"
    source.write_text(source.read_text() + "{not json\n")
    result = _run(workspace, instance, "support_dialogue")
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.event_specific_data.error.message
    assert "dialogue.jsonl:13" in message
