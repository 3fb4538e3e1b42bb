"""`make ui PORT=…`: the UI is served by `dg dev` on that port, and the alert links follow it
through the one variable the Makefile exports; the instance settings are not at the root."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gym_assets.defs.alerts.resources import UI_URL_ENV, AlertSink
from gym_assets.local_dagster import INSTANCE_DIR

REPO = Path(__file__).resolve().parents[1]


def _make(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in (UI_URL_ENV, "PORT")}
    done = subprocess.run(
        ["make", "-s", "-C", str(REPO), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


@pytest.mark.parametrize(("given", "port"), [((), "3000"), (("PORT=3111",), "3111")])
def test_the_ui_and_its_alert_links_follow_the_port(given, port):
    # what a recipe of the Makefile sees, and the command `make ui` would run
    seen = _make(*given, "--eval", f"show-url: ; @echo $${UI_URL_ENV}", "show-url")
    assert seen.strip() == f"http://127.0.0.1:{port}"
    planned = _make(*given, "-n", "--always-make", "ui").splitlines()
    venv = REPO / ".venv"
    assert f"VIRTUAL_ENV={venv} {venv.name}/bin/dg dev -h 127.0.0.1 -p {port}" in planned


def test_the_alert_links_read_the_exported_address(monkeypatch):
    monkeypatch.setenv(UI_URL_ENV, "http://127.0.0.1:3111/")
    assert AlertSink().run_url("abc") == "http://127.0.0.1:3111/runs/abc"
    assert (
        AlertSink(ui_url="http://ui.example:80").run_url("abc") == "http://ui.example:80/runs/abc"
    )
    monkeypatch.delenv(UI_URL_ENV)
    assert AlertSink().run_url("abc") == "http://127.0.0.1:3000/runs/abc"


def test_no_instance_settings_at_the_root_where_dagster_would_warn_about_them():
    assert not (REPO / "dagster.yaml").exists() and not (REPO / "dagster.yml").exists()
    assert {p.name for p in (REPO / INSTANCE_DIR).iterdir()} >= {
        "dagster.yaml",
        "dagster.postgres.yaml",
    }


@pytest.mark.slow
def test_dg_finds_and_loads_every_definition_from_the_repository_root(tmp_path):
    """`make lint` runs `dg check defs`: [tool.dg] points dg at gym_assets.definitions."""
    dg = Path(sys.executable).parent / "dg"
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes((REPO / INSTANCE_DIR / "dagster.yaml").read_bytes())
    env = {**os.environ, "DAGSTER_HOME": str(home), "GYM_ASSETS_DATA_ROOT": str(tmp_path / "d")}
    checked = subprocess.run(
        [str(dg), "check", "defs"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "All definitions loaded successfully" in checked.stdout
    listed = subprocess.run(
        [str(dg), "list", "defs", "--json"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    keys = {asset["asset_key"] for asset in json.loads(listed.stdout)["assets"]}
    assert {"collated_taskset", "eval_plan", "rollouts", "collated_datasets"} <= keys
