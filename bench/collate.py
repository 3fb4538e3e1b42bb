"""Benchmark collation against a parse + canonical-dump + hash floor measured in the same run.

Generates a benchmark of 1,000,000 and 3,000,000 rows of about 530 bytes (with IDs) in a
configs tree of its own, and runs the real ``gym-assets collate`` on each size in a fresh child
process (validation on: the routed single-agent schema plus the resources server's schema).
Prints rows/s, the child's peak RSS and the ratio of its CPU time to the floor's (both wall and
CPU figures are printed; on a shared machine wall time mostly measures the neighbours).
Bars: CPU ratio <= 1.5 at each size, peak RSS < 200 MB up to 1,000,000 rows, and peak RSS at
the largest size <= 1.2 x the smallest (memory does not grow with rows).

    .venv/bin/python bench/collate.py [--rows N --rows M ...] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

from measure import Measured, Timer, measure_size, size_bars

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
]
SIZES = [1_000_000, 3_000_000]
CONFIG = """\
environment_server_routes: {bench: bench_environment}
error_on_agent_without_environment_server: true
bench_resources:
  resources_servers:
    arith:
      entrypoint: app.py
      datasets:
        - {name: bench, type: benchmark, jsonl_fpath: rows.jsonl, taskset: bench}
bench_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: bench_resources}
bench_environment:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: bench_agent}
      resources_server: {type: resources_servers, name: bench_resources}
"""


def generate(path: Path, rows: int) -> int:
    """Write ``rows`` task rows; returns the file size in bytes."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(rows):
            prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(35, 45)))
            row = {
                "task_id": f"task-{i:07d}",
                "responses_create_params": {
                    "input": [
                        {"role": "system", "content": "Answer with the number only."},
                        {"role": "user", "content": f"Question {i}: {prompt}?"},
                    ],
                    "temperature": rng.choice([0.0, 0.7, 1.0]),
                },
                "expected_answer": str(rng.randint(0, 10**6)),
                "verifier_metadata": {
                    "difficulty": rng.randint(1, 5),
                    "weight": rng.choice([1e-06, 0.5, 2.25e-05, 1.0]),
                    "tags": ["bench", rng.choice(WORDS)],
                },
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path.stat().st_size


def floor(path: Path) -> float:
    """CPU seconds to parse each line, dump it canonically and hash it: nothing else."""
    with Timer() as timer:
        digest = hashlib.sha256()
        with path.open("r", encoding="utf-8") as handle:
            for line in handle:
                text = json.dumps(
                    json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False
                )
                digest.update(text.encode("utf-8"))
    return timer.cpu


def collate_size(work: Path, rows: int, generated: Path) -> tuple[float, Measured]:
    """Collate the first ``rows`` rows through the command; (floor CPU, measurement)."""
    out = work / f"taskset-{rows}"
    floor_cpu, measured = measure_size(floor, work, "collate", CONFIG, generated, rows, out)
    report = json.loads((out / "collation_report.json").read_text())
    assert report["rows"] == rows and report["tasks"] == rows, report["rows"]
    print(
        f"{rows:>10,} rows: floor {rows / floor_cpu:>9,.0f} rows/s CPU ({floor_cpu:.2f} s); "
        f"collate {rows / measured.cpu:>9,.0f} rows/s CPU ({measured.cpu:.2f} s), "
        f"{rows / measured.wall:>9,.0f} rows/s wall ({measured.wall:.2f} s)"
    )
    shutil.rmtree(out)
    return floor_cpu, measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="a size (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.rows or SIZES))
    work = Path(tempfile.mkdtemp(prefix="bench-collate-"))
    try:
        generated = work / "generated.jsonl"
        size = generate(generated, sizes[-1])
        print(f"generated {sizes[-1]:,} rows, {size / sizes[-1]:.0f} bytes/row, in {work}")
        results = [collate_size(work, rows, generated) for rows in sizes]
        return 0 if size_bars(sizes, results) else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
