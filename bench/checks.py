"""Benchmark the evidence inspector on a generated bundle of conformant rollout records.

Each size runs in a fresh child process (peak RSS is a per-process high-water mark), which
generates a bundle of N conformant records (the test suite's baseline record with per-record
identities, about 6 KB each), inspects it through the real ``inspect_bundle`` (all 56 artifact
checks per record, streamed results, content-addressed publish) and reports records/s and peak
RSS. Running a small and a large bundle shows whether memory grows with the bundle: it should
not, because records are checked and written one at a time.

    .venv/bin/python bench/checks.py [--records 10000] [--small 2000]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def generate(path: Path, records: int) -> int:
    """Write ``records`` conformant rows with distinct identities; returns the file size."""
    from gym_assets_tests.conformance.fixtures import baseline_record

    template = baseline_record()
    with path.open("w", encoding="utf-8") as handle:
        for i in range(records):
            record = dict(template, _ng_task_index=i)
            trajectory = dict(template["ng_trajectory"], task_id=str(i), rollout_id=f"{i}-0")
            trajectory["turns"] = [
                dict(turn, task_id=str(i), rollout_id=f"{i}-0") for turn in trajectory["turns"]
            ]
            record["ng_trajectory"] = trajectory
            handle.write(json.dumps(record) + "\n")
    return path.stat().st_size


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(records: int) -> dict[str, float]:
    """Measure one bundle size in this process."""
    from gym_assets.conformance.inspection import inspect_bundle

    with tempfile.TemporaryDirectory() as tmp:
        bundle = Path(tmp) / "rollouts.jsonl"
        size = generate(bundle, records)
        rss_before = peak_rss_mb()
        wall, cpu = time.perf_counter(), time.process_time()
        inspection = inspect_bundle(bundle, Path(tmp) / "out")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        assert inspection.gate_met and inspection.summary["records"] == records
        return {
            "records": records,
            "bundle_mb": size / 2**20,
            "wall_s": wall,
            "cpu_s": cpu,
            "records_per_s": records / wall,
            "rss_before_mb": rss_before,
            "peak_rss_mb": peak_rss_mb(),
        }


def measure(records: int) -> dict[str, float]:
    """Run one size in a fresh interpreter so its peak RSS is its own."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(records)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=2_000, help="size to compare memory with")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    runs = [measure(n) for n in sorted({args.small, args.records})]
    print("records  bundle MB  wall s  cpu s  records/s  RSS before MB  peak RSS MB")
    for r in runs:
        print(
            f"{r['records']:>7}  {r['bundle_mb']:>9.1f}  {r['wall_s']:>6.2f}  {r['cpu_s']:>5.2f}"
            f"  {r['records_per_s']:>9.0f}  {r['rss_before_mb']:>13.1f}  {r['peak_rss_mb']:>11.1f}"
        )
    if len(runs) == 2:
        small, large = runs
        growth = large["peak_rss_mb"] - small["peak_rss_mb"]
        factor = large["records"] / small["records"]
        print(f"peak RSS grows by {growth:+.1f} MB for {factor:.0f}x the records")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
