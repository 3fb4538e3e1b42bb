"""What resolving the configs warned about, said on stderr by every command that loads them.

The loader's ``DeprecationWarning`` is hidden by Python's default filters outside ``__main__``,
so a command would otherwise load a config with a generated relay in silence. Each warning
becomes one line; the full text, with the blocks to paste, is ``gym-assets config show``'s.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gym_assets.config.relays import MIGRATE_COMMAND
from gym_assets.display import shown

if TYPE_CHECKING:
    from gym_assets.config.loader import LoadedConfig


def say_config_warnings(loaded: LoadedConfig) -> LoadedConfig:
    """Print one ``warning:`` line per resolution warning of ``loaded``; return ``loaded``."""
    for message in loaded.warnings:
        first = message.splitlines()[0]
        print(
            f"warning: {shown(first)} Run `{MIGRATE_COMMAND}`; `gym-assets config show` prints "
            "the blocks to paste.",
            file=sys.stderr,
        )
    return loaded
