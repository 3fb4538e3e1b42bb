"""Benchmark: plan a large benchmark through the real ``gym-assets plan`` command.

    python bench/plan.py                          # 1,000,000 and 3,000,000 tasks (~500 B a row)
    python bench/plan.py --tasks 200000 --tasks 600000   # quick run

Runs the command in a fresh child process per size and prints tasks/s, the child's peak RSS,
and the ratio of its CPU time to a floor measured in the same run on the same file: read each
line, parse it with the same parser, dump it as canonical JSON and SHA-256 it -- the per-task
work no planner can skip -- and nothing else (no ids, no task conversion, no sorting, no
output). Bars: CPU ratio <= 1.5 at each size, peak RSS < 200 MB up to 1,000,000 tasks, and
peak RSS at the largest size <= 1.2 x the smallest (memory does not grow with tasks).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
from pathlib import Path

import orjson
from measure import Measured, Timer, measure_size, size_bars

from gym_assets.fileio import parse_json_bytes
from gym_assets.plans.canonical import canonical_json, digest

SIZES = [1_000_000, 3_000_000]
CONFIG = """\
synthetic_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      datasets:
        - {name: bench, type: benchmark, jsonl_fpath: rows.jsonl}
"""
WORDS = [
    "the",
    "of",
    "solve",
    "value",
    "integer",
    "return",
    "list",
    "string",
    "given",
    "compute",
    "each",
    "number",
    "café",
    "✓",
]


def make_row(index: int, rng: random.Random) -> dict:
    """A prepared row of about 500 bytes with its own id (ids are not in file order)."""
    text = " ".join(rng.choices(WORDS, k=30))
    return {
        "task_id": f"task-{(index * 2654435761) & 0xFFFFFFFF:08x}-{index:07d}",
        "responses_create_params": {
            "input": [
                {"role": "system", "content": "You are a careful assistant. Answer briefly."},
                {"role": "user", "content": f"Problem {index}: {text}?"},
            ],
            "temperature": 0.0,
        },
        "verifier_metadata": {
            "expected_answer": str(rng.randrange(10**9)),
            "tolerance": rng.choice([1e-06, 0.00001, 0.5, 2.5e-8]),
            "tags": rng.sample(WORDS, 3),
            "weight": rng.randrange(100),
        },
    }


def generate(path: Path, count: int) -> float:
    """Write ``count`` rows; returns the mean bytes per row."""
    rng = random.Random(20260101)
    size = 0
    with path.open("wb") as handle:
        for start in range(0, count, 10_000):
            chunk = b"".join(
                orjson.dumps(make_row(i, rng)) + b"\n"
                for i in range(start, min(count, start + 10_000))
            )
            size += len(chunk)
            handle.write(chunk)
    return size / count


def floor(path: Path) -> float:
    """CPU seconds to read + parse + canonical dump + SHA-256 each row, nothing else."""
    with Timer() as timer, path.open("rb") as handle:
        for raw in handle:
            hashlib.sha256(canonical_json(parse_json_bytes(raw)).encode("utf-8")).hexdigest()
    return timer.cpu


def check(plan: Path, tasks: int) -> None:
    """The plan lists every task once, the first generated row's with that row's digest."""
    first = make_row(0, random.Random(20260101))
    expected = f'"digest": "{digest(first)}",'.encode()
    wanted = f'"task_id": "{first["task_id"]}",'.encode()
    listed, last_digest, found = 0, b"", False
    with plan.open("rb") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith(b'"digest"'):
                listed, last_digest = listed + 1, line
            elif line == wanted:
                found = last_digest == expected
    assert listed == tasks and found, (listed, found)


def plan_size(work: Path, tasks: int, generated: Path) -> tuple[float, Measured]:
    out = work / f"plan-{tasks}.json"
    floor_cpu, measured = measure_size(floor, work, "plan", CONFIG, generated, tasks, out)
    check(out, tasks)
    print(
        f"{tasks:>10,} tasks: floor {tasks / floor_cpu:>9,.0f} tasks/s CPU ({floor_cpu:.2f} s); "
        f"plan {tasks / measured.cpu:>9,.0f} tasks/s CPU ({measured.cpu:.2f} s), "
        f"{tasks / measured.wall:>9,.0f} tasks/s wall ({measured.wall:.2f} s); plan file "
        f"{out.stat().st_size / 1e6:.0f} MB"
    )
    out.unlink()
    return floor_cpu, measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, action="append", help="a size (repeatable)")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: temp)")
    args = parser.parse_args()
    sizes = sorted(set(args.tasks or SIZES))
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        generated = Path(work) / "generated.jsonl"
        mean_bytes = generate(generated, sizes[-1])
        print(f"rows: {sizes[-1]:,} generated ({mean_bytes:.0f} bytes/row)")
        results = [plan_size(Path(work), tasks, generated) for tasks in sizes]
    return 0 if size_bars(sizes, results, "tasks") else 1


if __name__ == "__main__":
    sys.exit(main())
