"""The files of one collection run, and the append-only JSONL logs behind them.

    <out>/rollouts.jsonl                      successes (measured, masked, unscored)
    <out>/rollouts_failures.jsonl             one line per failed attempt
    <out>/rollouts_materialized_inputs.jsonl  one line per planned rollout (the inventory)
    <out>/rollouts_aggregate_metrics.json     one entry per environment server
    <out>/rollouts_manifest.json              what the run is (``manifest.py``)
    <out>/rollouts_plan.json                  the plan it was pinned to (a copy)
    <out>/rollouts_result.json                what a scoreboard reads (``analysis.results``)
    <out>/captures/                           the gateway's per-rollout capture files, and
                                              each harness activation's network log
    <out>/report.html, <out>/report/          the run's HTML report and the records it links
    <out>/history/                            per-task snapshots of the runs made here

Records and failures are appended one complete line per ``write`` and flushed per rollout, so a
process killed midway loses only rollouts still in flight; at worst the last line is cut short,
and ``repair_tail`` drops such a line before a resume appends after it. Any other line that is
not a JSON object means the file was damaged: reading it is refused (``CorruptRunFile``), or
the file is moved aside as ``<name>.corrupt-<n>`` when the caller asks.

The run directory, ``captures/``, ``report/`` and ``history/`` are products
(``gym_assets.outputs``), each with the names it may hold (``foreign``). A run, fresh or
resumed, refuses to start while anything else is anywhere in the directory; then a fresh run
deletes only what a run writes here (``history/`` stays: it is what the next run compares
with), and any run rebuilds ``report/`` whole.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError, reported
from gym_assets.fileio import (
    PUBLISHED_FILE_MODE,
    atomic_writer,
    json_line,
    parse_json_bytes,
    write_all,
)
from gym_assets.limits import MAX_PRODUCT_NESTING
from gym_assets.outputs.lock import is_lock_leftover, lock_path
from gym_assets.outputs.markers import (
    CAPTURES,
    MARKER_NAME,
    RUN_HISTORY,
    RUN_REPORT,
    Kind,
    dir_marker,
)
from gym_assets.redaction import NOTHING, Redactor
from gym_assets.rollouts.episodes.network_logs import NETWORK_LOG_SUFFIX
from gym_assets.rollouts.gateway.capture import CAPTURE_SUFFIX, INCOMPLETE_SUFFIX
from gym_assets.user_files import open_input

DEFAULT_STEM = "rollouts"
REPORT_FILE = re.compile(r"\d+-\d+\.json")  # report/<task>-<rollout>.json, one per rollout
SNAPSHOT_FILE = re.compile(r"\d{8}T\d{6}\.\d{6}Z\.jsonl")  # history/<UTC time>.jsonl


def report_name(task: int, rollout: int) -> str:
    """The name of a rollout's file in ``report/`` (``REPORT_FILE``)."""
    return f"{task}-{rollout}.json"


_TEMP = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]+\.tmp")  # an atomic write's temp file
# What a run keeps in captures/: the gateway's captures and the harness sandbox's network logs
CAPTURE_FILE_SUFFIXES = (CAPTURE_SUFFIX, INCOMPLETE_SUFFIX, NETWORK_LOG_SUFFIX)


