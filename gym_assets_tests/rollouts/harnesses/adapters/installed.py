"""The bundled registry's ``cli`` harnesses as tests use them: a test that runs the real
program skips, saying how to install it, when its install folder lacks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.rollouts.harnesses.adapters import adapter_named
from gym_assets.rollouts.harnesses.registry import HARNESSES_DIR_ENV, Harness, load_harnesses

REPO = Path(__file__).resolve().parents[4]


def installed_harness(name: str) -> Harness:
    """The registry entry ``name`` of configs/harnesses.yaml, or a skip when it has none or
    its program is missing from the install folder."""
    registry = load_harnesses(load_configs(REPO / "configs"))
    harness = registry.get(name)
    if harness is None or harness.adapter is None or harness.install_dir is None:
        pytest.skip(f"configs/harnesses.yaml has no cli harness '{name}'")
    program = adapter_named(harness.adapter).executable(harness.install_dir)
    if not program.exists():
        pytest.skip(
            f"harness '{name}' is not installed ({program} is missing): run `gym-assets harness "
            f"install {name}` or point {HARNESSES_DIR_ENV} at a folder holding it"
        )
    return harness
