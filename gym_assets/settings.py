"""Default locations, overridable by flag or environment variable.

The CLI and the Dagster resources both call these, so `--configs`, `GYM_ASSETS_CONFIGS`,
`--data-root` and `GYM_ASSETS_DATA_ROOT` mean the same thing everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_CONFIGS_ROOT = "configs"
DEFAULT_DATA_ROOT = ".gym_assets"


def configs_root(value: str | Path | None = None) -> Path:
    """``value``, else ``$GYM_ASSETS_CONFIGS``, else ``./configs``."""
    return Path(value or os.environ.get("GYM_ASSETS_CONFIGS") or DEFAULT_CONFIGS_ROOT)


def data_root(value: str | Path | None = None) -> Path:
    """``value``, else ``$GYM_ASSETS_DATA_ROOT``, else ``./.gym_assets``."""
    return Path(value or os.environ.get("GYM_ASSETS_DATA_ROOT") or DEFAULT_DATA_ROOT)