@dataclass(frozen=True)
class RunFiles:
    """Sibling paths derived from one output directory and stem."""

    out_dir: Path
    stem: str = DEFAULT_STEM

    @property
    def records(self) -> Path:
        return self.out_dir / f"{self.stem}.jsonl"

    @property
    def failures(self) -> Path:
        return self.out_dir / f"{self.stem}_failures.jsonl"

    @property
    def materialized_inputs(self) -> Path:
        return self.out_dir / f"{self.stem}_materialized_inputs.jsonl"

    @property
    def aggregate_metrics(self) -> Path:
        return self.out_dir / f"{self.stem}_aggregate_metrics.json"

    @property
    def manifest(self) -> Path:
        """What the run is (``manifest.py``)."""
        return self.out_dir / f"{self.stem}_manifest.json"

    @property
    def plan(self) -> Path:
        """A copy of the plan the run was pinned to."""
        return self.out_dir / f"{self.stem}_plan.json"

    @property
    def result(self) -> Path:
        """The run's result: model, outcomes, estimates (``analysis.results``)."""
        return self.out_dir / f"{self.stem}_result.json"

    @property
    def capture_dir(self) -> Path:
        return self.out_dir / "captures"

    @property
    def report(self) -> Path:
        return self.out_dir / "report.html"

    @property
    def report_dir(self) -> Path:
        """The files the report links to (one per rollout)."""
        return self.out_dir / "report"

    @property
    def history_dir(self) -> Path:
        return self.out_dir / "history"

    def outputs(self) -> tuple[Path, ...]:
        return (
            self.records,
            self.failures,
            self.materialized_inputs,
            self.aggregate_metrics,
            self.manifest,
            self.plan,
            self.result,
            self.report,
        )

    def logs(self) -> tuple[Path, ...]:
        """The files a resume reads back: the inventory and the two append-only logs."""
        return (self.materialized_inputs, self.records, self.failures)

    def _parts(self) -> dict[str, _Part]:
        """The subdirectories a run writes, each claimed like the run directory itself."""
        return {
            self.capture_dir.name: _Part(CAPTURES, _is_capture_file),
            self.report_dir.name: _Part(RUN_REPORT, REPORT_FILE.fullmatch),
            self.history_dir.name: _Part(RUN_HISTORY, SNAPSHOT_FILE.fullmatch),
        }

    def _part_of(self, name: str) -> _Part | None:
        """The part an entry of the run directory is: one of ``_parts``, or a rebuild of
        ``report/`` a killed run left beside it (the next rebuild sweeps it)."""
        parts = self._parts()
        if re.fullmatch(rf"\.{self.report_dir.name}\.(staging|retired)-.+", name):
            return parts[self.report_dir.name]
        return parts.get(name)

    def _is_ours(self, name: str) -> bool:
        """A file a run writes in the run directory: its files, their temp and quarantined
        copies, the marker, and the lock files of its parts when they hold no more than a pid."""
        if name in (lock_path(self.out_dir / part).name for part in self._parts()):
            return is_lock_leftover(self.out_dir / name)
        own = {path.name for path in self.outputs()} | {MARKER_NAME}
        return _written(name, own.__contains__) or any(
            re.fullmatch(rf"{re.escape(base)}\.corrupt-\d+", name) for base in own
        )

    def foreign(self) -> Path | None:
        """The first entry anywhere in the run directory that a run did not write; None if
        everything there is the run's own. Checked before a run writes anything, fresh or
        resumed: a run replaces its own files and rebuilds ``report/`` whole."""
        with reported(self.out_dir):
            for name in sorted(os.listdir(self.out_dir)):
                path = self.out_dir / name
                part = self._part_of(name)
                if part is not None:
                    found = _foreign_in(path, part)
                    if found is not None:
                        return found
                elif not self._is_ours(name):
                    return path
        return None

    def clear(self) -> None:
        """Delete what an earlier run wrote (quarantined copies stay); ``foreign`` must be None."""
        with reported(self.out_dir):
            for path in self.outputs():
                path.unlink(missing_ok=True)
            for directory in (self.capture_dir, self.report_dir):
                _clear_dir(directory)

    def quarantine(self, path: Path) -> Path:
        """Move a damaged file aside as ``<name>.corrupt-<n>`` (the first free n)."""
        number = 1
        while (moved := path.with_name(f"{path.name}.corrupt-{number}")).exists():
            number += 1
        with reported(path):
            os.rename(path, moved)
        return moved


@dataclass(frozen=True)
class _Part:
    """A subdirectory of a run: its product kind and the names of the files it holds."""

    kind: Kind
    holds: Callable[[str], object]


def _is_capture_file(name: str) -> bool:
    return name.endswith(CAPTURE_FILE_SUFFIXES)


def _written(name: str, holds: Callable[[str], object]) -> bool:
    """``name`` is a file ``holds`` accepts, or a temp copy of one a killed writer left."""
    temp = _TEMP.fullmatch(name)
    return bool(holds(name)) or (temp is not None and bool(holds(temp["name"])))


def _foreign_in(directory: Path, part: _Part) -> Path | None:
    """The directory itself when it is no real directory marked as ``part`` (an empty one is
    claimed when used), else its first entry that is not a regular file ``part`` holds."""
    if not stat.S_ISDIR(os.lstat(directory).st_mode):
        return directory
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    if entries and dir_marker(directory) != part.kind.id:
        return directory
    for entry in entries:
        ours = _written(entry.name, lambda base: base == MARKER_NAME or part.holds(base))
        if not (ours and entry.is_file(follow_symlinks=False)):
            return Path(entry.path)
    return None


