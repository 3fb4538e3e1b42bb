"""Benchmark collation against a parse + canonical-dump + hash floor measured in the same run.

Generates a taskset JSONL (default 1,000,000 rows of about 500 bytes, with IDs) in a temp dir,
collates it through the real ``collate()`` (validation on: the routed single-agent schema plus
the resources server's schema), and prints rows/s, peak RSS and the ratio of collation time to
the floor. Bar: ratio <= 2.0 and peak RSS < 400 MB. The ratio is taken on CPU time (both
wall and CPU figures are printed): on a shared machine wall time mostly measures the neighbours.

    .venv/bin/python bench/collate.py [--rows N] [--keep]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from gym_assets.config.model import iter_declared_datasets
from gym_assets.tasks.collate import collate
from gym_assets.tasks.collation_model import CollationInput

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
RATIO_BAR = 2.0
RSS_BAR_MB = 400


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


def floor(path: Path) -> tuple[float, float]:
    """(wall, CPU) seconds to parse each line, dump it canonically and hash it: nothing else."""
    start, cpu = time.perf_counter(), time.process_time()
    digest = hashlib.sha256()
    with path.open("r", encoding="utf-8") as handle:
        for line in handle:
            text = json.dumps(
                json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False
            )
            digest.update(text.encode("utf-8"))
    return time.perf_counter() - start, time.process_time() - cpu


def bench_config() -> dict:
    return {
        "environment_server_routes": {"bench": "bench_environment"},
        "bench_resources": {
            "resources_servers": {
                "arith": {
                    "entrypoint": "app.py",
                    "datasets": [
                        {
                            "name": "bench",
                            "type": "train",
                            "jsonl_fpath": "bench.jsonl",
                            "taskset": "bench",
                        }
                    ],
                }
            }
        },
        "bench_agent": {
            "responses_api_agents": {
                "simple_agent": {
                    "entrypoint": "app.py",
                    "resources_server": {"type": "resources_servers", "name": "bench_resources"},
                }
            }
        },
        "bench_environment": {
            "environment_servers": {
                "single_agent_turn": {
                    "entrypoint": "app.py",
                    "agent_server": {"type": "responses_api_agents", "name": "bench_agent"},
                    "resources_server": {"type": "resources_servers", "name": "bench_resources"},
                }
            }
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-collate-"))
    try:
        source = work / "data" / "bench.jsonl"
        source.parent.mkdir()
        size = generate(source, args.rows)
        print(f"generated {args.rows} rows, {size / args.rows:.0f} bytes/row, in {work}")
        # The floor runs before and after collation and is averaged, so that a change in the
        # machine's load during the run does not favour either side.
        before = floor(source)
        config = bench_config()
        inputs = [CollationInput(d, source) for d in iter_declared_datasets(config)]
        start, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = collate(config, inputs, work / "out")
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        after = floor(source)
        floor_wall, floor_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        ratio = cpu / floor_cpu
        for name, w, c in (("floor", floor_wall, floor_cpu), ("collate", wall, cpu)):
            print(
                f"{name:8s} {args.rows / c:>10,.0f} rows/s CPU ({c:.2f} s)  "
                f"{args.rows / w:>10,.0f} rows/s wall ({w:.2f} s)"
            )
        print(f"ratio    {ratio:.2f} CPU (bar {RATIO_BAR}), {wall / floor_wall:.2f} wall")
        print(f"peak RSS {peak_mb:.0f} MB (bar {RSS_BAR_MB} MB)")
        print(f"rows written {report.rows}, tasks {report.tasks}")
        return 0 if ratio <= RATIO_BAR and peak_mb < RSS_BAR_MB else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
