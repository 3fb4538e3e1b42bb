"""The assets write only products that are ours, and the run queue keeps one run per partition."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.defs.jobs import benchmark_job
from gym_assets.defs.partitions import benchmark_partitions, harness_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.rollouts import assets as rollout_assets
from gym_assets.defs.rollouts.jobs import rollouts_job
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.local_dagster import INSTANCE_DIR
from gym_assets_tests.filesystems import snapshot

REPO = Path(__file__).resolve().parents[2]


def _failure(result: dg.ExecuteInProcessResult) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.event_specific_data.error.message


def test_the_taskset_asset_refuses_a_directory_it_did_not_write(workspace, instance):
    out = Path(workspace.data_root) / "tasksets" / "units"
    out.mkdir(parents=True)
    (out / "benchmark.jsonl").write_text('{"hand": "made"}\n')
    before = snapshot(out.parent)
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    result = dg.materialize(
        [taskset_assets.prepared_benchmark, taskset_assets.collated_taskset],
        resources={"workspace": workspace},
        instance=instance,
        partition_key="units",
        raise_on_error=False,
    )
    assert not result.success
    assert f"{out}: exists and was not written by gym-assets (no product marker)" in _failure(
        result
    )
    assert snapshot(out.parent) == before


@pytest.fixture
def queued_instance(tmp_path: Path):
    """A real instance whose DAGSTER_HOME holds the project's dagster.yaml."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / INSTANCE_DIR / "dagster.yaml", home / "dagster.yaml")
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        yield instance
    finally:
        instance.dispose()


def test_the_run_queue_allows_one_run_per_partition(queued_instance):
    assert isinstance(queued_instance.run_coordinator, dg.QueuedRunCoordinator)
    # What the queue daemon dequeues by: the instance's concurrency settings.
    queue = queued_instance.get_concurrency_config().run_queue_config
    assert queue is not None and queue.max_concurrent_runs == 2
    limits = queue.tag_concurrency_limits
    per_value = {"applyLimitPerUniqueValue": True}
    assert {"key": "dagster/partition", "limit": 1, "value": per_value} in limits
    assert {"key": "gym_assets/benchmark", "limit": 1, "value": per_value} in limits


def test_runs_of_our_jobs_carry_the_partition_tag_the_limit_keys_on(queued_instance, workspace):
    defs = dg.Definitions(
        assets=dg.load_assets_from_modules([taskset_assets, plan_assets, rollout_assets]),
        jobs=[benchmark_job, rollouts_job],
        resources={
            "workspace": workspace,
            "model_endpoint": ModelEndpoint(),
            "harness_runner": HarnessRunner(concurrency=8),
        },
    )
    queued_instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    queued_instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent"])
    keys = {
        "benchmark_job": "units",
        "rollouts_job": dg.MultiPartitionKey({"benchmark": "units", "harness": "simple_agent"}),
    }
    for job, key in keys.items():
        result = defs.resolve_job_def(job).execute_in_process(
            instance=queued_instance, partition_key=key
        )
        assert result.success
        run = queued_instance.get_run_by_id(result.run_id)
        assert run is not None and run.tags["dagster/partition"] == str(key)
