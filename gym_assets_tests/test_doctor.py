"""``gym-assets doctor``: each item's ok and failing path, on prepared environments."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_assets import doctor
from gym_assets.cli import main
from gym_assets.config.loader import load_configs
from gym_assets.local_dagster import INSTANCE_DIR, free_port
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.workspace import Workspace
from gym_assets_tests.loopback_http import serving

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-doctor-test-secret"


# --- python, environment, dagster home --------------------------------------------------------


def test_python_is_judged_against_the_projects_requires_python() -> None:
    assert doctor.python_version().status == "ok"
    old = doctor.python_version((3, 10, 4))
    assert (old.status, old.item) == ("FAIL", "python")
    assert old.detail == "3.10.4, the project needs <3.12,>=3.11"
    assert old.fix and "3.11" in old.fix


def test_the_environment_holds_the_pinned_dagster(tmp_path: Path, monkeypatch) -> None:
    ok = doctor.project_environment()
    assert ok.status == "ok", ok
    assert ok.detail.endswith("dagster 1.13.27, dagster-webserver 1.13.27 as pinned")
    assert doctor.project_environment(prefix="/usr", base_prefix="/usr").status == "warn"

    # another dagster first on the path, as a second installation would be
    dist = tmp_path / "dagster-1.2.3.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dagster\nVersion: 1.2.3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    wrong = doctor.project_environment()
    assert wrong.status == "FAIL"
    assert wrong.detail == "dagster 1.2.3 (pinned ==1.13.27)"
    assert wrong.fix == doctor.SETUP_FIX


def test_dagster_home_must_be_absolute_and_hold_dagster_yaml(tmp_path: Path) -> None:
    assert doctor.dagster_home({}).status == "warn"
    assert doctor.dagster_home({"DAGSTER_HOME": "relative/home"}).status == "FAIL"
    empty = doctor.dagster_home({"DAGSTER_HOME": str(tmp_path)})
    assert (empty.status, empty.detail) == ("FAIL", f"{tmp_path} holds no dagster.yaml")
    assert empty.fix and "make demo" in empty.fix
    shutil.copy(REPO / INSTANCE_DIR / "dagster.yaml", tmp_path / "dagster.yaml")
    ok = doctor.dagster_home({"DAGSTER_HOME": str(tmp_path)})
    assert (ok.status, ok.detail) == ("ok", str(tmp_path / "dagster.yaml"))


# --- the sandbox ------------------------------------------------------------------------------


@pytest.mark.slow  # starts a bubblewrap guest
def test_the_sandbox_starts_a_guest() -> None:
    finding = doctor.sandbox()
    assert finding.status == "ok", finding


def _path_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **programs: str) -> None:
    """PATH = a folder holding only ``programs`` (name: shell script body)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, body in programs.items():
        script = folder / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))


def test_no_bubblewrap_fails_with_the_install_command(tmp_path, monkeypatch) -> None:
    _path_with(tmp_path, monkeypatch)
    finding = doctor.sandbox()
    assert finding.status == "FAIL"
    assert finding.detail.startswith("cannot isolate model-written code: bwrap, keyctl")
    assert finding.fix and "apt-get install bubblewrap keyutils" in finding.fix


@pytest.mark.slow  # starts the probe's guest (which fails)
def test_bubblewrap_that_cannot_make_namespaces_fails(tmp_path, monkeypatch) -> None:
    tools = {name: f'exec {shutil.which(name)} "$@"' for name in ("keyctl", "setpriv")}
    denied = "echo 'bwrap: No permissions to create new namespace' >&2; exit 1"
    _path_with(tmp_path, monkeypatch, bwrap=denied, **tools)
    finding = doctor.sandbox()
    assert finding.status == "FAIL"
    assert "bubblewrap is installed but" in finding.detail
    assert "namespaces" in finding.detail


# --- configs and harnesses --------------------------------------------------------------------


def test_configs_that_load_and_configs_that_do_not(tmp_path: Path) -> None:
    ok, loaded = doctor.configs(Workspace(REPO / "configs", tmp_path / "data"))
    assert ok.status == "ok" and loaded is not None
    assert ok.detail == f"{REPO / 'configs'}: 4 benchmarks"

    broken = tmp_path / "configs"
    shutil.copytree(REPO / "configs", broken)
    (broken / "routes.yaml").write_text("environment_server_routes: [unclosed\n")
    failed, nothing = doctor.configs(Workspace(broken, tmp_path / "data"))
    assert failed.status == "FAIL" and nothing is None
    assert failed.detail.startswith(str(broken / "routes.yaml"))
    assert failed.fix and "gym-assets config show" in failed.fix


