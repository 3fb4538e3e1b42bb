"""Fixtures that write config trees as YAML text and load them."""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from gym_assets.config.loader import LoadedConfig, load_configs

WriteConfigs = Callable[..., Path]


@pytest.fixture
def write_configs(tmp_path: Path) -> WriteConfigs:
    """``write_configs({"a.yaml": text, ...})`` writes dedented files below a configs root."""
    root = tmp_path / "configs"
    root.mkdir()

    def write(files: dict[str, str]) -> Path:
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text), encoding="utf-8")
        return root

    return write


@pytest.fixture
def load(write_configs: WriteConfigs) -> Callable[..., LoadedConfig]:
    """Write the files, then load them; deprecation warnings are recorded, not shown."""

    def write_and_load(files: dict[str, str]) -> LoadedConfig:
        root = write_configs(files)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return load_configs(root)

    return write_and_load
