"""Fixtures for Dagster tests: a real ephemeral instance and a private copy of the configs."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.defs.resources import GymWorkspace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A copy of the bundled configs that a test may edit."""
    target = tmp_path / "configs"
    shutil.copytree(REPO / "configs", target)
    return target


@pytest.fixture
def workspace(configs: Path, tmp_path: Path) -> GymWorkspace:
    return GymWorkspace(configs_root=str(configs), data_root=str(tmp_path / "data"))


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst
