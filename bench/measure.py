"""What the collate and plan benches share: a size schedule, a CPU/wall timer, and the real
``gym-assets`` command run in a child process whose peak RSS is read from its rusage.

Peak RSS is a per-process high-water mark, so each size gets a fresh process: what it reports
is the command's own peak (interpreter and imports included), not what the bench held before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

FLAT_RSS = 1.2  # bar: peak RSS at the largest size <= 1.2 x the smallest
RSS_AT_1M_MB = 200  # bar: peak RSS under 200 MB up to a million rows
CPU_RATIO = 1.5  # bar: the command's CPU <= 1.5 x the floor measured in the same run

# CPU and wall time are counted once the command line's modules are imported: the startup of
# the interpreter and the CLI is the same for every size and is not the command's work.
_CHILD = """\
import json, sys, time
from gym_assets.cli import build_parser, main
report, argv = sys.argv[1], sys.argv[2:]
build_parser()
wall, cpu = time.perf_counter(), time.process_time()
code = main(argv)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
with open(report, "w") as handle:
    json.dump({"wall": wall, "cpu": cpu}, handle)
sys.exit(code)
"""


class Timer:
    """Wall and CPU seconds of a block; ratios use CPU time, which other processes on a shared
    machine disturb far less than wall time."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


@dataclass(frozen=True)
class Measured:
    cpu: float  # seconds of CPU inside the command (after the interpreter started)
    wall: float
    peak_rss_mb: float  # the child's whole peak resident memory (ru_maxrss)


def run_command(argv: Sequence[str]) -> Measured:
    """Run ``gym-assets ARGV`` in a fresh interpreter; exit with its message if it fails."""
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "timing.json"
        errors = Path(work) / "stderr.txt"
        with errors.open("wb") as stderr:
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(report), *argv],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.stderr.write(errors.read_text(errors="replace"))
            sys.exit(f"gym-assets {' '.join(argv)} failed with exit code {child.returncode}")
        timing = json.loads(report.read_text())
    return Measured(timing["cpu"], timing["wall"], usage.ru_maxrss / 1024)  # Linux: KiB


def measure_size(
    floor: Callable[[Path], float],
    work: Path,
    command: str,
    config: str,
    source: Path,
    size: int,
    out: Path,
) -> tuple[float, Measured]:
    """Run ``gym-assets COMMAND --benchmark bench`` on the first ``size`` rows of ``source``
    (in a configs tree of its own, declared by ``config`` with ``rows.jsonl``); return the
    floor's CPU seconds on the same rows and the command's measurement. The floor runs before
    and after the command and is averaged, so that a change in the machine's load during the
    run does not favour either side."""
    configs = work / f"configs-{size}"
    rows = configs / "bench" / "rows.jsonl"
    rows.parent.mkdir(parents=True)
    (rows.parent / "config.yaml").write_text(config)
    write_prefix(source, rows, size)
    before = floor(rows)
    measured = run_command(
        [command, "--benchmark", "bench", "--configs", str(configs), "--data-root",
         str(work / "data"), "--out", str(out)]
    )  # fmt: skip
    floor_cpu = (before + floor(rows)) / 2
    shutil.rmtree(configs)
    return floor_cpu, measured


def write_prefix(source: Path, target: Path, rows: int) -> None:
    """The first ``rows`` lines of ``source`` (generators are deterministic, so this is what
    generating ``rows`` rows would write)."""
    with source.open("rb") as reader, target.open("wb") as writer:
        for _, line in zip(range(rows), reader, strict=False):
            writer.write(line)


def size_bars(
    sizes: Sequence[int], results: Sequence[tuple[float, Measured]], unit: str = "rows"
) -> bool:
    """Print the per-size lines and the memory bars; True when every bar is met.

    ``results`` holds, per size, the floor's CPU seconds and the command's measurement.
    """
    met = True
    for rows, (floor_cpu, measured) in zip(sizes, results, strict=True):
        ratio = measured.cpu / floor_cpu
        rss_bar = measured.peak_rss_mb < RSS_AT_1M_MB or rows > 1_000_000
        met &= ratio <= CPU_RATIO and rss_bar
        print(
            f"{rows:>10,} {unit}: CPU ratio {ratio:.2f} (bar <= {CPU_RATIO}), peak RSS "
            f"{measured.peak_rss_mb:.0f} MB"
            + ("" if rows > 1_000_000 else f" (bar < {RSS_AT_1M_MB} MB)")
        )
    if len(sizes) > 1:
        growth = results[-1][1].peak_rss_mb / results[0][1].peak_rss_mb
        met &= growth <= FLAT_RSS
        print(f"peak RSS {sizes[-1]:,} / {sizes[0]:,} {unit}: {growth:.2f} (bar <= {FLAT_RSS})")
    print("bars: met" if met else "bars: MISSED")
    return met
