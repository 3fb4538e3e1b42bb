"""Where an output may not be: on a link, a device, a FIFO or a socket, or over the configs.

Checks use ``lstat``: a symbolic link at the output path is refused rather than followed (it
could point anywhere), and below the data root every existing component must be a real
directory, so a product can never be written outside it through a link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gym_assets.errors import OutputError, reported
from gym_assets.outputs.targets import Target

_SPECIAL = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_configs_overlap(target: Target) -> None:
    path, root = target.path.resolve(), target.configs_root.resolve()
    if path == root:
        where = "is the configs root"
    elif root in path.parents:
        where = f"is inside the configs root {target.configs_root}"
    elif path in root.parents:
        where = f"contains the configs root {target.configs_root}"
    else:
        return
    raise OutputError(
        f"{where}; products are never written over configs; {target.elsewhere_hint()}",
        path=target.path,
    )


def _refuse_links_below(target: Target, root: Path) -> None:
    current = Path(os.path.abspath(root))
    for part in Path(os.path.abspath(target.path)).relative_to(current).parts:
        current /= part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise OutputError(
                f"{current} is a symbolic link; products under the data root are written only "
                "through real directories",
                path=target.path,
            )


def check_location(target: Target, *, directory: bool) -> bool:
    """Refuse a path no product may take; True when something exists there already.

    ``directory`` says what the product is, so a file where a directory is expected (or the
    reverse) is refused too.
    """
    _refuse_configs_overlap(target)
    if target.data_root is not None:
        _refuse_links_below(target, target.data_root)
    with reported(target.path):
        try:
            mode = os.lstat(target.path).st_mode
        except FileNotFoundError:
            return False
    for test, what in _SPECIAL:
        if test(mode):
            raise OutputError(
                f"is {what}; gym-assets writes only regular files and directories; "
                f"{target.elsewhere_hint()}",
                path=target.path,
            )
    if directory and not stat.S_ISDIR(mode):
        raise OutputError(
            f"is a file, not a directory; {target.elsewhere_hint()}", path=target.path
        )
    if not directory and stat.S_ISDIR(mode):
        raise OutputError(
            f"is a directory, not a file; {target.elsewhere_hint()}", path=target.path
        )
    return True
