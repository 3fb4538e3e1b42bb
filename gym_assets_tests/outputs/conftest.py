"""A configs root and a data root in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.workspace import Workspace


@pytest.fixture
def roots(tmp_path: Path) -> Workspace:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "benchmark.yaml").write_text("{}\n")
    return Workspace(configs=configs, data=tmp_path / "data")
