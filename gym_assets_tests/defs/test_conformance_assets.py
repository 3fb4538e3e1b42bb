"""harness_conformance[harness] with the real suite runner, its P0 gate, the matrix, the nightly
sweep, and the alert a failed gate raises (a real instance; the built-in agents, a subset of
scenarios to stay fast)."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
import yaml

from gym_assets.alerts.log import ALERT_LOG
from gym_assets.config.loader import load_configs
from gym_assets.definitions import defs
from gym_assets.defs.alerts.resources import AlertSink
from gym_assets.defs.alerts.sensors import run_failure_alerts
from gym_assets.defs.conformance import assets, checks
from gym_assets.defs.conformance.schedules import conformance_job, conformance_sweep
from gym_assets.defs.partitions import PARTITION_TAG, harness_partitions
from gym_assets.defs.rollouts.resources import HarnessRunner
from gym_assets.defs.tasksets.sensors import config_change_sensor
from gym_assets.rollouts.harnesses.install import unavailable_reason
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.suite.harness_runs import LATEST, MATRIX_HTML, MATRIX_JSON, MATRIX_MD
from gym_assets_tests.alerts.webhook_server import webhook_server
from gym_assets_tests.defs.conftest import REPO
from gym_assets_tests.defs.links import linked_file
from gym_assets_tests.rollouts.harnesses.adapters.fake_adapter import add_uninstalled

SCENARIOS = ["tool_success", "verifier_failure"]
HOOK_ENV = "GYM_ASSETS_TEST_ALERT_WEBHOOK"


@pytest.fixture
def configs(configs: Path) -> Path:
    """The bundled registry plus the user simulator as a harness: it never runs a tool, so the
    tool scenarios fail for real."""
    registry = configs / "harnesses.yaml"
    document = yaml.safe_load(registry.read_text())
    document["harnesses"]["user_simulator"] = {
        "kind": "builtin",
        "agent_implementation": "user_simulator",
    }
    registry.write_text(yaml.safe_dump(document, sort_keys=False))
    return configs


def _resources(workspace):
    return {"workspace": workspace, "harness_runner": HarnessRunner(conformance_jobs=2)}


def _conformance(workspace, instance, harness, scenarios=SCENARIOS):
    if harness not in instance.get_dynamic_partitions(harness_partitions.name):
        instance.add_dynamic_partitions(harness_partitions.name, [harness])
    return dg.materialize(
        [assets.harness_conformance, checks.harness_conformance_checks],
        resources=_resources(workspace),
        instance=instance,
        partition_key=harness,
        run_config={"ops": {"harness_conformance": {"config": {"scenarios": scenarios}}}},
        raise_on_error=False,
    )


def _gate(result) -> dg.AssetCheckEvaluation:
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.check_name == "p0_gate"
    return evaluation


def _metadata(instance, partition):
    [record] = instance.fetch_materializations(
        dg.AssetRecordsFilter(assets.harness_conformance.key, asset_partitions=[partition]),
        limit=1,
    ).records
    return record.asset_materialization.metadata


def test_a_conforming_harness_passes_the_gate(workspace, instance):
    result = _conformance(workspace, instance, "simple_agent")
    assert result.success
    gate = _gate(result)
    assert gate.passed and gate.partition == "simple_agent"
    assert gate.description == "all 2 scenarios meet the P0 gate"
    meta = _metadata(instance, "simple_agent")
    assert meta["verdict"].value == "fulfilled" and meta["exit_code"].value == 0
    assert "| tool_success | fulfilled | exit 0 | - |" in meta["scenarios"].value
    assert "| TE-1 | 2 | 2 | 2 |" in meta["evidence"].value
    assert meta["report"].value.startswith("# Harness checks by scenario")
    run_dir = Path(workspace.data_root) / "conformance/harnesses/simple_agent" / result.run_id
    assert linked_file(meta["report_html"]) == run_dir / "conformance_report.html"
    assert (run_dir / "simple_agent/tool_success/scenario_result.json").is_file()
    assert json.loads((run_dir.parent / LATEST).read_text()) == {"run": result.run_id}


def test_a_failing_harness_fails_the_gate_and_raises_an_alert(workspace, instance, monkeypatch):
    result = _conformance(workspace, instance, "user_simulator", ["tool_success"])
    assert not result.success  # the gate blocks at ERROR: the run fails
    gate = _gate(result)
    assert not gate.passed and gate.severity == dg.AssetCheckSeverity.ERROR
    assert gate.description.startswith("P0 not met in 1 scenario(s): tool_success: ")
    assert "tool_calls.present" in gate.description
    assert gate.metadata["failing"].value["tool_success"][0] == "tool_calls.present"
    assert _metadata(instance, "user_simulator")["verdict"].value == "not_fulfilled"

    with webhook_server() as receiver:
        monkeypatch.setenv(HOOK_ENV, receiver.url)
        context = dg.build_run_status_sensor_context(
            sensor_name=run_failure_alerts.name,
            dagster_event=result.get_run_failure_event(),
            dagster_instance=instance,
            dagster_run=result.dagster_run,
            resources={"workspace": workspace, "alert_sink": AlertSink(webhook_url_env=HOOK_ENV)},
        )
        run_failure_alerts(context)
    failure, line = [
        json.loads(x) for x in (Path(workspace.data_root) / "alerts" / ALERT_LOG).open()
    ]
    assert (failure["kind"], failure["partition"]) == ("run_failed", "user_simulator")
    assert (line["asset"], line["partition"], line["check"]) == (
        "harness_conformance",
        "user_simulator",
        "p0_gate",
    )
    assert "`p0_gate` failed on `harness_conformance[user_simulator]`" in receiver.bodies[0]["text"]


def test_the_negative_control_failing_every_scenario_passes_its_gate(configs, workspace, instance):
    shutil.copytree(REPO / "examples", configs.parent / "examples")  # the registry points there
    result = _conformance(workspace, instance, "negative_control")
    assert result.success  # expected to fail, and did: no failed run, so no nightly alert
    gate = _gate(result)
    assert gate.passed and gate.partition == "negative_control"
    assert gate.description.startswith("expected to fail, and did: P0 not met in 2 scenario(s)")
    assert _metadata(instance, "negative_control")["verdict"].value == "not_fulfilled"


def test_the_matrix_puts_every_harness_side_by_side(workspace, instance):
    location = dg.Definitions(
        assets=[assets.harness_conformance, assets.conformance_matrix],
        resources=_resources(workspace),
    )
    instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent", "user_simulator"])
    before = dg.evaluate_automation_conditions(defs=location, instance=instance)
    assert before.total_requested == 0  # no harness has run yet
    _conformance(workspace, instance, "simple_agent")
    _conformance(workspace, instance, "user_simulator", ["tool_success"])
    # the automation sensor renders the matrix once the harness runs have finished
    automation = dg.evaluate_automation_conditions(
        defs=location, instance=instance, cursor=before.cursor
    )
    assert automation.get_requested_partitions(assets.conformance_matrix.key) == {None}
    # the gate's history reads per harness
    gate = dg.AssetCheckKey(assets.harness_conformance.key, "p0_gate")
    history = instance.event_log_storage.get_asset_check_execution_history(gate, limit=5)
    by_partition = {r.event.dagster_event.event_specific_data.partition: r for r in history}
    assert {key: r.status.value for key, r in by_partition.items()} == {
        "simple_agent": "SUCCEEDED",
        "user_simulator": "FAILED",
    }
    result = dg.materialize(
        [assets.conformance_matrix], resources={"workspace": workspace}, instance=instance
    )
    assert result.success
    meta = instance.get_latest_materialization_event(
        assets.conformance_matrix.key
    ).asset_materialization.metadata
    assert meta["verdict"].value == "not_fulfilled"
    table = meta["harnesses"].value
    assert "| simple_agent | fulfilled | 2/2 |" in table
    assert "| user_simulator | not_fulfilled | 0/1 |" in table
    assert "## simple_agent" in meta["matrix"].value and "## user_simulator" in meta["matrix"].value
    page = linked_file(meta["matrix_html"])
    assert page.name == MATRIX_HTML
    html = page.read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html
    document = json.loads((page.parent / MATRIX_JSON).read_text())
    assert document["harnesses"]["user_simulator"]["failing"]["tool_success"][0] == (
        "tool_calls.present"
    )


def test_the_matrix_follows_one_harness_run_but_waits_for_runs_in_progress(
    fakecli, workspace, instance
):
    location = dg.Definitions(
        assets=[assets.harness_conformance, assets.conformance_matrix],
        jobs=[conformance_job],
        resources=_resources(workspace),
    )
    # three harnesses; fakecli is not installed and will never have a run
    harnesses = ["simple_agent", "user_simulator", fakecli]
    instance.add_dynamic_partitions(harness_partitions.name, harnesses)
    before = dg.evaluate_automation_conditions(defs=location, instance=instance)
    assert before.total_requested == 0  # no harness has run yet
    assert _conformance(workspace, instance, "simple_agent").success
    # another harness's run is still running (a sweep): the matrix waits for it
    running = instance.create_run_for_job(
        location.resolve_job_def(conformance_job.name),
        tags={PARTITION_TAG: "user_simulator"},
        status=dg.DagsterRunStatus.STARTED,
    )
    waiting = dg.evaluate_automation_conditions(
        defs=location, instance=instance, cursor=before.cursor
    )
    assert waiting.total_requested == 0
    instance.report_run_canceled(running)
    # one harness run is enough: the two never run do not hold the matrix back
    after = dg.evaluate_automation_conditions(
        defs=location, instance=instance, cursor=waiting.cursor
    )
    assert after.get_requested_partitions(assets.conformance_matrix.key) == {None}
    # handled: the next tick does not render it again
    again = dg.evaluate_automation_conditions(defs=location, instance=instance, cursor=after.cursor)
    assert again.total_requested == 0


def test_a_harness_never_run_is_in_the_matrix_as_not_run(workspace, instance):
    result = dg.materialize(
        [assets.conformance_matrix], resources={"workspace": workspace}, instance=instance
    )
    assert result.success
    document = json.loads(
        (Path(workspace.data_root) / "conformance/matrix" / MATRIX_JSON).read_text()
    )
    verdicts = {name: h["verdict"] for name, h in document["harnesses"].items()}
    registry = load_harnesses(load_configs(workspace.paths.configs))
    assert list(verdicts) == list(registry)  # every harness of the registry
    assert {"simple_agent", "user_simulator"} <= set(verdicts)
    # never run: a cli harness that is not installed here says so, any other is not run
    assert verdicts == {
        name: "not_run" if unavailable_reason(harness) is None else "unavailable"
        for name, harness in registry.items()
    }
    markdown = (Path(workspace.data_root) / "conformance/matrix" / MATRIX_MD).read_text()
    assert "## user_simulator" in markdown
    assert "| No check results available | ✗ | ✗ | ✗ | ✗ | ✗ | ✗ | ✗ |" in markdown


def test_the_nightly_sweep_requests_every_harness_partition(instance):
    tick = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=tick, repository_def=defs.get_repository_def()
    )
    assert isinstance(conformance_sweep.evaluate_tick(context).skip_message, str)
    instance.add_dynamic_partitions(harness_partitions.name, ["simple_agent", "user_simulator"])
    requests = conformance_sweep.evaluate_tick(context).run_requests
    assert [(r.partition_key, r.run_key) for r in requests] == [
        ("simple_agent", "simple_agent:2026-12-02"),
        ("user_simulator", "user_simulator:2026-12-02"),
    ]
    assert conformance_sweep.default_status == dg.DefaultScheduleStatus.RUNNING
    assert conformance_sweep.cron_schedule == "0 2 * * *"


@pytest.fixture
def fakecli(configs, tmp_path, monkeypatch) -> str:
    return add_uninstalled(configs, tmp_path / "harnesses", monkeypatch)


def test_the_nightly_sweep_covers_every_harness_of_the_registry(fakecli, workspace, instance):
    sensor = dg.build_sensor_context(instance=instance, resources={"workspace": workspace})
    config_change_sensor(sensor)
    tick = datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=tick, repository_def=defs.get_repository_def()
    )
    requested = [r.partition_key for r in conformance_sweep.evaluate_tick(context).run_requests]
    assert requested == list(load_harnesses(load_configs(workspace.paths.configs)))
    assert {"simple_agent", "user_simulator", fakecli} <= set(requested)


def test_an_uninstalled_cli_harness_is_unavailable_never_a_pass(fakecli, workspace, instance):
    result = _conformance(workspace, instance, fakecli)
    assert not result.success  # the blocking gate failed; the partition did not crash
    gate = _gate(result)
    assert not gate.passed and gate.partition == "fakecli"
    assert gate.description.startswith("unavailable: harness 'fakecli' is not installed (")
    assert gate.description.endswith("run `gym-assets harness install fakecli`")
    meta = _metadata(instance, "fakecli")
    assert meta["verdict"].value == "unavailable" and meta["exit_code"].value == 1
    assert meta["unavailable"].value == gate.description.removeprefix("unavailable: ")

    matrix = dg.materialize(
        [assets.conformance_matrix], resources={"workspace": workspace}, instance=instance
    )
    assert matrix.success
    meta = instance.get_latest_materialization_event(
        assets.conformance_matrix.key
    ).asset_materialization.metadata
    assert "| fakecli | unavailable | 0/0 |" in meta["harnesses"].value
    assert "| fakecli | ✗ unavailable | 0 / 0 |" in meta["matrix"].value
    assert "gym-assets harness install fakecli" in linked_file(meta["matrix_html"]).read_text()
    document = json.loads((linked_file(meta["matrix_html"]).parent / MATRIX_JSON).read_text())
    assert document["harnesses"]["fakecli"]["verdict"] == "unavailable"


def test_a_harness_never_run_and_not_installed_is_unavailable_in_the_matrix(
    fakecli, workspace, instance
):
    result = dg.materialize(
        [assets.conformance_matrix], resources={"workspace": workspace}, instance=instance
    )
    assert result.success
    matrix = Path(workspace.data_root) / "conformance/matrix"
    document = json.loads((matrix / MATRIX_JSON).read_text())
    entry = document["harnesses"][fakecli]
    assert (entry["verdict"], entry["run"]) == ("unavailable", None)
    assert entry["unavailable"].endswith("run `gym-assets harness install fakecli`")
    assert document["harnesses"]["simple_agent"]["verdict"] == "not_run"
    markdown = (matrix / MATRIX_MD).read_text()
    assert "| fakecli | ✗ unavailable | 0 / 0 |" in markdown
    assert "```bash\ngym-assets harness install fakecli\n```" in markdown
