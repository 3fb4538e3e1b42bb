"""The automation sensor that re-renders the scoreboard after every rollouts run."""

import dagster as dg

scoreboard_automation_sensor = dg.AutomationConditionSensorDefinition(
    "scoreboard_automation_sensor",
    target=dg.AssetSelection.assets("scoreboard"),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Re-renders `scoreboard` after any partition of `rollouts` materializes "
    "(partitions never run or still running do not hold it back), so each finished run "
    "shows up and is kept in the scoreboard's history.",
)