def _clear_dir(directory: Path) -> None:
    """Delete the files of a product directory of ours, keeping its marker."""
    if directory.is_dir():
        for entry in os.scandir(directory):
            if entry.name != MARKER_NAME:
                os.unlink(entry.path)


def write_jsonl_atomic(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with atomic_writer(path, "wb") as handle:
        handle.writelines(json_line(row) for row in rows)


class CorruptRunFile(UserError):
    """A run file has a line that is not a JSON object (other than a cut-short last line)."""


def read_jsonl(path: Path, lines: range | None = None) -> Iterator[dict[str, Any]]:
    """Every object line of a run file, strictly; with ``lines``, only the lines at those
    positions (from 0) are parsed and yielded, the others read past (a shard reads its span
    of an inventory whose bytes a digest has vouched for).

    The one defect tolerated is a last line without its newline, which a killed writer left
    (or a writer is appending right now): it is skipped. Any other line that is not a JSON
    object raises ``CorruptRunFile`` naming the file and line.
    """
    if not os.path.lexists(path):
        return
    with open_input(path, "run file") as handle:  # a FIFO or device there is refused by name
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                return
            if lines is not None and number - 1 not in lines:
                if number > lines.stop:
                    return
                continue
            if raw.isspace():
                continue
            try:
                value = parse_json_bytes(raw, MAX_PRODUCT_NESTING)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise CorruptRunFile(
                    "damaged line (not a JSON object); resume with --quarantine-corrupt (in "
                    "Dagster: harness_runner quarantine_corrupt) to move the file aside (its "
                    "rollouts run again), or start a fresh run",
                    path=path,
                    line=number,
                )
            yield value


def repair_tail(path: Path) -> bool:
    """Cut a last line that a killed writer left without its newline; True if cut."""
    if not path.is_file():
        return False
    size = path.stat().st_size
    if size == 0:
        return False
    with path.open("rb+") as handle:
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        block = min(size, 1 << 16)
        end = size
        while True:
            start = max(0, end - block)
            handle.seek(start)
            chunk = handle.read(end - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return True
            if start == 0:
                handle.truncate(0)
                return True
            end = start


def sort_jsonl(path: Path, key: Callable[[dict[str, Any]], Any]) -> bool:
    """Rewrite a run log with its lines in ``key`` order (stable), atomically; False when they
    already are (nothing written). Holds a key and an offset per line, never the rows."""
    if not path.is_file():
        return False
    index: list[tuple[Any, int, int]] = []
    with reported(path), path.open("rb") as handle:
        offset = 0
        for raw in handle:
            if raw.endswith(b"\n") and not raw.isspace():
                row = parse_json_bytes(raw, MAX_PRODUCT_NESTING)
                index.append((key(row), offset, len(raw)))
            offset += len(raw)
    ordered = sorted(index, key=lambda entry: entry[0])
    if ordered == index:
        return False
    with reported(path), path.open("rb") as source, atomic_writer(path, "wb") as target:
        for _, start, size in ordered:
            source.seek(start)
            target.write(source.read(size))
    return True


class AppendLog:
    """An append-only JSONL file: each row goes to the kernel as one ``write`` of a whole line.

    No user-space buffer: a killed process leaves every written row intact (only a write in
    progress can be cut short). A row the OS refuses part-way (a full disk, a quota) is cut
    back off, so the file never ends in half a row. ``close`` fsyncs, for durability beyond the
    process. One writer: the run's lock keeps others out.
    """

    def __init__(self, path: Path, redactor: Redactor = NOTHING):
        self._path = path
        self._redactor = redactor  # the run's secrets never reach the file
        with reported(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PUBLISHED_FILE_MODE)

    def write(self, row: dict[str, Any]) -> None:
        """Append ``row`` whole, or leave the file as it was and raise ``OutputError``."""
        data = self._redactor.data(json_line(row))
        with reported(self._path):
            end = os.lseek(self._fd, 0, os.SEEK_END)
            try:
                write_all(self._fd, data)
            except OSError:
                with contextlib.suppress(OSError):  # if this fails too, resume cuts the tail
                    os.ftruncate(self._fd, end)
                raise

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)
