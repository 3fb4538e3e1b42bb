"""Alert on every failed asset check of a finished run.

Dagster OSS has no "check failed" alert, and a failed check fails its run only when it blocks
at ERROR severity: a WARN or non-blocking failure ends in a successful run. So two run-status
sensors, one per way a run can finish, read the run's check evaluations and hand the failed
ones to the ``alert_sink``. Each run is seen once (the sensors' cursors follow run-status
events); a webhook that is down costs its bounded wait and a warning, never the tick.
"""

from datetime import UTC, datetime

import dagster as dg

from gym_assets.alerts.alert import CheckAlert
from gym_assets.alerts.deliver import deliver
from gym_assets.defs.alerts.resources import AlertSink
from gym_assets.defs.resources import GymWorkspace
from gym_assets.outputs.targets import Roots

PARTITION_TAG = "dagster/partition"


def failed_checks(
    instance: dg.DagsterInstance, run: dg.DagsterRun, sink: AlertSink
) -> list[CheckAlert]:
    """The run's failed check evaluations, in the order they were recorded."""
    alerts = []
    for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = entry.get_dagster_event().asset_check_evaluation_data
        if evaluation.passed:
            continue
        alerts.append(
            CheckAlert(
                asset=evaluation.asset_key.to_user_string(),
                partition=evaluation.partition or run.tags.get(PARTITION_TAG),
                check=evaluation.check_name,
                severity=evaluation.severity.value,
                reason=evaluation.description or "the check gave no reason",
                run_id=run.run_id,
                run_url=sink.run_url(run.run_id),
                job=run.job_name,
                evaluated_at=datetime.fromtimestamp(entry.timestamp, UTC).isoformat(),
            )
        )
    return alerts


def _alert(
    context: dg.RunStatusSensorContext, workspace: GymWorkspace, alert_sink: AlertSink
) -> dg.SkipReason:
    run = context.dagster_run
    alerts = failed_checks(context.instance, run, alert_sink)
    if not alerts:
        return dg.SkipReason(f"run {run.run_id}: no failed checks")
    roots = Roots(workspace.configs_path, workspace.layout.root)
    delivered = deliver(alerts, workspace.layout.alerts_dir(), roots, alert_sink.webhook())
    where = f"{len(alerts)} failed check(s) of run {run.run_id} logged to {delivered.log}"
    webhook = delivered.webhook
    if webhook is None:
        return dg.SkipReason(where)
    if webhook.delivered:
        return dg.SkipReason(f"{where} and posted to the webhook")
    missed = f"the webhook was not reached ({webhook.outcome} after {webhook.attempts} attempt(s))"
    context.log.warning(f"{where}; {missed}")
    return dg.SkipReason(f"{where}; {missed}")


def _alert_sensor(status: dg.DagsterRunStatus, description: str) -> dg.RunStatusSensorDefinition:
    @dg.run_status_sensor(
        run_status=status,
        name=f"check_alerts_on_{status.value.lower()}",
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def sensor(
        context: dg.RunStatusSensorContext, workspace: GymWorkspace, alert_sink: AlertSink
    ) -> dg.SkipReason:
        return _alert(context, workspace, alert_sink)

    return sensor


check_alerts_on_success = _alert_sensor(
    dg.DagsterRunStatus.SUCCESS,
    "Alerts on the failed checks of a successful run (WARN and non-blocking ERROR failures "
    "never fail a run).",
)
check_alerts_on_failure = _alert_sensor(
    dg.DagsterRunStatus.FAILURE,
    "Alerts on the failed checks of a failed run (a blocking check at ERROR severity fails "
    "its run).",
)
