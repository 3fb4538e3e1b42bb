"""The directory a local server keeps its state in, and scratch directories for throwaway ones.

A server's ``--root`` is the project's own: a start refuses a root that holds anything the
server did not write there, so that nothing of the user's is overwritten (a ``port`` file, a
log) or mistaken for a server's state.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gym_assets.errors import UserError

SCRATCH_PARENT = Path("/tmp")


def claim_root(root: Path, ours: frozenset[str]) -> None:
    """Refuse ``root`` unless it is absent or holds only the names in ``ours``, and unless the
    nearest directory that exists above it is a directory (so the server's own can be made)."""
    if root.exists():
        if not root.is_dir():
            raise UserError("is not a directory; choose another --root", path=root)
        foreign = sorted(path.name for path in root.iterdir() if path.name not in ours)
        if foreign:
            shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
            raise UserError(
                f"holds files the server did not create ({shown}); choose an empty or new --root",
                path=root,
            )
        return
    above = nearest_existing(root)
    if not above.is_dir():
        raise UserError(f"{above} is not a directory; choose another --root", path=root)


def nearest_existing(path: Path) -> Path:
    """The closest of ``path``'s parents that exists."""
    return next(parent for parent in path.parents if parent.exists())


@contextmanager
def scratch_root(prefix: str) -> Iterator[Path]:
    """A new directory under /tmp that other users may search but not list (mode 0711), removed
    with everything in it on the way out: under root, Postgres runs as another user, which must
    reach its cluster; a short path keeps the cluster's socket path within its limit."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=SCRATCH_PARENT))
    try:
        path.chmod(0o711)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
