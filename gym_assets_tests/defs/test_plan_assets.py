"""eval_plan and its checks, materialized for real after the taskset they plan."""

import json
from pathlib import Path

import dagster as dg

from gym_assets.defs.automation import plan_automation_sensor
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.plans import checks as plan_checks
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.defs.tasksets import checks as taskset_checks

ASSETS = [taskset_assets.prepared_benchmark, taskset_assets.collated_taskset, plan_assets.eval_plan]
CHECKS = [taskset_checks.collated_taskset_checks, plan_checks.eval_plan_checks]


def _run(workspace, instance, name, selection=None):
    if name not in instance.get_dynamic_partitions(benchmark_partitions.name):
        instance.add_dynamic_partitions(benchmark_partitions.name, [name])
    return dg.materialize(
        [*ASSETS, *CHECKS],
        resources={"workspace": workspace},
        instance=instance,
        partition_key=name,
        raise_on_error=False,
        selection=selection,
    )


def _checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _plan_meta(instance):
    event = instance.get_latest_materialization_event(dg.AssetKey("eval_plan"))
    return event.asset_materialization.metadata


def test_plan_follows_the_taskset_and_every_check_passes(workspace, instance):
    result = _run(workspace, instance, "units")
    assert result.success
    evaluations = _checks(result)
    assert all(e.passed for e in evaluations.values()), {
        k: e.description for k, e in evaluations.items()
    }
    meta = _plan_meta(instance)
    assert meta["tasks"].value == 30
    plan = json.loads(Path(meta["path"].value).read_text())
    assert plan["schema"] == "nemo-gym.eval-plan.v1" and len(plan["tasks"]) == 30
    assert "units-001" in meta["first_tasks"].value


def test_rerun_is_byte_identical_and_reports_no_drift(workspace, instance):
    _run(workspace, instance, "support_dialogue")
    first = _plan_meta(instance)["sha256"].value
    result = _run(workspace, instance, "support_dialogue")
    assert _plan_meta(instance)["sha256"].value == first
    drift = _checks(result)["plan_drift"]
    assert drift.passed and "no task added" in drift.description


def test_changed_data_is_reported_as_drift(configs, workspace, instance):
    _run(workspace, instance, "units")
    source = configs / "benchmarks" / "units" / "units.jsonl"
    lines = source.read_text().splitlines()
    edited = json.loads(lines[4])
    edited["responses_create_params"]["input"][0]["content"] += " Show no units."
    source.write_text("\n".join([*lines[:4], json.dumps(edited), *lines[6:]]) + "\n")
    (configs / "benchmarks" / "units" / "units_metrics.json").unlink()
    result = _run(workspace, instance, "units")
    assert result.success  # drift is an advisory
    drift = _checks(result)["plan_drift"]
    assert not drift.passed and drift.severity == dg.AssetCheckSeverity.WARN
    assert drift.metadata["changed"].value == ["units-005"]
    assert drift.metadata["removed"].value == ["units-006"]
    assert _checks(result)["plan_covers_taskset"].passed


def test_failed_blocking_taskset_check_stops_the_plan(configs, workspace, instance):
    source = configs / "benchmarks" / "units" / "units.jsonl"
    row = json.loads(source.read_text().splitlines()[0])
    row["task_data"]["unexpected"] = 1  # the exact_match schema forbids extra fields
    source.write_text(source.read_text() + json.dumps({**row, "task_id": "units-999"}) + "\n")
    (configs / "benchmarks" / "units" / "units_metrics.json").unlink()
    result = _run(workspace, instance, "units")
    assert not result.success
    assert not _checks(result)["task_data_valid"].passed
    assert instance.get_latest_materialization_event(dg.AssetKey("eval_plan")) is None


def test_tampered_taskset_fails_plan_coverage(workspace, instance):
    _run(workspace, instance, "units")
    collated = Path(workspace.data_root) / "tasksets" / "units" / "benchmark.jsonl"
    rows = [json.loads(line) for line in collated.read_text().splitlines()]
    rows[0]["task_input"]["task_data"]["expected_answer"] = "tampered"
    collated.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _run(workspace, instance, "units", selection=[plan_assets.eval_plan])
    coverage = _checks(result)["plan_covers_taskset"]
    assert not coverage.passed and coverage.metadata["digest_differs"].value == ["units-001"]
    assert not result.success  # blocking


def test_automation_plans_after_a_manual_collation_only_when_checks_pass(workspace, instance):
    defs = dg.Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        sensors=[plan_automation_sensor],
        resources={"workspace": workspace},
    )
    _run(workspace, instance, "units")
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance).cursor
    result = _run(
        workspace,
        instance,
        "units",
        selection=dg.AssetSelection.assets(taskset_assets.collated_taskset),
    )
    assert result.success
    evaluation = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert evaluation.get_requested_partitions(dg.AssetKey("eval_plan")) == {"units"}


def test_a_run_may_select_one_check_of_a_suite(workspace, instance):
    _run(workspace, instance, "units")
    plan = dg.AssetSelection.assets(plan_assets.eval_plan).without_checks()
    drift = dg.AssetCheckKey(dg.AssetKey("eval_plan"), "plan_drift")
    result = _run(workspace, instance, "units", selection=plan | dg.AssetSelection.checks(drift))
    assert result.success
    assert list(_checks(result)) == ["plan_drift"]
