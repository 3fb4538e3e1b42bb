"""Bounded memory for passes over any number of rows: sorted runs spilled to a temp file.

A streaming pass that must remember something per row (which IDs it has seen, the tasks of a
plan in id order) keeps it in a small buffer; when the buffer is full it is sorted and written
out as one *run*, and the runs are read back merged. Memory then depends on the buffer size,
not on the number of rows.

Runs go to one anonymous temporary file per structure (``tempfile.TemporaryFile``: it has no
name, so it disappears when closed or when the process dies, and nobody else can open it). The
``directory`` is where it lives: the output's staging directory where the caller has one,
else the system temp directory (``TMPDIR``).
"""

from __future__ import annotations

import heapq
import marshal
import os
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

# Hashes held before they are written out: 512 KiB. They are kept apart by their top byte in
# 256 parts, so each part is read back alone: about 1/256 of all distinct hashes at a time
# (12,000 for 3 million rows), equal hashes always together, and nothing is ever sorted.
HASH_BUFFER = 1 << 16
_PARTS = 256

# Records per buffer, records per frame of a run on disk, and the most runs merged at once.
RECORD_BUFFER = 50_000
_FRAME = 256
MAX_FAN_IN = 64
_FRAME_HEADER = 4


def _temp_file(directory: Path | None) -> IO[bytes]:
    return tempfile.TemporaryFile(prefix=".gym-assets-spill-", dir=directory)


class HashSpill:
    """Signed 64-bit hashes (``hash(value)``), any number of them, in bounded memory.

    ``add`` collects, into one of 256 parts by the hash's top byte. When ``limit`` hashes are
    held, each part's distinct hashes are appended to a temp file, so a value repeated on every
    row costs no more than a unique one. ``distinct`` counts the different hashes part by part;
    with ``repeats=True``, ``repeated`` names the hashes added more than once (one repeated
    within a part before it is written is remembered then: memory per repeated value, never
    per row).
    """

    __slots__ = ("_directory", "_file", "_held", "_limit", "_parts", "_repeated", "_written")

    def __init__(
        self, directory: Path | None = None, limit: int | None = None, *, repeats: bool = False
    ):
        self._directory = directory
        self._file: IO[bytes] | None = None
        self._held = 0
        self._limit = limit or HASH_BUFFER
        self._parts = [array("q") for _ in range(_PARTS)]
        self._repeated: set[int] | None = set() if repeats else None
        # per write: where it starts, and where each part starts within it (in hashes)
        self._written: list[tuple[IO[bytes], int, array]] = []

    def add(self, value: int) -> None:
        self._parts[(value >> 56) & 0xFF].append(value)
        self._held += 1
        if self._held >= self._limit:
            self._write()

    def update(self, other: HashSpill) -> None:
        """Add every hash of ``other`` (what it has written is shared, not copied)."""
        self._written.extend(other._written)
        if self._repeated is not None and other._repeated is not None:
            self._repeated |= other._repeated
        for mine, theirs in zip(self._parts, other._parts, strict=True):
            mine.extend(theirs)
            self._held += len(theirs)
        if self._held >= self._limit:
            self._write()

    def _write(self) -> None:
        if self._file is None:
            self._file = _temp_file(self._directory)
        starts = array("I", [0])
        chunks = []
        for part in self._parts:
            unique = set(part)
            if self._repeated is not None and len(unique) < len(part):
                self._repeated.update(value for value, n in Counter(part).items() if n > 1)
            chunks.append(array("q", unique).tobytes())
            starts.append(starts[-1] + len(unique))
        handle = self._file
        offset = handle.seek(0, os.SEEK_END)
        handle.write(b"".join(chunks))
        handle.flush()
        self._written.append((handle, offset, starts))
        self._parts = [array("q") for _ in range(_PARTS)]
        self._held = 0

    def _groups(self) -> Iterator[array]:
        """Every hash, part by part (a hash is in one part only; written ones once per write)."""
        for index, held in enumerate(self._parts):
            group = array("q")
            for handle, offset, starts in self._written:
                first, last = starts[index], starts[index + 1]
                if last > first:
                    at = offset + first * group.itemsize
                    group.frombytes(os.pread(handle.fileno(), (last - first) * group.itemsize, at))
            group.extend(held)
            yield group

    def distinct(self) -> int:
        """How many different hashes were added."""
        return sum(len(set(group)) for group in self._groups())

    def repeated(self) -> set[int]:
        """The hashes added more than once (needs ``repeats=True``)."""
        if self._repeated is None:
            raise ValueError("this spill does not track repeats")
        found = set(self._repeated)
        for group in self._groups():
            if len(set(group)) < len(group):
                found.update(value for value, n in Counter(group).items() if n > 1)
        return found


