"""Alert on every failed asset check of a finished run.

Dagster OSS has no "check failed" alert, and a failed check fails its run only when it blocks
at ERROR severity: a WARN or non-blocking failure ends in a successful run. So two run-status
sensors, one per way a run can finish, read the run's check evaluations and hand the failed
ones to the ``alert_sink``. Each run is seen once (the sensors' cursors follow run-status
events, and pass a run whose alerts raised: the error shows on the tick and on the run); a
webhook that is down costs its bounded wait and a warning, never the tick.
"""

import logging
from datetime import UTC, datetime

import dagster as dg

from gym_assets.alerts.alert import CheckAlert
from gym_assets.alerts.deliver import deliver
from gym_assets.defs.alerts.resources import AlertSink
from gym_assets.defs.partitions import PARTITION_TAG
from gym_assets.defs.resources import GymWorkspace


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


def alert_run(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    workspace: GymWorkspace,
    alert_sink: AlertSink,
    log: logging.Logger,
) -> None:
    """Deliver the run's failed checks; say in the sensor's log where they went."""
    alerts = failed_checks(instance, run, alert_sink)
    if not alerts:
        return
    paths = workspace.paths
    hook = None if alert_sink.unreachable else alert_sink.webhook()
    delivered = deliver(alerts, paths.alerts_dir(), paths, hook)
    where = f"{len(alerts)} failed check(s) of run {run.run_id} logged to {delivered.log}"
    webhook = delivered.webhook
    if alert_sink.unreachable:
        log.warning(f"{where}; not posted: the webhook failed earlier in this tick")
    elif webhook is None:
        log.info(where)
    elif webhook.delivered:
        log.info(f"{where} and posted to the webhook")
    else:
        alert_sink.mark_unreachable()
        log.warning(
            f"{where}; the webhook was not reached ({webhook.outcome} after "
            f"{webhook.attempts} attempt(s))"
        )


def _alert_sensor(status: dg.DagsterRunStatus, description: str) -> dg.RunStatusSensorDefinition:
    @dg.run_status_sensor(
        run_status=status,
        name=f"check_alerts_on_{status.value.lower()}",
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=description,
    )
    def sensor(
        context: dg.RunStatusSensorContext, workspace: GymWorkspace, alert_sink: AlertSink
    ) -> None:
        # None, not a SkipReason: Dagster then goes on to the next finished run in this tick
        # (any other return value ends the tick after one run)
        alert_run(context.instance, context.dagster_run, workspace, alert_sink, context.log)

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
