"""Claim an output for one product: check the path, lock it, and write only what is ours.

An output path is taken when it is missing (created, parents too), empty (a directory with
no entries, a 0-byte file), or already holds this kind of product. A product of another kind,
or anything else that is not empty, is refused; nothing is written or deleted then.
"""

from __future__ import annotations

import contextlib
import enum
import glob
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from gym_assets.errors import OutputError, reported
from gym_assets.fileio import PUBLISHED_DIR_MODE, atomic_writer
from gym_assets.outputs.lock import held
from gym_assets.outputs.markers import (
    MARKER_NAME,
    dir_marker,
    file_marker,
    label_of,
    write_dir_marker,
    write_file_marker,
)
from gym_assets.outputs.paths import check_location
from gym_assets.outputs.targets import Target

_INLINE_MARKER_WINDOW = 4096  # where an inline marker must appear: the top of the file


class State(enum.Enum):
    MISSING = "missing"
    EMPTY = "empty"
    OURS = "ours"


def _not_ours(target: Target, found: str | None) -> OutputError:
    if found is not None and found != target.kind.id:
        what = f"holds {label_of(found)}, not {target.kind.label}"
    else:
        what = "exists and was not written by gym-assets (no product marker)"
    return OutputError(f"{what}; {target.cleanup_hint()}", path=target.path)


def dir_state(target: Target) -> State:
    """What ``target`` holds now; refuses (``OutputError``) when it is not ours to write."""
    with reported(target.path):
        try:
            with os.scandir(target.path) as entries:
                empty = next(entries, None) is None
        except FileNotFoundError:
            return State.MISSING
    if empty:
        return State.EMPTY
    found = dir_marker(target.path)
    if found != target.kind.id:
        raise _not_ours(target, found)
    return State.OURS


def preflight_dir(target: Target) -> State:
    """Refuse a directory output before any work is done for it; the claim checks again."""
    return dir_state(target) if check_location(target, directory=True) else State.MISSING


