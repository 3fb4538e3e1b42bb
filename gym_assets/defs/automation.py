"""Declarative automation: a plan follows a re-collated taskset even when the collation was
started by hand, and only once every blocking check upstream has passed; the conformance matrix
follows every harness run (once none is still in progress, so a sweep renders it once; a harness
never run does not hold it back); the scoreboard follows every rollouts run."""

import dagster as dg

plan_automation_sensor = dg.AutomationConditionSensorDefinition(
    "plan_automation_sensor",
    target=dg.AssetSelection.assets("eval_plan"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Plans a benchmark again after its taskset is re-collated, however the "
    "collation was started (UI, `config_change_sensor`, command line through Dagster), once "
    "every blocking check of `collated_taskset` has passed for that partition.",
)

conformance_automation_sensor = dg.AutomationConditionSensorDefinition(
    "conformance_automation_sensor",
    target=dg.AssetSelection.assets("conformance_matrix"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Re-renders `conformance_matrix` after any harness conformance run, once none "
    "is still queued or running (a nightly sweep renders it once, not once per harness); "
    "harnesses never run do not hold it back.",
)

scoreboard_automation_sensor = dg.AutomationConditionSensorDefinition(
    "scoreboard_automation_sensor",
    target=dg.AssetSelection.assets("scoreboard"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Re-renders `scoreboard` after any partition of `rollouts` materializes "
    "(partitions never run or still running do not hold it back), so each finished run "
    "shows up and is kept in the scoreboard's history.",
)
