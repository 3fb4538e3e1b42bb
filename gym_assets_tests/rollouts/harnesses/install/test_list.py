"""``gym-assets list harnesses [--json]``: every harness of the registry, and for a cli harness
its pinned and installed versions, its install folder and the command that installs it."""

from __future__ import annotations

import json
import shutil

import pytest

from gym_assets.cli import main
from gym_assets_tests.rollouts.harnesses.install.conftest import cli_entry, write_registry
from gym_assets_tests.rollouts.harnesses.install.packages import PIP_DIST, PROGRAM


def _listed(configs, capsys, *flags: str) -> str:
    assert main(["list", "harnesses", "--configs", str(configs), *flags]) == 0
    return capsys.readouterr().out


def _fake_install(folder, version: str) -> None:
    """What the listing reads of a venv: the distribution's METADATA and the program."""
    info = folder / "lib" / "python3.11" / "site-packages" / f"fake_harness_cli-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {PIP_DIST}\nVersion: {version}\n")
    (folder / "bin").mkdir()
    (folder / "bin" / PROGRAM).write_text("")


@pytest.fixture
def registry(configs):
    entries = {
        "simple": {"kind": "builtin", "agent_implementation": "simple_agent"},
        "ready": cli_entry("pip", "1.0.0"),
        "absent": cli_entry("npm", "2.0.0"),
        "stale": cli_entry("pip", "1.0.0"),
    }
    write_registry(configs, entries)
    return configs


def test_the_table_says_what_is_installed(registry, root, capsys) -> None:
    _fake_install(root / "ready", "1.0.0")
    _fake_install(root / "stale", "0.9.0")
    lines = _listed(registry, capsys).splitlines()
    assert lines[0] == "Harnesses (4)"
    assert lines[1].split() == ["name", "kind", "adapter", "version", "api", "installed", "folder"]
    assert lines[2].split() == ["simple", "builtin", "-", "-", "-", "-", "-"]
    assert lines[3].split() == [
        "ready",
        "cli",
        "pipfake",
        "1.0.0",
        "chat",
        "JSON",
        "1.0.0",
        str(root / "ready"),
    ]
    assert lines[4].split() == [
        "absent",
        "cli",
        "npmfake",
        "2.0.0",
        "chat",
        "JSON",
        "not",
        "installed",
        str(root / "absent"),
    ]
    assert lines[5].split() == [
        "stale",
        "cli",
        "pipfake",
        "1.0.0",
        "chat",
        "JSON",
        "0.9.0",
        "(pinned",
        "1.0.0)",
        str(root / "stale"),
    ]
    assert lines[6] == (
        "not installed: run `gym-assets harness install absent`, `gym-assets harness install stale`"
    )


def test_json_is_machine_readable(registry, root, capsys) -> None:
    _fake_install(root / "ready", "1.0.0")
    rows = {row["name"]: row for row in json.loads(_listed(registry, capsys, "--json"))}
    assert list(rows) == ["simple", "ready", "absent", "stale"]
    assert rows["ready"] == {
        "name": "ready",
        "kind": "cli",
        "adapter": "pipfake",
        "version": "1.0.0",
        "api": "chat",
        "stream": False,
        "install": {"pip": PIP_DIST},
        "install_dir": str(root / "ready"),
        "installed_version": "1.0.0",
        "available": True,
        "install_command": None,
    }
    assert rows["absent"]["available"] is False and rows["absent"]["installed_version"] is None
    assert rows["absent"]["install_command"] == "gym-assets harness install absent"
    assert rows["simple"]["available"] is True and rows["simple"]["install_dir"] is None
    # the program gone: not installed, whatever the metadata says
    shutil.rmtree(root / "ready" / "bin")
    rows = {row["name"]: row for row in json.loads(_listed(registry, capsys, "--json"))}
    assert rows["ready"]["available"] is False
    assert "not installed" in _listed(registry, capsys).splitlines()[3]
