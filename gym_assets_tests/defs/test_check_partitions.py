"""Checks carry the partition they judged: history per benchmark, runs of the checks alone."""

import json

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
