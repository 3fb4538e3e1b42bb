"""rollouts[benchmark × harness] and its checks, materialized on an ephemeral instance."""

import json
from pathlib import Path

import dagster as dg
import pytest
import yaml

from gym_assets.defs.partitions import benchmark_partitions, harness_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.rollouts import assets as rollout_assets
from gym_assets.defs.rollouts import checks as rollout_checks
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.defs.tasksets.sensors import config_change_sensor
from gym_assets_tests.defs.links import linked_file

BENCHMARK_ASSETS = [
    taskset_assets.prepared_benchmark,
    taskset_assets.collated_taskset,
    plan_assets.eval_plan,
]
CHECKS = [rollout_checks.rollouts_checks]


def _plan(workspace, instance, name):
    instance.add_dynamic_partitions(benchmark_partitions.name, [name])
    result = dg.materialize(
        BENCHMARK_ASSETS, resources={"workspace": workspace}, instance=instance, partition_key=name
    )
    assert result.success


def _collect(workspace, instance, name, endpoint=None, runner=None):
    if "simple_agent" not in instance.get_dynamic_partitions(harness_partitions.name):
        instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent"])
    return dg.materialize(
        [rollout_assets.rollouts, *CHECKS],
        resources={
            "workspace": workspace,
            "model_endpoint": endpoint or ModelEndpoint(),
            "harness_runner": runner or HarnessRunner(concurrency=8),
        },
        instance=instance,
        partition_key=dg.MultiPartitionKey({"benchmark": name, "harness": "simple_agent"}),
        raise_on_error=False,
    )


def _checks(result):
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def _metadata(instance):
    event = instance.get_latest_materialization_event(dg.AssetKey("rollouts"))
    return event.asset_materialization.metadata


def test_reference_rollouts_pass_every_check(workspace, instance):
    _plan(workspace, instance, "units")
    result = _collect(workspace, instance, "units")
    assert result.success
    checks = _checks(result)
    assert set(checks) == {c.name for c in rollout_checks.SUITE.checks}
    assert all(e.passed for e in checks.values()), {k: e.description for k, e in checks.items()}
    meta = _metadata(instance)
    assert meta["reward_mean"].value == 1.0 and meta["pass@1"].value == 1.0
    assert meta["outcomes"].value["measured"] == 30
    assert "| 0.9–1.0 | 30 |" in meta["reward_histogram"].value
    harness = meta["harness"].value
    assert harness["interface"] == "session" and harness["runtime_version"].startswith("gym-assets")
    records = Path(meta["records"].value)
    assert records == Path(workspace.data_root) / "rollouts/units/simple_agent/rollouts.jsonl"
    assert len(records.read_text().splitlines()) == 30


def test_inputs_that_drifted_from_the_plan_block(workspace, instance):
    _plan(workspace, instance, "units")
    collated = Path(workspace.data_root) / "tasksets" / "units" / "benchmark.jsonl"
    rows = [json.loads(line) for line in collated.read_text().splitlines()]
    rows[0]["task_input"]["task_data"]["expected_answer"] = "tampered"
    collated.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _collect(
        workspace, instance, "units", runner=HarnessRunner(concurrency=8, max_unmeasured_share=0.0)
    )
    checks = _checks(result)
    budget = checks["unmeasured_share"]  # the refused rollout is unmeasured: over a 0 budget
    assert not budget.passed and budget.severity == dg.AssetCheckSeverity.ERROR
    assert budget.metadata["unmeasured_kinds"].value == {"plan_mismatch": 1}
    assert not checks["inputs_match_plan"].passed
    assert checks["inputs_match_plan"].metadata["differ"].value == ["units-001"]
    assert checks["rollouts_cover_plan"].passed  # the refused task has its terminal outcome
    assert not result.success  # blocking
    assert _metadata(instance)["outcomes"].value["failed"] == 1


def test_an_upstream_failing_every_call_fails_the_unmeasured_share_and_says_why(
    workspace, instance, tmp_path
):
    _plan(workspace, instance, "units")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"error": 500, "times": 100, "message": "down"}]))
    endpoint = ModelEndpoint(upstream="scripted", script_path=str(script))
    result = _collect(workspace, instance, "units", endpoint)
    checks = _checks(result)
    budget = checks["unmeasured_share"]
    assert not budget.passed and budget.severity == dg.AssetCheckSeverity.ERROR
    assert budget.metadata["unmeasured_kinds"].value == {"agent_request_failed": 30}
    assert budget.description.endswith("by kind: agent_request_failed 30")
    assert not result.success  # blocking
    # Every rollout has its record, with the failed calls as evidence.
    assert checks["evidence_present"].passed
    meta = _metadata(instance)
    assert meta["summary"].value == "mean - over 0 of 30 planned; 30 masked; 0 failed"
    assert meta["outcomes"].value["masked"] == 30
    assert "| agent_request_failed | 30 |" in meta["masked_kinds"].value


def test_config_change_sensor_adds_the_harness_partitions(configs, workspace, instance):
    context = dg.build_sensor_context(instance=instance, resources={"workspace": workspace})
    config_change_sensor(context)
    registry = yaml.safe_load((configs / "harnesses.yaml").read_text(encoding="utf-8"))
    assert instance.get_dynamic_partitions(harness_partitions.name) == list(registry["harnesses"])


def test_statistics_task_table_report_and_compare_view(workspace, instance):
    _plan(workspace, instance, "units")
    assert _collect(workspace, instance, "units").success
    first = _metadata(instance)
    assert first["reward_mean"].value == 1.0 and first["reward_mean_tasks"].value == 30
    assert first["reward_stderr"].value == 0.0
    assert first["reward_ci_low"].value == first["reward_ci_high"].value == 1.0
    assert first["pass@1_ci_low"].value == 1.0
    assert first["compare"].value == "no previous run to compare"
    assert "compare_reward_delta" not in first
    report = linked_file(first["report"])
    assert report == Path(workspace.data_root) / "rollouts/units/simple_agent/report.html"
    assert "<svg" in report.read_text(encoding="utf-8")
    table = first["worst_tasks"]
    assert isinstance(table, dg.TableMetadataValue) and len(table.records) == 30
    assert table.schema.columns[0].description.startswith("30 of 30 tasks, lowest mean reward")

    # A second materialization where 40% of the answers are wrong (12 of 30 tasks).
    corrupt = ModelEndpoint(corrupt_fraction=0.4, seed=3)
    assert _collect(workspace, instance, "units", endpoint=corrupt).success
    second = _metadata(instance)
    assert second["reward_mean"].value == pytest.approx(0.6)
    low, high = second["reward_ci_low"].value, second["reward_ci_high"].value
    assert low < 0.6 < high and second["reward_stderr"].value > 0
    assert second["compare_reward_delta"].value == pytest.approx(-0.4)
    assert second["compare_reward_delta_ci_high"].value < 0  # a regression, not noise
    assert (second["flipped_to_fail"].value, second["flipped_to_pass"].value) == (12, 0)
    assert second["inputs_changed"].value == 0
    assert "| flipped pass → fail | 12 |" in second["compare"].value
    worst = second["worst_tasks"].records
    assert [r.data["reward_mean"] for r in worst[:12]] == [0.0] * 12
    assert all(r.data["input_digest"].endswith("…") for r in worst)
    # Over materializations, the numbers are there to plot.
    events = instance.fetch_materializations(dg.AssetKey("rollouts"), limit=10).records
    assert len(events) == 2
