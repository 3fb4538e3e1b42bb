"""Declarative automation: a plan follows a re-collated taskset even when the collation was
started by hand, and only once every blocking check upstream has passed."""

import dagster as dg

plan_automation_sensor = dg.AutomationConditionSensorDefinition(
    "plan_automation_sensor",
    target=dg.AssetSelection.assets("eval_plan"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
