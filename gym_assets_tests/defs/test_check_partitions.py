"""Checks carry the partition they judged: history per benchmark, runs of the checks alone."""

import json
import logging

import dagster as dg

from gym_assets.definitions import defs
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.tasksets import assets, checks

TASKSET = [assets.prepared_benchmark, assets.collated_taskset, checks.collated_taskset_checks]
SUITE_KEYS = {dg.AssetCheckKey(assets.collated_taskset.key, c.name) for c in checks.SUITE.checks}


def test_every_check_is_partitioned_like_its_asset():
    graph = defs.get_repository_def().asset_graph
    assert graph.asset_check_keys
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        assert spec.partitions_def == graph.get(key.asset_key).partitions_def, key


def _break_units(configs):
    source = configs / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text().splitlines()
    row = json.loads(lines[0])
    row["task_data"]["expected_answer"] = 3000  # the schema wants a string
    source.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    (configs / "benchmarks" / "units" / "units_metrics.json").unlink()


def _history(instance, check: str) -> list[tuple[str | None, bool]]:
    key = dg.AssetCheckKey(assets.collated_taskset.key, check)
    records = instance.event_log_storage.get_asset_check_execution_history(key, limit=10)
    return [
        (r.event.dagster_event.event_specific_data.partition, r.status.value == "SUCCEEDED")
        for r in reversed(records)
    ]


def test_history_reads_per_benchmark_and_checks_run_alone(configs, workspace, instance):
    _break_units(configs)
    instance.add_dynamic_partitions(benchmark_partitions.name, ["support_dialogue", "units"])
    for name in ("support_dialogue", "units"):
        dg.materialize(
            TASKSET,
            resources={"workspace": workspace},
            instance=instance,
            partition_key=name,
            raise_on_error=False,
        )
    assert _history(instance, "task_data_valid") == [("support_dialogue", True), ("units", False)]

    # the checks alone for one partition, as the UI launches them (a subset of the implicit
    # asset job): the evaluations name the partition they judged
    location = dg.Definitions(
        assets=[assets.prepared_benchmark, assets.collated_taskset],
        asset_checks=[checks.collated_taskset_checks],
        resources={"workspace": workspace},
        executor=dg.in_process_executor,
    )
    alone = (
        location.resolve_implicit_global_asset_job_def()
        .get_subset(asset_selection=set(), asset_check_selection=SUITE_KEYS)
        .execute_in_process(instance=instance, partition_key="support_dialogue")
    )
    assert alone.success
    assert not alone.get_asset_materialization_events()
    evaluations = alone.get_asset_check_evaluations()
    assert len(evaluations) == len(checks.SUITE.checks)
    assert {e.partition for e in evaluations} == {"support_dialogue"}
    assert _history(instance, "task_data_valid")[-1] == ("support_dialogue", True)


def test_checks_launched_without_a_partition_are_declined_with_a_warning(workspace, instance):
    """Dagster 1.13's "Execute all" on a partitioned asset's Checks tab launches its checks
    with no partition (``make ui-check`` sends that very mutation); no check may crash on it."""
    for key in defs.resolve_asset_graph().asset_check_keys:
        assert defs.get_assets_def(key.asset_key).partitions_def is not None, key
    suites = {key.asset_key for key in defs.resolve_asset_graph().asset_check_keys}
    job = defs.resolve_implicit_global_asset_job_def()
    for asset_key in sorted(suites):
        keys = {k for k in defs.resolve_asset_graph().asset_check_keys if k.asset_key == asset_key}
        run = job.get_subset(asset_selection=set(), asset_check_selection=keys).execute_in_process(
            instance=instance, resources={"workspace": workspace}, raise_on_error=False
        )
        assert run.success, asset_key
        assert run.get_asset_check_evaluations() == []  # no verdict, neither passed nor failed
        [warning] = [e.message for e in instance.all_logs(run.run_id) if e.level == logging.WARNING]
        name = asset_key.to_user_string()
        assert warning.startswith(f"No partition, so no check of {name} ran: ")
        assert f"select only the op `{name}_checks`" in warning
        # the op the message names is the one the Launchpad lists
        assert {op.name for op in job.get_subset(asset_check_selection=keys).nodes} >= {
            f"{name}_checks"
        }
