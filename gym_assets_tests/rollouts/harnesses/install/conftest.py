"""A registry of test harnesses installed from packages built here, with no network: pip finds
the wheels in a local folder only, npm asks a registry on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gym_assets.rollouts.harnesses.adapters import ADAPTER_MODULES
from gym_assets.rollouts.harnesses.registry import HARNESSES_DIR_ENV
from gym_assets_tests.rollouts.harnesses.install.packages import NPM_PACKAGE, PIP_DIST, npm_registry

HERE = "gym_assets_tests.rollouts.harnesses.install"


def cli_entry(tool: str, version: str) -> dict:
    package = PIP_DIST if tool == "pip" else NPM_PACKAGE
    return {
        "kind": "cli",
        "adapter": f"{tool}fake",
        "version": version,
        "install": {tool: package},
        "api": "chat",
        "stream": False,
    }


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's HOME for the test: the installs must leave it empty."""
    path = tmp_path / "user-home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """The only place pip may look for distributions."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


@pytest.fixture
def npm_versions(monkeypatch: pytest.MonkeyPatch, home: Path) -> Iterator[list[str]]:
    """The versions the loopback npm registry serves (append before installing)."""
    versions = ["1.0.0", "2.0.0"]
    with npm_registry(versions) as url:
        monkeypatch.setenv("npm_config_registry", url)
        yield versions


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$GYM_ASSETS_HARNESSES_DIR`` of the test, and the test adapters registered."""
    monkeypatch.setitem(ADAPTER_MODULES, "pipfake", f"{HERE}.pip_adapter")
    monkeypatch.setitem(ADAPTER_MODULES, "npmfake", f"{HERE}.npm_adapter")
    path = tmp_path / "harnesses"
    monkeypatch.setenv(HARNESSES_DIR_ENV, str(path))
    return path


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A configs tree whose registry the test fills with ``write_registry``."""
    path = tmp_path / "configs"
    path.mkdir()
    return path


def write_registry(configs: Path, entries: dict) -> None:
    (configs / "harnesses.yaml").write_text(yaml.safe_dump({"harnesses": entries}, sort_keys=False))
