"""The alert log (appended under the data root, ours only) and the chat message."""

import json

import pytest

from gym_assets.alerts.alert import (
    MAX_CHAT_LINES,
    MAX_ERROR_CHARS,
    CheckAlert,
    RunFailure,
    chat_message,
)
from gym_assets.alerts.deliver import deliver
from gym_assets.alerts.log import ALERT_LOG, append_alerts
from gym_assets.alerts.webhook import Webhook
from gym_assets.errors import OutputError
from gym_assets.outputs.markers import dir_marker
from gym_assets.workspace import Workspace
from gym_assets_tests.alerts.webhook_server import closed_port_url


def _alert(check: str = "task_data_valid", reason: str = "1/30 rows failed") -> CheckAlert:
    return CheckAlert(
        asset="collated_taskset",
        partition="units",
        check=check,
        severity="ERROR",
        reason=reason,
        run_id="0123456789abcdef",
        run_url="http://127.0.0.1:3000/runs/0123456789abcdef",
        job="benchmark_job",
        evaluated_at="2026-12-01T03:00:00+00:00",
    )


@pytest.fixture
def roots(tmp_path):
    return Workspace(tmp_path / "configs", tmp_path / "data")


def test_alerts_are_appended_one_line_each(roots):
    directory = roots.data / "alerts"
    path = append_alerts(directory, roots, [_alert()])
    append_alerts(directory, roots, [_alert("task_ids_unique"), _alert("route_resolves")])
    assert path == directory / ALERT_LOG and dir_marker(directory) == "alerts"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["check"] for line in lines] == [
        "task_data_valid",
        "task_ids_unique",
        "route_resolves",
    ]
    assert lines[0] == {"kind": "asset_check_failed", **_alert().__dict__}


def test_a_foreign_directory_is_refused(roots):
    directory = roots.data / "alerts"
    directory.mkdir(parents=True)
    (directory / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="not written by gym-assets"):
        append_alerts(directory, roots, [_alert()])
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt"]


def test_a_webhook_that_is_down_never_loses_the_log_line(roots):
    hook = Webhook(closed_port_url(), timeout_s=1.0, attempts=2, backoff_s=0.01)
    delivered = deliver([_alert()], roots.data / "alerts", roots, hook)
    assert delivered.webhook is not None and not delivered.webhook.delivered
    assert json.loads(delivered.log.read_text())["check"] == "task_data_valid"


def test_the_chat_message_links_the_run_and_escapes_markup():
    text = chat_message([_alert(reason="see <http://evil|here> & more")])["text"]
    assert text.startswith("1 asset check failed in <http://127.0.0.1:3000/runs/0123456789abcdef|")
    assert "`task_data_valid` failed on `collated_taskset[units]`" in text
    assert "&lt;http://evil|here&gt; &amp; more" in text and "<http://evil" not in text


def test_a_long_list_is_cut_in_the_message_only():
    alerts = [_alert(f"check_{i}") for i in range(MAX_CHAT_LINES + 5)]
    lines = chat_message(alerts)["text"].splitlines()
    assert len(lines) == 1 + MAX_CHAT_LINES + 1
    assert lines[0].startswith(f"{MAX_CHAT_LINES + 5} asset checks failed")
    assert lines[-1] == "… and 5 more in the alert log"


def test_a_failed_run_is_one_message_and_its_error_is_cut():
    failure = RunFailure(
        job="benchmark_job",
        partition="units",
        error="prepared_benchmark: <no config> & more\nTraceback ...\n" + "x" * 3000,
        run_id="0123456789abcdef",
        run_url="http://127.0.0.1:3000/runs/0123456789abcdef",
        failed_at="2026-12-01T03:00:00+00:00",
    )
    assert len(failure.error) == MAX_ERROR_CHARS and failure.error.endswith("…")
    assert failure.record()["kind"] == "run_failed"
    alone = chat_message([], failure)["text"]
    assert alone == (
        "<http://127.0.0.1:3000/runs/0123456789abcdef|run 01234567> (benchmark_job[units]) "
        "failed: prepared_benchmark: &lt;no config&gt; &amp; more"
    )
    with_checks = chat_message([_alert(), _alert("route_resolves")], failure)["text"]
    assert with_checks.splitlines()[1:3] == [
        "2 asset checks failed in it:",
        "• ERROR: `task_data_valid` failed on `collated_taskset[units]`: 1/30 rows failed",
    ]
