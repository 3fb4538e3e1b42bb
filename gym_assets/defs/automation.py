"""Declarative automation: a plan follows a re-collated taskset even when the collation was
started by hand, and only once every blocking check upstream has passed; the conformance matrix
follows every harness run (once none is still in progress, so a sweep renders it once; a harness
never run does not hold it back); the scoreboard follows every rollouts run."""

import dagster as dg


def _automation_sensor(
    name: str, asset: str, description: str
) -> dg.AutomationConditionSensorDefinition:
    """A sensor evaluating one asset's automation condition, on by default, every 30 s: each
    asset has its own, so one can be stopped without the others."""
    return dg.AutomationConditionSensorDefinition(
        name,
        target=dg.AssetSelection.assets(asset),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description=description,
    )


plan_automation_sensor = _automation_sensor(
    "plan_automation_sensor",
    "eval_plan",
    "Plans a benchmark again after its taskset is re-collated, however the collation was "
    "started (UI, `config_change_sensor`, command line through Dagster), once every blocking "
    "check of `collated_taskset` has passed for that partition.",
)

conformance_automation_sensor = _automation_sensor(
    "conformance_automation_sensor",
    "conformance_matrix",
    "Re-renders `conformance_matrix` after any harness conformance run, once none is still "
    "queued or running (a nightly sweep renders it once, not once per harness); harnesses never "
    "run do not hold it back.",
)

scoreboard_automation_sensor = _automation_sensor(
    "scoreboard_automation_sensor",
    "scoreboard",
    "Re-renders `scoreboard` after any partition of `rollouts` materializes (partitions never "
    "run or still running do not hold it back), so each finished run shows up and is kept in "
    "the scoreboard's history.",
)
