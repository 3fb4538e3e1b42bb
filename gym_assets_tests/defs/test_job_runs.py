"""Each job's executor, and each job run on a real instance with its own executor (as the run
process that the run launcher starts executes it): every asset and check recorded."""

import os

import dagster as dg
import pytest

from gym_assets.definitions import defs
from gym_assets.defs.partitions import benchmark_partitions, harness_partitions


def benchmark_job() -> dg.JobDefinition:
    return defs.resolve_job_def("benchmark_job")


def rollouts_job() -> dg.JobDefinition:
    return defs.resolve_job_def("rollouts_job")


@pytest.fixture
def roots(monkeypatch, configs, tmp_path):
    """The code location's own resources (as a launched run has them) on private roots."""
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(configs))
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(tmp_path / "data"))


def _execute(
    instance, job, partition: str
) -> tuple[list[str], dict[str, bool], set[tuple[str, int]]]:
    """Materialized assets, check verdicts, and each step with the process it ran in."""
    with dg.execute_job(
        dg.reconstructable(job), instance, tags={"dagster/partition": partition}
    ) as result:
        assert result.success
        materialized = sorted(
            e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
        )
        checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
        steps = {(e.step_key, e.pid) for e in result.all_events if e.is_step_event}
    return materialized, checks, steps


@pytest.mark.parametrize("name", ["benchmark_job", "rollouts_job"])
def test_jobs_choose_the_in_process_executor(name):
    assert defs.resolve_job_def(name).executor_def.name == "in_process"


def test_assets_launched_from_the_ui_default_to_in_process():
    """Assets picked in the UI run as Dagster's implicit asset job, under the location default."""
    assert defs.resolve_implicit_global_asset_job_def().executor_def.name == "in_process"


def test_each_job_materializes_everything_with_its_checks_in_the_run_process(roots, instance):
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent"])
    materialized, checks, steps = _execute(instance, benchmark_job, "units")
    assert materialized == ["collated_taskset", "eval_plan", "prepared_benchmark"]
    assert checks == dict.fromkeys(
        [
            "task_data_valid",
            "task_ids_unique",
            "route_resolves",
            "stable_task_ids",
            "plan_schema_valid",
            "plan_deterministic",
            "plan_covers_taskset",
            "plan_drift",
        ],
        True,
    )
    # one step per asset and one for each asset's checks, all in the run's process
    assert steps == {
        (step, os.getpid())
        for step in [*materialized, "collated_taskset_checks", "eval_plan_checks"]
    }
    materialized, checks, steps = _execute(instance, rollouts_job, "units|simple_agent")
    assert materialized == ["rollouts"]
    assert checks == dict.fromkeys(
        [
            "rollouts_cover_plan",
            "inputs_match_plan",
            "unmeasured_share",
            "evidence_present",
        ],
        True,
    )
    assert steps == {("rollouts", os.getpid()), ("rollouts_checks", os.getpid())}


def _rollouts_metadata(result: dg.JobExecutionResult) -> dict[str, object]:
    (event,) = result.get_asset_materialization_events()
    return {key: value.value for key, value in event.materialization.metadata.items()}


def _reexecute(instance, parent_id: str) -> tuple[str, dict[str, object]]:
    """The whole rollouts job again, as a re-execution of ``parent_id`` (of its partition)."""
    options = dg.ReexecutionOptions(parent_id, step_selection=["rollouts", "rollouts_checks"])
    tags = {"dagster/partition": "units|simple_agent"}
    with dg.execute_job(
        dg.reconstructable(rollouts_job), instance, tags=tags, reexecution_options=options
    ) as result:
        assert result.success
        return result.run_id, _rollouts_metadata(result)


def test_a_reexecution_of_a_failed_run_continues_its_rollouts(roots, instance):
    """What a run retry does after a worker was killed: the failed run's recorded rollouts
    stand and nothing is run again; a re-execution of a successful run collects anew."""
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent"])
    _execute(instance, benchmark_job, "units")
    with dg.execute_job(
        dg.reconstructable(rollouts_job), instance, tags={"dagster/partition": "units|simple_agent"}
    ) as first:
        assert first.success
    again, fresh = _reexecute(instance, first.run_id)
    assert fresh["dispatched"] == fresh["rollouts"] == 30 and "resumed_from_run" not in fresh
    (run,) = instance.get_runs(dg.RunsFilter(run_ids=[again]))
    instance.report_run_failed(run)  # as a run whose worker was killed ends
    _, resumed = _reexecute(instance, again)
    assert resumed["resumed_from_run"] == again
    assert resumed["dispatched"] == 0 and resumed["rollouts"] == 30 and resumed["passed"] == 30
