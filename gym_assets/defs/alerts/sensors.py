"""Alert on every failed run and every failed asset check of a finished run.

Dagster OSS has no "check failed" alert, and a failed check fails its run only when it blocks
at ERROR severity: a WARN or non-blocking failure ends in a successful run. So two run-status
sensors, one per way a run can finish, read the run's check evaluations and hand the failed
ones to the ``alert_sink``; the one on failures (a ``run_failure_sensor``) adds the run's own
error, so a failed run is one alert however it failed: its error line, then its failed checks,
in one webhook message. Each run is seen once (the sensors' cursors follow run-status events,
and pass a run whose alerts raised: the error shows on the tick and on the run); a webhook that
is down costs its bounded wait and a warning, never the tick.
"""

import logging
from datetime import UTC, datetime

import dagster as dg

from gym_assets.alerts.alert import CheckAlert, RunFailure
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


def run_failure(context: dg.RunFailureSensorContext, sink: AlertSink) -> RunFailure:
    """The failed run and its error: each failed step's error, or, when no step failed (the run
    could not start, its process died), the run failure event's message."""
    run = context.dagster_run
    steps = [
        f"{event.step_key}: {event.step_failure_data.error.message.strip()}"
        for event in context.get_step_failure_events()
        if event.step_failure_data.error is not None
    ]
    return RunFailure(
        job=run.job_name,
        partition=run.tags.get(PARTITION_TAG),
        error="\n".join(steps) or context.failure_event.message or "the run gave no error",
        run_id=run.run_id,
        run_url=sink.run_url(run.run_id),
        failed_at=_ended_at(context.instance, run.run_id).isoformat(),
    )


def _ended_at(instance: dg.DagsterInstance, run_id: str) -> datetime:
    """When the run ended, as its record says (the sensor may read it much later)."""
    record = instance.get_run_record_by_id(run_id)
    ended = record.end_time if record is not None else None
    return datetime.fromtimestamp(ended, UTC) if ended is not None else datetime.now(UTC)


def alert_run(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    workspace: GymWorkspace,
    alert_sink: AlertSink,
    log: logging.Logger,
    failure: RunFailure | None = None,
) -> None:
    """Deliver the run's failure (if it failed) and its failed checks as one alert; say in the
    sensor's log where they went."""
    alerts = failed_checks(instance, run, alert_sink)
    if not alerts and failure is None:
        return
    paths = workspace.paths
    hook = None if alert_sink.unreachable else alert_sink.webhook()
    delivered = deliver(alerts, paths.alerts_dir(), paths, hook, failure)
    what = f"{len(alerts)} failed check(s) of run {run.run_id}"
    if failure is not None:
        what = f"the failure and {what}"
    where = f"{what} logged to {delivered.log}"
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


# Both sensors return None, not a SkipReason: Dagster then goes on to the next finished run in
# the tick (any other return value ends the tick after one run).


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    name="check_alerts_on_success",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Alerts on the failed checks of a successful run (WARN and non-blocking ERROR "
    "failures never fail a run).",
)
def check_alerts_on_success(
    context: dg.RunStatusSensorContext, workspace: GymWorkspace, alert_sink: AlertSink
) -> None:
    alert_run(context.instance, context.dagster_run, workspace, alert_sink, context.log)


@dg.run_failure_sensor(
    name="run_failure_alerts",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Alerts on every failed run: one alert with the run's error and its failed "
    "checks (a blocking check at ERROR severity fails its run), so a run is alerted once.",
)
def run_failure_alerts(
    context: dg.RunFailureSensorContext, workspace: GymWorkspace, alert_sink: AlertSink
) -> None:
    failure = run_failure(context, alert_sink)
    alert_run(context.instance, context.dagster_run, workspace, alert_sink, context.log, failure)
