"""``conformance_sweep``: every night, the suite for every harness partition."""

import dagster as dg

from gym_assets.defs.partitions import HARNESS

conformance_job = dg.define_asset_job(
    "conformance_job",
    selection=dg.AssetSelection.assets("harness_conformance"),
    executor_def=dg.in_process_executor,
    description="Run the conformance suite for one harness partition, with its P0 gate. The "
    "step runs in the run's process: the suite runs each episode in a supervised process group "
    "of its own, and model-written commands in the sandbox.",
)


@dg.schedule(
    job=conformance_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Nightly at 02:00 UTC: one run per harness partition (the config_change_sensor "
    "adds a partition for every harness of the registry); conformance_matrix follows.",
)
def conformance_sweep(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    harnesses = context.instance.get_dynamic_partitions(HARNESS)
    if not harnesses:
        return dg.SkipReason("no harness partitions yet; the config_change_sensor adds them")
    night = context.scheduled_execution_time.date().isoformat()
    return [
        dg.RunRequest(
            partition_key=harness,
            run_key=f"{harness}:{night}",
            tags={"gym_assets/sweep": night},
        )
        for harness in harnesses
    ]
