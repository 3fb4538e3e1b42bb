"""Benchmark: plan a large benchmark through the real builder and serializer.

    python bench/plan.py                 # 1,000,000 tasks (about 500 bytes a row)
    python bench/plan.py --tasks 200000  # quick run

Prints tasks/s, the peak RSS of the process, and the ratio of the planning time to a floor
measured in the same run on the same file: read each line, parse it with the same parser, dump
it as canonical JSON and SHA-256 it -- the per-task work no planner can skip -- and nothing else
(no ids, no task conversion, no sorting, no output). Bar: ratio <= 1.5 and peak RSS < 500 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import orjson

from gym_assets.io import parse_json_bytes
from gym_assets.plans.build import PlanSpec, build_plan_from_file
from gym_assets.plans.canonical import canonical_json, digest
from gym_assets.plans.model import GymStamp
from gym_assets.plans.render import write_plan

MAX_RATIO = 1.5
MAX_RSS_MB = 500
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


class Timer:
    """Wall and CPU seconds of a block; the ratio uses CPU time, which other processes on a
    shared machine disturb far less than wall time."""

    def __enter__(self) -> Timer:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def floor(path: Path) -> int:
    """Read + parse + canonical dump + SHA-256 per row, nothing else."""
    count = 0
    with path.open("rb") as handle:
        for raw in handle:
            hashlib.sha256(canonical_json(parse_json_bytes(raw)).encode("utf-8")).hexdigest()
            count += 1
    return count


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: temp)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        rows_path, plan_path = Path(work) / "rows.jsonl", Path(work) / "plan.json"
        mean_bytes = generate(rows_path, args.tasks)
        print(
            f"rows: {args.tasks:,} in {rows_path.stat().st_size / 1e6:.0f} MB "
            f"({mean_bytes:.0f} bytes/row)"
        )
        with Timer() as floor_time:
            assert floor(rows_path) == args.tasks

        spec = PlanSpec("synthetic", "synthetic", GymStamp("bench", None), ("bench.yaml",))
        with Timer() as plan_time:
            plan = build_plan_from_file(rows_path, spec)
            write_plan(plan_path, plan)
        rss = peak_rss_mb()

        first = make_row(0, random.Random(20260101))
        assert len(plan.tasks) == args.tasks
        assert plan.digests[("synthetic", first["task_id"])] == digest(first)
        plan_mb = plan_path.stat().st_size / 1e6

    ratio = plan_time.cpu / floor_time.cpu
    for label, timer in (("floor (read+parse+dump+sha256)", floor_time), ("plan", plan_time)):
        print(
            f"{label}: {args.tasks / timer.cpu:,.0f} tasks/s CPU ({timer.cpu:.2f} s), "
            f"{args.tasks / timer.wall:,.0f} tasks/s wall ({timer.wall:.2f} s)"
        )
    print(f"  plan file: {plan_mb:.0f} MB")
    print(
        f"ratio plan/floor: {ratio:.2f} CPU, {plan_time.wall / floor_time.wall:.2f} wall "
        f"(bar <= {MAX_RATIO})"
    )
    print(f"peak RSS: {rss:.0f} MB (bar < {MAX_RSS_MB} MB)")
    met = ratio <= MAX_RATIO and rss < MAX_RSS_MB
    print("bar: met" if met else "bar: MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
