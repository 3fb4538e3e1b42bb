"""The one Definitions object of the project (``dg dev``, ``dg check defs``: see ``[tool.dg]``).

Its default executor is in-process, so a run of assets picked in the UI (Dagster's implicit
asset job) costs what ``benchmark_job`` costs: no asset here needs a process per step (see
docs/operations.md, "Executors"). Run as a program (``make demo``), it materializes the
bundled configs with these definitions.
"""

import sys

import dagster as dg

from gym_assets.defs.alerts.resources import AlertSink
from gym_assets.defs.alerts.sensors import check_alerts_on_success, run_failure_alerts
from gym_assets.defs.automation import (
    conformance_automation_sensor,
    plan_automation_sensor,
    scoreboard_automation_sensor,
)
from gym_assets.defs.conformance import assets as conformance_assets
from gym_assets.defs.conformance import checks as conformance_checks
from gym_assets.defs.conformance.schedules import conformance_job, conformance_sweep
from gym_assets.defs.jobs import benchmark_job
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.plans import checks as plan_checks
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts import checks as rollout_checks
from gym_assets.defs.rollouts import shards as rollout_shards
from gym_assets.defs.rollouts.jobs import rollouts_job
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.defs.scoreboard import assets as scoreboard_assets
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.defs.tasksets import checks as taskset_checks
from gym_assets.defs.tasksets.sensors import config_change_sensor

defs = dg.Definitions(
    assets=[
        *dg.load_assets_from_modules(
            [taskset_assets, plan_assets, conformance_assets, scoreboard_assets]
        ),
        rollout_shards.rollouts,  # one step, or shards on several workers (its module says)
    ],
    asset_checks=dg.load_asset_checks_from_modules(
        [taskset_checks, plan_checks, rollout_checks, conformance_checks]
    ),
    jobs=[benchmark_job, rollouts_job, conformance_job],
    schedules=[conformance_sweep],
    executor=dg.in_process_executor,
    sensors=[
        config_change_sensor,
        plan_automation_sensor,
        conformance_automation_sensor,
        scoreboard_automation_sensor,
        check_alerts_on_success,
        run_failure_alerts,
    ],
    resources={
        "workspace": GymWorkspace(),
        "model_endpoint": ModelEndpoint(upstream="reference"),
        "harness_runner": HarnessRunner(),
        "alert_sink": AlertSink(),
    },
)

if __name__ == "__main__":
    from gym_assets.defs.demo import main

    sys.exit(main(defs))