class _Frames:
    """Records (tuples of strings) in frames of an anonymous temp file, read back in order."""

    def __init__(self, directory: Path | None):
        self._file = _temp_file(directory)

    def write(self, records: Iterable[tuple[Any, ...]]) -> tuple[int, int]:
        """Append ``records``; returns where they start and how many frames they fill."""
        handle = self._file
        offset = handle.seek(0, os.SEEK_END)
        frames = 0
        frame: list[tuple[Any, ...]] = []
        for record in records:
            frame.append(record)
            if len(frame) == _FRAME:
                self._write_frame(frame)
                frames, frame = frames + 1, []
        if frame:
            self._write_frame(frame)
            frames += 1
        handle.flush()
        return offset, frames

    def _write_frame(self, frame: list[tuple[Any, ...]]) -> None:
        # marshal: the fastest stdlib codec for tuples of strings; the file lives and dies with
        # this process, so no other Python version ever reads it.
        data = marshal.dumps(frame)
        self._file.write(len(data).to_bytes(_FRAME_HEADER, "little") + data)

    def read(self, offset: int, frames: int) -> Iterator[tuple[Any, ...]]:
        fd = self._file.fileno()
        for _ in range(frames):
            size = int.from_bytes(os.pread(fd, _FRAME_HEADER, offset), "little")
            yield from marshal.loads(os.pread(fd, size, offset + _FRAME_HEADER))
            offset += _FRAME_HEADER + size

    def close(self) -> None:
        self._file.close()


class _RecordBuffer:
    """Records (tuples of strings) held up to a limit, the rest written to one temp file."""

    def __init__(self, directory: Path | None = None, limit: int | None = None):
        self._buffer: list[tuple[Any, ...]] = []
        self._directory = directory
        self._frames: _Frames | None = None
        self._limit = limit or RECORD_BUFFER

    def _write(self, records: Iterable[tuple[Any, ...]]) -> tuple[int, int]:
        if self._frames is None:
            self._frames = _Frames(self._directory)
        return self._frames.write(records)

    def _read(self, segment: tuple[int, int]) -> Iterator[tuple[Any, ...]]:
        assert self._frames is not None, "only what was written is read"
        return self._frames.read(*segment)

    def close(self) -> None:
        """Drop what is on disk now rather than when the object is collected."""
        if self._frames is not None:
            self._frames.close()


class SortedRuns(_RecordBuffer):
    """An external sort: ``add`` records, then iterate them in order.

    At most ``limit`` records are held; a full buffer becomes a sorted run of ``_FRAME``-record
    frames on disk, and iteration merges the runs (``heapq.merge``), holding one frame of each.
    When there are ``MAX_FAN_IN`` runs they are merged into one first, so a merge never holds
    more than ``MAX_FAN_IN`` frames, whatever the number of records.
    """

    def __init__(self, directory: Path | None = None, limit: int | None = None):
        super().__init__(directory, limit)
        self._runs: list[tuple[int, int]] = []

    def add(self, record: tuple[Any, ...]) -> None:
        buffer = self._buffer
        buffer.append(record)
        if len(buffer) >= self._limit:
            buffer.sort()
            self._add_run(buffer)
            self._buffer = []

    def _add_run(self, ordered: Iterable[tuple[Any, ...]]) -> None:
        self._runs.append(self._write(ordered))
        if len(self._runs) >= MAX_FAN_IN:
            runs, self._runs = self._runs, []
            self._add_run(heapq.merge(*map(self._read, runs)))

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """Every record added so far, sorted (a record equal to another in either order)."""
        self._buffer.sort()
        if not self._runs:
            return iter(self._buffer)
        return heapq.merge(self._buffer, *map(self._read, self._runs))


class RecordLog(_RecordBuffer):
    """Records kept in the order they are appended: in memory up to ``limit``, then on disk.

    For a result that is produced once, in order, and read several times (a plan's sorted
    tasks: counted, previewed, written).
    """

    def __init__(self, directory: Path | None = None, limit: int | None = None):
        super().__init__(directory, limit)
        self._segments: list[tuple[int, int]] = []
        self.count = 0

    def append(self, record: tuple[Any, ...]) -> None:
        buffer = self._buffer
        buffer.append(record)
        self.count += 1
        if len(buffer) >= self._limit:
            self._segments.append(self._write(buffer))
            self._buffer = []

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        for segment in self._segments:
            yield from self._read(segment)
        yield from self._buffer
