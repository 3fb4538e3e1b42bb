"""Declarative automation: a plan follows a re-collated taskset even when the collation was
started by hand, and only once every blocking check upstream has passed; the conformance matrix
follows the harness runs (once none is still in progress, so a sweep renders it once)."""

import dagster as dg

plan_automation_sensor = dg.AutomationConditionSensorDefinition(
    "plan_automation_sensor",
    target=dg.AssetSelection.assets("eval_plan"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)

conformance_automation_sensor = dg.AutomationConditionSensorDefinition(
    "conformance_automation_sensor",
    target=dg.AssetSelection.assets("conformance_matrix"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
