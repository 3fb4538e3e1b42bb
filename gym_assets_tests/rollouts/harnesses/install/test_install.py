"""``gym-assets harness install``: the pinned version into the harness's own folder, verified,
idempotent, nothing half-installed left behind, nothing of the user's touched (real pip and
npm installing packages built in the test, with no network)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.config.loader import load_configs
from gym_assets.errors import UserError
from gym_assets.outputs.markers import MARKER_NAME
from gym_assets.rollouts.harnesses.adapters import ADAPTER_MODULES
from gym_assets.rollouts.harnesses.install import install, unavailable_reason
from gym_assets.rollouts.harnesses.registry import (
    HARNESSES_DIR_ENV,
    HarnessUnavailable,
    load_harnesses,
    require_installed,
)
from gym_assets_tests.rollouts.harnesses.install.conftest import cli_entry, write_registry
from gym_assets_tests.rollouts.harnesses.install.packages import (
    NPM_PACKAGE,
    PIP_DIST,
    PROGRAM,
    build_sdist,
    build_wheel,
    npm_registry,
)

pytestmark = pytest.mark.slow  # a venv or an npm install per test


def _run(configs: Path, *argv: str) -> int:
    return main([*argv, "--configs", str(configs)])


def _harness(configs: Path, name: str):
    return load_harnesses(load_configs(configs))[name]


def _program_says(folder: Path, relative: str) -> str:
    done = subprocess.run([folder / relative], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_pip_install_is_verified_then_idempotent(configs, root, wheels, home, capsys) -> None:
    build_wheel(wheels, "1.0.0")
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    assert _run(configs, "harness", "install", "fake") == 0
    said = capsys.readouterr().err.splitlines()
    assert said[0] == (
        f"[1/1] fake: installing fake-harness-cli==1.0.0 (pip) into {root / 'fake'} ..."
    )
    assert said[1].startswith("[1/1] fake: ... done in ") and said[1].endswith(" s")
    folder = root / "fake"
    # renamed from fake.partial, its scripts still find their interpreter
    assert _program_says(folder, f"bin/{PROGRAM}") == f"{PROGRAM} 1.0.0"
    assert json.loads((folder / MARKER_NAME).read_text())["product"] == "harness-install"
    assert not (root / "fake.partial").exists()
    assert unavailable_reason(_harness(configs, "fake")) is None
    log = root / ".cache" / "fake.log"
    before = (log.read_bytes(), folder.stat().st_mtime_ns, os.listdir(root))

    assert _run(configs, "harness", "install", "fake") == 0
    assert capsys.readouterr().err == f"[1/1] fake: already installed (1.0.0 in {folder})\n"
    assert (log.read_bytes(), folder.stat().st_mtime_ns, os.listdir(root)) == before
    assert os.listdir(home) == []  # pip's HOME and cache were under <root>/.cache


def test_npm_install_into_a_prefix(configs, root, npm_versions, home, capsys) -> None:
    write_registry(configs, {"fakenpm": cli_entry("npm", "1.0.0")})
    assert _run(configs, "harness", "install", "--all") == 0
    assert "installing fake-harness-cli@1.0.0 (npm)" in capsys.readouterr().err
    folder = root / "fakenpm"
    assert _program_says(folder, f"node_modules/.bin/{PROGRAM}") == f"{PROGRAM} 1.0.0"
    assert json.loads((folder / "package.json").read_text()) == {
        "dependencies": {"fake-harness-cli": "^1.0.0"}
    }
    assert os.listdir(home) == []
    assert (root / ".cache" / "npm").is_dir()


# Run on the host, this script would write the parent's environment into a host folder; in the
# sandbox it may write only into its own package, which is what a real post-install step does.
POSTINSTALL = """
const fs = require("fs");
let stolen = "";
try { stolen = fs.readFileSync(`/proc/${process.ppid}/environ`, "latin1"); } catch (e) {}
try { fs.writeFileSync(process.argv[2] || "HOST_MARKER", stolen); } catch (e) {}
fs.writeFileSync("built.txt", "built");
"""


def test_npm_install_scripts_run_in_the_sandbox_not_on_the_host(
    configs, root, home, tmp_path, monkeypatch
) -> None:
    host = tmp_path / "host"
    host.mkdir()
    script = POSTINSTALL.replace("HOST_MARKER", str(host / "marker"))
    with npm_registry(["1.0.0"], postinstall=script) as url:
        monkeypatch.setenv("npm_config_registry", url)
        write_registry(configs, {"fakenpm": cli_entry("npm", "1.0.0")})
        install(_harness(configs, "fakenpm"))
    package = root / "fakenpm" / "node_modules" / NPM_PACKAGE
    assert (package / "built.txt").read_text() == "built"  # the script ran, inside
    assert list(host.iterdir()) == []  # and reached nothing of the host
    assert {p.stat().st_uid for p in (root / "fakenpm").rglob("*")} == {os.getuid()}


def test_a_source_distribution_is_refused_unbuilt(configs, root, wheels, tmp_path, capsys) -> None:
    """Building an sdist runs its code on the host (its build backend here writes a marker):
    pip takes wheels only, so the install fails naming the package and saying why."""
    marker = tmp_path / "built-on-the-host"
    build_sdist(wheels, "1.0.0", marker)
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    assert _run(configs, "harness", "install", "fake") == 1
    assert not marker.exists()
    error = capsys.readouterr().err.splitlines()[-1]
    assert f"No matching distribution found for {PIP_DIST}==1.0.0 as a wheel" in error
    assert "building a source distribution runs the package's own code on the host" in error
    assert sorted(os.listdir(root)) == [".cache"]


def test_a_new_pin_replaces_our_install(configs, root, npm_versions) -> None:
    write_registry(configs, {"fakenpm": cli_entry("npm", "1.0.0")})
    install(_harness(configs, "fakenpm"))
    write_registry(configs, {"fakenpm": cli_entry("npm", "2.0.0")})
    harness = _harness(configs, "fakenpm")
    with pytest.raises(HarnessUnavailable, match=r"has version 1\.0\.0 .* not the pinned 2\.0\.0"):
        require_installed(harness)
    assert install(harness).seconds is not None
    assert _program_says(root / "fakenpm", f"node_modules/.bin/{PROGRAM}") == f"{PROGRAM} 2.0.0"
    assert sorted(os.listdir(root)) == [".cache", "fakenpm"]  # the old one retired and gone


def test_a_failed_install_leaves_nothing_that_could_pass_for_installed(
    configs, root, wheels, capsys
) -> None:
    build_wheel(wheels, "1.0.0")
    write_registry(configs, {"fake": cli_entry("pip", "9.9.9")})
    assert _run(configs, "harness", "install", "fake") == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith("error: harness 'fake': `")
    assert "No matching distribution found for fake-harness-cli==9.9.9" in error
    assert f"(full output: {root / '.cache' / 'fake.log'})" in error
    assert sorted(os.listdir(root)) == [".cache"]  # no fake/, no fake.partial/


def test_an_install_without_the_adapters_program_is_not_kept(configs, root, wheels) -> None:
    build_wheel(wheels, "1.0.0", program="other-name")
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    with pytest.raises(UserError, match=f"the install has no bin/{PROGRAM}, the program adapter"):
        install(_harness(configs, "fake"))
    assert sorted(os.listdir(root)) == [".cache"]


def test_folders_gym_assets_did_not_make_are_never_removed(configs, root, wheels) -> None:
    build_wheel(wheels, "1.0.0")
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    harness = _harness(configs, "fake")
    (root / "fake").mkdir(parents=True)
    (root / "fake" / "notes.txt").write_text("mine")
    with pytest.raises(
        UserError, match=r"not an install gym-assets made of fake 1\.0\.0; remove it"
    ):
        install(harness)
    assert os.listdir(root / "fake") == ["notes.txt"]

    (root / "fake" / "notes.txt").unlink()
    (root / "fake.partial").mkdir()
    (root / "fake.partial" / "notes.txt").write_text("mine too")
    with pytest.raises(UserError, match=r"fake\.partial: exists and was not made by gym-assets"):
        install(harness)
    assert os.listdir(root / "fake.partial") == ["notes.txt"]


def test_the_leftover_of_an_interrupted_install_of_ours_is_cleared(configs, root, wheels) -> None:
    build_wheel(wheels, "1.0.0")
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    leftover = root / "fake.partial"
    leftover.mkdir(parents=True)
    (leftover / MARKER_NAME).write_text(
        json.dumps({"format": 1, "product": "harness-install", "written_by": "gym-assets"})
    )
    (leftover / "half").write_text("")
    retired = root / ".fake.retired-x1"  # killed between retiring an old install and the swap
    shutil.copytree(leftover, retired)
    foreign = root / ".fake.retired-x2"  # not ours: stays
    foreign.mkdir()
    install(_harness(configs, "fake"))
    assert (root / "fake" / "bin" / PROGRAM).exists()
    assert not leftover.exists() and not retired.exists() and foreign.is_dir()


def test_an_install_someone_else_made_at_the_pinned_version_is_used_as_it_is(
    configs, root, npm_versions
) -> None:
    write_registry(configs, {"fakenpm": cli_entry("npm", "1.0.0")})
    install(_harness(configs, "fakenpm"))
    (root / "fakenpm" / MARKER_NAME).unlink()  # as in a shared read-only cache
    assert install(_harness(configs, "fakenpm")).seconds is None


def test_only_cli_harnesses_are_installed(configs, root, capsys) -> None:
    write_registry(configs, {"sa": {"kind": "builtin", "agent_implementation": "simple_agent"}})
    assert _run(configs, "harness", "install", "sa") == 1
    assert "only cli harnesses are installed" in capsys.readouterr().err
    assert _run(configs, "harness", "install", "--all") == 0
    assert "no cli harness in the registry" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        _run(configs, "harness", "install")
    assert usage.value.code == 2


def test_a_root_that_cannot_be_written_is_one_line(configs, tmp_path, monkeypatch, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(HARNESSES_DIR_ENV, str(blocker / "harnesses"))
    monkeypatch.setitem(
        ADAPTER_MODULES, "pipfake", "gym_assets_tests.rollouts.harnesses.install.pip_adapter"
    )
    write_registry(configs, {"fake": cli_entry("pip", "1.0.0")})
    assert _run(configs, "harness", "install", "fake") == 1
    assert (
        capsys.readouterr().err
        == f"error: {blocker}/harnesses/fake: cannot write: Not a directory\n"
    )


def test_an_npm_failure_names_the_cause(configs, root, npm_versions, capsys) -> None:
    write_registry(configs, {"fakenpm": cli_entry("npm", "9.9.9")})
    assert _run(configs, "harness", "install", "fakenpm") == 1
    error = capsys.readouterr().err.splitlines()[-1]
    assert (
        "failed: npm error notarget No matching version found for fake-harness-cli@9.9.9" in error
    )
    assert sorted(os.listdir(root)) == [".cache"]