@contextlib.contextmanager
def _locked(
    target: Target,
    *,
    directory: bool,
    wait_s: float = 0.0,
    waiting: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Check the path, create its parents, hold its lock, and check again under the lock."""
    check_location(target, directory=directory)
    with reported(target.path):
        target.path.parent.mkdir(parents=True, exist_ok=True)
    with held(target, wait_s, waiting):
        check_location(target, directory=directory)
        yield


def _only_marker_left(path: Path) -> bool:
    with contextlib.suppress(OSError):
        return os.listdir(path) == [MARKER_NAME]
    return False


@contextlib.contextmanager
def claimed_dir(
    target: Target, *, wait_s: float = 0.0, waiting: Callable[[str], None] | None = None
) -> Iterator[bool]:
    """Hold a product directory written in place; yields True when this call created it.

    The directory is created and marked when missing or empty. If the block fails before
    writing anything into it, the marker (and a directory this call created) is removed again.
    ``wait_s``, ``waiting``: how long to wait for another writer, and who is told (``lock.held``).
    """
    with _locked(target, directory=True, wait_s=wait_s, waiting=waiting):
        state = dir_state(target)
        with reported(target.path):
            if state is State.MISSING:
                target.path.mkdir()
            if state is not State.OURS:
                write_dir_marker(target.path, target.kind)
        try:
            yield state is State.MISSING
        except BaseException:
            if state is not State.OURS and _only_marker_left(target.path):
                with contextlib.suppress(OSError):
                    (target.path / MARKER_NAME).unlink()
                    if state is State.MISSING:
                        target.path.rmdir()
            raise


@contextlib.contextmanager
def renewed_dir(target: Target) -> Iterator[Path]:
    """Hold a product directory that each use fills afresh: what the previous use left is
    removed first, and the directory itself is removed when this use leaves nothing in it."""
    with claimed_dir(target):
        with reported(target.path), os.scandir(target.path) as entries:
            for entry in entries:
                if entry.name == MARKER_NAME:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        try:
            yield target.path
        finally:
            if _only_marker_left(target.path):
                with contextlib.suppress(OSError):
                    (target.path / MARKER_NAME).unlink()
                    target.path.rmdir()


def claim_dir(target: Target) -> bool:
    """Create and mark ``target`` if missing or empty, or accept it as ours; True if created."""
    with claimed_dir(target) as created:
        return created


def _leftover_prefix(target: Target, role: str) -> str:
    return f".{target.path.name}.{role}-"


def _sweep_leftovers(target: Target) -> None:
    """Remove the staging and retired copies a killed run left beside the output (ours only:
    marked with this kind, or empty)."""
    parent = target.path.parent
    for role in ("staging", "retired"):
        pattern = glob.escape(str(parent / _leftover_prefix(target, role))) + "*"
        for name in glob.glob(pattern, include_hidden=True):
            leftover = Path(name)
            if not stat.S_ISDIR(os.lstat(leftover).st_mode):
                continue
            if dir_marker(leftover) == target.kind.id or not os.listdir(leftover):
                shutil.rmtree(leftover, ignore_errors=True)


def _swap_in(staging: Path, target: Target) -> None:
    """Put ``staging`` at the output; retire the old directory only if it is ours."""
    path = target.path
    state = dir_state(target)
    with reported(path):
        if state is State.EMPTY:
            path.rmdir()
        if state is not State.OURS:
            os.rename(staging, path)
            return
        retired = Path(
            tempfile.mkdtemp(prefix=_leftover_prefix(target, "retired"), dir=path.parent)
        )
        os.rename(path, retired)
        try:
            os.rename(staging, path)
        except OSError:
            os.rename(retired, path)
            raise
    shutil.rmtree(retired, ignore_errors=True)


@contextlib.contextmanager
def rebuilt_dir(target: Target) -> Iterator[Path]:
    """Yield a marked staging directory beside the output; swap it in when the block succeeds.

    The output is refused before any work when it is not ours; a failed block leaves it as it
    was, and the staging directory is removed either way.
    """
    with _locked(target, directory=True):
        dir_state(target)
        with reported(target.path):
            _sweep_leftovers(target)
            prefix = _leftover_prefix(target, "staging")
            staging = Path(tempfile.mkdtemp(prefix=prefix, dir=target.path.parent))
        try:
            with reported(target.path):
                staging.chmod(PUBLISHED_DIR_MODE)  # mkdtemp is owner-only; products are readable
                write_dir_marker(staging, target.kind)
            yield staging
            _swap_in(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _file_digests(target: Target, inline_marker: bytes | None) -> set[str]:
    """Digests the file may keep in its marker while being replaced; refuses a file not ours."""
    path = target.path
    with reported(path):
        try:
            if os.lstat(path).st_size == 0:
                return set()
        except FileNotFoundError:
            return set()
        if inline_marker is not None:
            with path.open("rb") as handle:
                if inline_marker in handle.read(_INLINE_MARKER_WINDOW):
                    return set()
            raise _not_ours(target, None)
        marker = file_marker(path)
        if marker is None or marker.kind_id != target.kind.id:
            raise _not_ours(target, marker.kind_id if marker else None)
        current = _sha256(path)
    if current not in marker.sha256:
        raise OutputError(
            f"was changed after gym-assets wrote it; {target.cleanup_hint()}", path=path
        )
    return {current}


def write_file(
    target: Target, pieces: Iterable[bytes], *, inline_marker: bytes | None = None
) -> str:
    """Write a single-file product atomically from ``pieces``; returns the sha256 of its bytes.

    With ``inline_marker`` the file marks itself (a generated page that says so near its top);
    otherwise the marker beside it lists the digest, and while the new file is renamed into
    place it lists the old one too, so an interrupted write never turns ours into foreign.
    """
    with _locked(target, directory=False):
        previous = _file_digests(target, inline_marker)
        digest = hashlib.sha256()

        def mark_both() -> None:
            if inline_marker is None:
                write_file_marker(target.path, target.kind, {*previous, digest.hexdigest()})

        with atomic_writer(target.path, "wb", before_replace=mark_both) as handle:
            for piece in pieces:
                digest.update(piece)
                handle.write(piece)
        if inline_marker is None:
            write_file_marker(target.path, target.kind, {digest.hexdigest()})
    return digest.hexdigest()
