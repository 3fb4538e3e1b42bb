"""Adapters that only say where a test package's program lives: the installer asks an adapter
for nothing else (these harnesses are installed and listed, never run)."""

from __future__ import annotations

from pathlib import Path


class ProgramOnly:
    supports = frozenset({("chat", False)})

    def __init__(self, name: str, relative: str) -> None:
        self.name = name
        self.relative = relative

    def executable(self, install_dir: Path) -> Path:
        return install_dir / self.relative
