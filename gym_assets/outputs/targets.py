"""What an output is: a path, the kind of product it holds, and the roots it must respect."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gym_assets.outputs.markers import Kind


class Roots(Protocol):
    """The configs tree (read, never a product) and the data root (where products live).

    ``gym_assets.workspace.Workspace`` is the one implementation; it sits above this package,
    which therefore names only the two attributes it reads.
    """

    @property
    def configs(self) -> Path: ...

    @property
    def data(self) -> Path: ...


def is_within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it, comparing absolute paths without following links."""
    path, root = Path(os.path.abspath(path)), Path(os.path.abspath(root))
    return path == root or root in path.parents


@dataclass(frozen=True)
class Target:
    """One output path.

    ``flag`` is the option that named it (for the hint in a refusal); ``data_root`` is set for
    a product under the data root, below which no path component may be a symbolic link. The
    path is made absolute, so that ``.`` or ``x/..`` has a name and a parent to lock and stage
    beside.
    """

    path: Path
    kind: Kind
    configs_root: Path
    flag: str | None = "--out"
    data_root: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(os.path.abspath(self.path)))

    @classmethod
    def of(cls, path: str | Path, kind: Kind, roots: Roots, flag: str = "--out") -> Target:
        """A product under the data root when ``path`` lies there, else an explicit output."""
        path = Path(path)
        if is_within(path, roots.data) and not is_within(roots.data, path):
            return cls(path, kind, roots.configs, flag=None, data_root=roots.data)
        return cls(path, kind, roots.configs, flag=flag)

    def elsewhere_hint(self) -> str:
        """How to get past a refusal of the path itself: another path (never "remove it":
        the path may be the configs, a device or a link)."""
        return "choose another data root" if self.flag is None else f"choose another {self.flag}"

    def cleanup_hint(self) -> str:
        """How to get past a refusal of what the path holds: another path, or removing it."""
        if self.flag is None:
            return (
                "remove it yourself or choose another data root (outputs written before "
                "gym-assets marked its products are refused too)"
            )
        return f"choose another {self.flag} or remove it yourself"

    def busy_hint(self) -> str:
        if self.flag is None:
            return "wait for it to finish"
        return f"wait for it or choose another {self.flag}"
