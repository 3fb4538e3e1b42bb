"""rollouts[benchmark × harness] as shard steps and a merge, run as jobs on a real instance:
one materialization with the one-step asset's metadata and checks, the same products, and a
re-execution of a failed run that re-runs only the shard that failed."""

import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.definitions import defs
from gym_assets.defs.executors import SHARDS_VARIABLE, shard_count
from gym_assets.defs.partitions import benchmark_partitions, harness_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts import checks as rollout_checks
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.defs.rollouts.shards import sharded_rollouts
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.errors import UserError
from gym_assets_tests.rollouts.same_run import assert_same_run

PARTITION = {"dagster/partition": "units|simple_agent"}
SHARD_STEPS = {"rollouts.shard_1_of_2", "rollouts.shard_2_of_2"}
MERGE_STEP = "rollouts.merge_rollout_shards"


def sharded_job() -> dg.JobDefinition:
    """The rollouts job of a code location loaded with two shards per partition."""
    return dg.Definitions(
        assets=[
            taskset_assets.prepared_benchmark,
            taskset_assets.collated_taskset,
            plan_assets.eval_plan,
            sharded_rollouts(2),
        ],
        asset_checks=[rollout_checks.rollouts_checks],
        jobs=[
            dg.define_asset_job(
                "rollouts_job",
                selection=dg.AssetSelection.assets("rollouts"),
                executor_def=dg.in_process_executor,
            )
        ],
        resources={
            "workspace": GymWorkspace(),
            "model_endpoint": ModelEndpoint(),
            "harness_runner": HarnessRunner(concurrency=8),
        },
    ).resolve_job_def("rollouts_job")


def one_step_job() -> dg.JobDefinition:
    return defs.resolve_job_def("rollouts_job")


@pytest.fixture
def planned(monkeypatch, configs, tmp_path, instance) -> Path:
    """The units benchmark planned on private roots; the data root."""
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(configs))
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(tmp_path / "data"))
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent"])
    job = dg.reconstructable(_benchmark_job)
    with dg.execute_job(job, instance, tags={"dagster/partition": "units"}) as result:
        assert result.success
    return tmp_path / "data"


def _benchmark_job() -> dg.JobDefinition:
    return defs.resolve_job_def("benchmark_job")


def _run(instance, job, reexecution_options=None):
    return dg.execute_job(
        dg.reconstructable(job), instance, tags=PARTITION, reexecution_options=reexecution_options
    )


def _outcome(result) -> tuple[set[str], dict[str, bool], dict[str, object]]:
    steps = {e.step_key for e in result.all_events if e.is_step_event and e.step_key}
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    events = result.get_asset_materialization_events()
    metadata = {k: v.value for e in events for k, v in e.materialization.metadata.items()}
    return steps, checks, metadata


def test_a_sharded_partition_is_one_materialization_of_the_same_run(planned, instance, tmp_path):
    with _run(instance, sharded_job) as result:
        assert result.success
        steps, checks, metadata = _outcome(result)
        assert len(result.get_asset_materialization_events()) == 1
    assert steps == {*SHARD_STEPS, MERGE_STEP, "rollouts_checks"}
    assert checks == dict.fromkeys(
        ["rollouts_cover_plan", "inputs_match_plan", "unmeasured_share", "evidence_present"], True
    )
    assert metadata["rollouts"] == metadata["dispatched"] == metadata["passed"] == 30
    assert metadata["shards"] == 2 and metadata["reward_mean"] == 1.0
    run_dir = planned / "rollouts" / "units" / "simple_agent"
    assert metadata["records"] == str(run_dir / "rollouts.jsonl")
    assert sorted(os.listdir(planned / "rollout_shards" / "units" / "simple_agent")) == [
        "1-of-2",
        "2-of-2",
        "inventory",  # the partition's, made once by the first shard
    ]
    sharded = shutil.copytree(run_dir, tmp_path / "sharded")
    with _run(instance, one_step_job) as result:
        assert result.success
        assert {e.step_key for e in result.all_events if e.is_step_event} == {
            "rollouts",
            "rollouts_checks",
        }
    assert_same_run(run_dir, sharded)


def test_a_reexecution_of_a_failed_sharded_run_reruns_only_the_failed_shard(planned, instance):
    with _run(instance, sharded_job) as first:
        assert first.success
    shard_two = planned / "rollout_shards" / "units" / "simple_agent" / "2-of-2"
    stray = shard_two / "notes.txt"  # a file no run writes: shard 2 refuses to start
    stray.write_text("mine\n")
    with _run(instance, sharded_job) as failed:
        assert not failed.success
        failures = {e.step_key for e in failed.all_events if e.is_step_failure}
    assert failures == {"rollouts.shard_2_of_2"}
    stray.unlink()
    records = shard_two / "rollouts.jsonl"
    records.write_bytes(b"".join(records.read_bytes().splitlines(keepends=True)[:5]))
    options = dg.ReexecutionOptions.from_failure(failed.run_id, instance)
    with _run(instance, sharded_job, options) as retry:
        assert retry.success
        steps, checks, metadata = _outcome(retry)
    assert steps == {"rollouts.shard_2_of_2", MERGE_STEP, "rollouts_checks"}  # shard 1 stands
    assert all(checks.values()) and len(checks) == 4
    assert metadata["dispatched"] == 10 and metadata["resumed_from_run"] == failed.run_id
    assert metadata["rollouts"] == metadata["passed"] == 30


def test_the_shard_count_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(SHARDS_VARIABLE, raising=False)
    assert shard_count() == 1
    monkeypatch.setenv(SHARDS_VARIABLE, "4")
    assert shard_count() == 4
    for bad in ("0", "two", "-1", "5000"):
        monkeypatch.setenv(SHARDS_VARIABLE, bad)
        with pytest.raises(UserError, match=SHARDS_VARIABLE):
            shard_count()
