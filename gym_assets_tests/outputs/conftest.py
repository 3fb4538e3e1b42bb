"""A configs root and a data root in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.outputs.targets import Roots


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "benchmark.yaml").write_text("{}\n")
    return Roots(configs=configs, data=tmp_path / "data")
