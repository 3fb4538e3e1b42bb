"""``make ui-check``: a real webserver and daemon, a partition launched through GraphQL, and what
is left behind (nothing running; screenshots that are not blank)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from PIL import Image

from gym_assets.process_tree import Tracked
from scripts import ui_check

SCRIPT = Path(ui_check.__file__)


def _children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]


def _command(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


@pytest.mark.slow
def test_a_partition_launched_in_the_ui_is_checked_per_partition_and_screenshotted(
    tmp_path: Path,
) -> None:
    before = {p.pid for p in _children()}
    report = ui_check.ui_check("units", tmp_path / "shots", tmp_path / "work", ui_check.Report())

    assert [p for p in _children() if p.pid not in before] == []  # all it started has ended
    assert report.run_id
    # what would launch runs of its own was stopped; the check alerts were left running
    assert {"config_change_sensor", "conformance_sweep"} <= set(report.stopped)
    assert not any(name.startswith("check_alerts") for name in report.stopped)
    for checked in ("collated_taskset", "eval_plan", "collated_taskset:stable_task_ids",
                    "eval_plan:plan_covers_taskset", "scoreboard"):  # fmt: skip
        assert checked in report.checked
    # issue 26: one partition's checks alone (and "Execute all" declined cleanly), the matrix
    # after one harness run, a failed run's alert line (each function raises when it is not so)
    assert report.checked[-3:] == [
        "eval_plan[units] checks alone",
        "conformance_matrix after one harness run",
        "a failed run's alert line",
    ]
    assert {"checks_run", "harness_run", "matrix_follows", "alert"} <= set(report.seconds)
    if shutil.which("chromium") is None:
        assert report.screenshots == []
        return
    names = sorted(png.name for png in report.screenshots)
    assert names == [
        "asset_graph.png",
        "check_history.png",
        "failed_run.png",
        "materialization.png",
        "matrix_after_one_harness.png",
        "partition_checks.png",
        "scoreboard.png",
        "scoreboard_page.png",
    ]
    for png in report.screenshots:
        with Image.open(png) as image:
            assert image.size == ui_check.WINDOW
            rgb = image.convert("RGB")
            colours = rgb.getcolors(maxcolors=1 << 24) or []
        background = max(count for count, _ in colours)
        ink = 1 - background / (image.size[0] * image.size[1])
        assert len(colours) > 100, f"{png.name}: {len(colours)} colours: a blank page"
        assert ink > 0.05, f"{png.name}: {ink:.1%} of the page differs from its background"


@pytest.mark.slow
def test_a_run_that_fails_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p.pid for p in _children()}
    code = ui_check.main(["--benchmark", "no_such_benchmark", "--out", str(tmp_path)])

    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1 and err[0].startswith("ui-check: FAILED: run "), err
    assert err[0].endswith("of benchmark_job[no_such_benchmark] ended FAILURE")
    assert [p for p in _children() if p.pid not in before] == []


def test_a_missing_program_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(ui_check, "BIN", tmp_path)  # a venv without the webserver
    code = ui_check.main(["--out", str(tmp_path / "shots")])

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        f"ui-check: cannot start: {tmp_path / 'dagster-webserver'} is missing; run `make setup`"
    )


@pytest.mark.slow
def test_sigterm_stops_everything_it_started(tmp_path: Path) -> None:
    check = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    tracked = Tracked(check.pid)
    deadline = time.monotonic() + ui_check.START_TIMEOUT_S
    while not any("dagster-webserver" in _command(p) for p in tracked.alive()):
        assert check.poll() is None and time.monotonic() < deadline
        tracked.record()
        time.sleep(0.2)
    time.sleep(1)  # the webserver has started its code server
    tracked.record()

    check.send_signal(signal.SIGTERM)
    _, err = check.communicate(timeout=60)

    assert check.returncode == 130
    assert "interrupted (SIGTERM)" in err
    assert tracked.alive() == []


def test_a_pages_text_leaves_out_scripts_and_styles() -> None:
    dom = (
        "<html><head><style>p { color: red }</style><script>var tasks = 1;</script></head>"
        "<body><div>Partition</div> <span>units</span>\n<table><td>tasks</td></table></body></html>"
    )
    assert ui_check.page_text(dom) == "Partition units tasks"
