"""Failed checks of finished runs reach the alert sink: a JSONL line always, a webhook POST to a
real server on 127.0.0.1 when one is configured, and a webhook that is down fails nothing."""

import json
import logging
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.alerts.log import ALERT_LOG
from gym_assets.defs.alerts.resources import AlertSink
from gym_assets.defs.alerts.sensors import (
    alert_run,
    check_alerts_on_success,
    run_failure_alerts,
)
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.tasksets import assets, checks
from gym_assets_tests.alerts.webhook_server import closed_port_url, webhook_server

TASKSET = [assets.prepared_benchmark, assets.collated_taskset, checks.collated_taskset_checks]
HOOK_ENV = "GYM_ASSETS_TEST_ALERT_WEBHOOK"


def _edit_units(configs: Path, edit) -> None:
    source = configs / "benchmarks" / "units" / "units.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines()]
    edit(rows)
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (configs / "benchmarks" / "units" / "units_metrics.json").unlink()


def _materialize(workspace, instance) -> dg.ExecuteInProcessResult:
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    return dg.materialize(
        TASKSET,
        resources={"workspace": workspace},
        instance=instance,
        partition_key="units",
        raise_on_error=False,
    )


def _tick(sensor, result, instance, workspace, sink) -> None:
    """One evaluation of the sensor for the run, as the daemon makes it (returns None so that
    Dagster goes on to the next run; raising would fail the tick)."""
    event = result.get_run_success_event() if result.success else result.get_run_failure_event()
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_event=event,
        dagster_instance=instance,
        dagster_run=result.dagster_run,
        resources={"workspace": workspace, "alert_sink": sink},
    )
    return sensor(context)


def _log(workspace) -> list[dict]:
    path = Path(workspace.data_root) / "alerts" / ALERT_LOG
    return [json.loads(line) for line in path.read_text().splitlines()]


def _sink(**kwargs) -> AlertSink:
    return AlertSink(webhook_url_env=HOOK_ENV, backoff_s=0.01, **kwargs)


def _break_task_data(rows):
    rows[0]["task_data"]["expected_answer"] = 3000  # the schema wants a string


def test_a_blocking_failure_is_logged_and_posted(configs, workspace, instance, monkeypatch):
    _edit_units(configs, _break_task_data)
    result = _materialize(workspace, instance)
    assert not result.success  # blocking ERROR: the run fails, the failure sensor sees it
    with webhook_server() as receiver:
        monkeypatch.setenv(HOOK_ENV, receiver.url)
        assert _tick(run_failure_alerts, result, instance, workspace, _sink()) is None
    run_id = result.dagster_run.run_id
    failure, line = _log(workspace)  # one alert for the run: its failure, then its checks
    assert (failure["kind"], failure["job"], failure["partition"]) == (
        "run_failed",
        result.dagster_run.job_name,
        "units",
    )
    assert "1 blocking asset check failed with ERROR severity" in failure["error"]
    assert line["kind"] == "asset_check_failed"
    assert line["asset"] == "collated_taskset" and line["partition"] == "units"
    assert (line["check"], line["severity"]) == ("task_data_valid", "ERROR")
    assert "failed task-data validation" in line["reason"]
    assert line["run_url"] == f"http://127.0.0.1:3000/runs/{run_id}"
    assert line["job"] == result.dagster_run.job_name
    [body] = receiver.bodies  # one message per run, not one for the run and one for checks
    head, count, check = body["text"].splitlines()
    assert head.startswith(f"<http://127.0.0.1:3000/runs/{run_id}|run {run_id[:8]}> (")
    assert "[units]) failed: " in head
    assert count == "1 asset check failed in it:"
    assert "`task_data_valid` failed on `collated_taskset[units]`" in check
    assert "secret-token" not in json.dumps(line)


def test_a_warning_in_a_successful_run_is_alerted(configs, workspace, instance):
    def drop_ids(rows):
        for row in rows:
            del row["task_id"]

    _edit_units(configs, drop_ids)
    result = _materialize(workspace, instance)
    assert result.success  # WARN never fails a run: only a success sensor can see it
    _tick(check_alerts_on_success, result, instance, workspace, _sink())
    [line] = _log(workspace)
    assert (line["check"], line["severity"]) == ("stable_task_ids", "WARN")


def test_a_webhook_that_is_down_keeps_the_line_and_the_tick(
    configs, workspace, instance, monkeypatch
):
    _edit_units(configs, _break_task_data)
    result = _materialize(workspace, instance)
    monkeypatch.setenv(HOOK_ENV, closed_port_url())
    assert _tick(run_failure_alerts, result, instance, workspace, _sink()) is None
    assert [line.get("check") for line in _log(workspace)] == [None, "task_data_valid"]


def test_a_failing_webhook_is_tried_once_per_tick(
    configs, workspace, instance, monkeypatch, caplog
):
    _edit_units(configs, _break_task_data)
    run = _materialize(workspace, instance).dagster_run
    sink = _sink(attempts=2)  # one tick: Dagster sets the resource up once for all its runs
    with webhook_server([503]) as receiver:
        monkeypatch.setenv(HOOK_ENV, receiver.url)
        for _ in range(2):
            alert_run(instance, run, workspace, sink, logging.getLogger("tick"))
    assert receiver.requests == 2  # both attempts for the first run, none for the second
    assert [line["check"] for line in _log(workspace)] == ["task_data_valid"] * 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0].endswith("the webhook was not reached (HTTP 503 after 2 attempt(s))")
    assert warnings[1].endswith("not posted: the webhook failed earlier in this tick")
    assert not any("secret-token" in w for w in warnings)


def test_a_run_without_failed_checks_alerts_nothing(workspace, instance):
    result = _materialize(workspace, instance)
    assert result.success
    assert _tick(check_alerts_on_success, result, instance, workspace, _sink()) is None
    assert not (Path(workspace.data_root) / "alerts").exists()


def test_a_failed_run_without_checks_is_alerted_with_its_error(workspace, instance, monkeypatch):
    instance.add_dynamic_partitions(benchmark_partitions.name, ["no_such_benchmark"])
    result = dg.materialize(
        TASKSET,
        resources={"workspace": workspace},
        instance=instance,
        partition_key="no_such_benchmark",
        raise_on_error=False,
    )
    assert not result.success
    with webhook_server() as receiver:
        monkeypatch.setenv(HOOK_ENV, receiver.url)
        assert _tick(run_failure_alerts, result, instance, workspace, _sink()) is None
    run_id = result.dagster_run.run_id
    [line] = _log(workspace)
    assert (line["kind"], line["partition"], line["run_id"]) == (
        "run_failed",
        "no_such_benchmark",
        run_id,
    )
    assert line["error"].startswith("prepared_benchmark: ")
    assert "no_such_benchmark" in line["error"]
    assert line["run_url"] == f"http://127.0.0.1:3000/runs/{run_id}"
    [body] = receiver.bodies
    [head] = body["text"].splitlines()
    assert head.startswith(f"<http://127.0.0.1:3000/runs/{run_id}|run {run_id[:8]}> (")
    assert "[no_such_benchmark]) failed: prepared_benchmark: " in head


@pytest.mark.parametrize("sensor", [check_alerts_on_success, run_failure_alerts])
def test_the_alert_sensors_run_by_default(sensor):
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