def test_a_refused_manifest_warns_and_the_configs_still_load(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    manifest = configs / "benchmarks" / "units" / "manifest.yaml"
    manifest.write_text(manifest.read_text("utf-8") + "colour: red\n", "utf-8")
    warned, loaded = doctor.configs(Workspace(configs, tmp_path / "data"))
    assert warned.status == "warn" and loaded is not None
    assert f"4 benchmarks; 1 manifest(s) refused, the first: {manifest}:" in warned.detail
    assert "colour: Extra inputs are not permitted" in warned.detail
    assert warned.fix and "only the benchmarks of its folder" in warned.fix


def test_configs_with_a_generated_relay_warn(tmp_path: Path) -> None:
    root = tmp_path / "configs"
    root.mkdir()
    (root / "agent.yaml").write_text(
        "lonely_simple_agent:\n  responses_api_agents:\n    simple_agent: {entrypoint: app.py}\n"
    )
    warned, loaded = doctor.configs(Workspace(root, tmp_path / "data"))
    assert warned.status == "warn" and loaded is not None
    assert "DEPRECATED: agents without an environment server: `lonely_simple_agent`" in (
        warned.detail
    )
    assert warned.fix and "gym-assets config add-environment-servers" in warned.fix


def test_cli_harnesses_against_their_pins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GYM_ASSETS_HARNESSES_DIR", str(tmp_path))
    loaded = load_configs(REPO / "configs")
    registry = load_harnesses(loaded)
    codex = registry["codex"]

    def install_codex(version: str) -> None:
        package = tmp_path / "codex" / "node_modules" / "@openai" / "codex"
        package.mkdir(parents=True, exist_ok=True)
        (package / "package.json").write_text(json.dumps({"version": version}))
        program = tmp_path / "codex" / "node_modules" / ".bin" / "codex"
        program.parent.mkdir(exist_ok=True)
        program.touch()

    def codex_finding() -> doctor.Finding:
        return next(f for f in doctor.harnesses(loaded) if f.item == "harness codex")

    cli = [name for name, harness in registry.items() if harness.kind == "cli"]
    findings = doctor.harnesses(loaded)
    assert [f.item for f in findings] == [f"harness {name}" for name in cli]  # not built-ins
    assert {f.status for f in findings} == {"warn"}
    assert codex_finding().fix == "gym-assets harness install codex"

    install_codex(str(codex.version))
    assert codex_finding().status == "ok"
    install_codex("0.0.1")
    stale = codex_finding()
    assert (stale.status, stale.fix) == ("FAIL", "gym-assets harness install codex")
    assert stale.detail.startswith("0.0.1 in ")


# --- disk -------------------------------------------------------------------------------------


def test_disk_space_is_read_where_the_data_root_will_be(tmp_path: Path) -> None:
    missing = tmp_path / "not" / "yet"
    ok = doctor.disk_space(missing)
    assert ok.status == "ok" and ok.detail.endswith(f"GiB free under {tmp_path}")
    free = shutil.disk_usage(tmp_path).free
    assert doctor.disk_space(missing, warn_bytes=free * 2, fail_bytes=1).status == "warn"
    failed = doctor.disk_space(missing, warn_bytes=free * 4, fail_bytes=free * 2)
    assert failed.status == "FAIL" and failed.fix and "--data-root" in failed.fix


# --- a model server ---------------------------------------------------------------------------


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_error(404)
        elif self.headers.get("Authorization") != f"Bearer {KEY}":
            self.send_error(401)
        else:
            body = b'{"object": "list", "data": [{"id": "m", "object": "model"}]}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def models() -> Iterator[str]:
    with serving(_Models) as port:
        yield f"http://127.0.0.1:{port}/v1"


def test_a_reachable_model_server_with_its_key(models: str) -> None:
    ok = doctor.base_url(models + "/", "MODEL_KEY", {"MODEL_KEY": KEY})
    assert (ok.status, ok.detail) == ("ok", f"GET {models}/models: HTTP 200")

    refused = doctor.base_url(models, "MODEL_KEY", {"MODEL_KEY": "sk-wrong"})
    assert refused.status == "FAIL" and "HTTP 401" in refused.detail
    unset = doctor.base_url(models, "MODEL_KEY", {})
    assert (unset.status, unset.detail) == ("FAIL", "$MODEL_KEY is not set")
    wrong_path = doctor.base_url(models.removesuffix("/v1"), "MODEL_KEY", {"MODEL_KEY": KEY})
    assert wrong_path.status == "warn" and "HTTP 404" in wrong_path.detail
    for finding in (ok, refused, unset, wrong_path):
        assert KEY not in finding.line() and "sk-wrong" not in finding.line()


def test_an_unreachable_model_server_fails() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    finding = doctor.base_url(url, None, {})
    assert finding.status == "FAIL"
    assert finding.detail.startswith(f"GET {url}/models: ")
    assert "refused" in finding.detail.lower()


# --- the command ------------------------------------------------------------------------------


@pytest.mark.slow  # the whole doctor starts a sandbox guest
def test_the_command_prints_one_line_per_item_and_exits_on_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], models
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(REPO / INSTANCE_DIR / "dagster.yaml", home)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MODEL_KEY", KEY)
    monkeypatch.setenv("GYM_ASSETS_HARNESSES_DIR", str(tmp_path / "harnesses"))
    args = ["doctor", "--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "d")]

    assert main([*args, "--base-url", models, "--api-key-env", "MODEL_KEY"]) == 0
    lines = capsys.readouterr().out.splitlines()
    items = ["python", "environment", "dagster home", "sandbox", "configs"]
    assert [re.split(r"\s{2,}", line)[1] for line in lines[:5]] == items
    assert lines[-2].startswith("ok    disk ") and lines[-1].startswith("ok    base url ")
    assert all(line.split()[0] in ("ok", "warn") for line in lines)
    assert KEY not in "".join(lines)

    assert main([*args, "--base-url", f"http://127.0.0.1:{free_port()}/v1", "--json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert findings[-1]["item"] == "base url" and findings[-1]["status"] == "FAIL"
    assert {"status", "item", "detail", "fix"} == set(findings[0])


def test_the_command_loads_no_dagster(tmp_path: Path) -> None:
    code = (
        "import sys; from gym_assets.cli import main; "
        f"main(['doctor', '--configs', {str(REPO / 'configs')!r}, '--data-root', "
        f"{str(tmp_path)!r}]); print('dagster' in sys.modules, file=sys.stderr)"
    )
    env = {**os.environ, "PATH": ""}  # no sandbox: the probe's guest is not started
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stderr.strip().splitlines()[-1] == "False"
