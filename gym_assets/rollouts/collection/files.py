"""The files of one collection run, and the append-only JSONL logs behind them.

    <out>/rollouts.jsonl                      successes (measured, masked, unscored)
    <out>/rollouts_failures.jsonl             one line per failed attempt
    <out>/rollouts_materialized_inputs.jsonl  one line per planned rollout (the inventory)
    <out>/rollouts_aggregate_metrics.json     one entry per environment server
    <out>/captures/                           the gateway's per-rollout capture files

Records and failures are appended one complete line per ``write`` and flushed per rollout, so a
process killed midway loses only rollouts still in flight; at worst the last line is cut short,
and ``repair_tail`` drops such a line before a resume appends after it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.io import PUBLISHED_FILE_MODE, atomic_writer, json_line, parse_json_bytes

DEFAULT_STEM = "rollouts"


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
    def capture_dir(self) -> Path:
        return self.out_dir / "captures"

    def outputs(self) -> tuple[Path, ...]:
        return (self.records, self.failures, self.materialized_inputs, self.aggregate_metrics)


def write_jsonl_atomic(path: Path, rows: list[dict[str, Any]]) -> None:
    with atomic_writer(path, "wb") as handle:
        handle.writelines(json_line(row) for row in rows)


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete, parseable object line; a cut-short last line is skipped, not fatal."""
    if not path.is_file():
        return
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n") or raw.isspace():
                continue
            try:
                value = parse_json_bytes(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
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


class AppendLog:
    """An append-only JSONL file: each row goes to the kernel as one ``write`` of a whole line.

    No user-space buffer: a killed process leaves every written row intact (only a write in
    progress can be cut short). ``close`` fsyncs, for durability beyond the process.
    """

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PUBLISHED_FILE_MODE)

    def write(self, row: dict[str, Any]) -> None:
        data = memoryview(json_line(row))
        while data:
            data = data[os.write(self._fd, data) :]

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)


def run_dir(data_root: Path, benchmark: str, harness: str) -> Path:
    """Where the Dagster ``rollouts`` asset keeps the run of one benchmark × harness."""
    return Path(data_root) / "rollouts" / benchmark / harness
