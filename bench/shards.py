"""Benchmark: one partition in shards, against a run the size of one shard.

    python bench/shards.py                            # 100,000 rollouts in 8 shards
    python bench/shards.py --rollouts 20000 --shards 4

Generated ``units`` tasks (``units_runs.py``) on the ``reference`` upstream with no latency,
each command the real ``gym-assets`` in a fresh process with ``--workers 1`` (so its peak RSS
is the whole command's, interpreter included; the gateway child is smaller):

- every shard of the partition in turn (``rollouts --shard I/N``): peak RSS, CPU, wall. The
  first one makes the partition's inventory, the others only read their span of it;
- the floor: a run of one shard's size (``rollouts --limit T/N``), what a shard would cost as
  a run of its own;
- the merge (``rollouts merge``): peak RSS, CPU, wall, and that it holds every rollout.

Bar: every shard but the one that made the inventory within 1.2× the floor's peak RSS (a shard
pays for its span, not for the partition; the maker pays the partition's materialization
once, printed), and the merge holding a record for every planned rollout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from measure import Measured, run_command
from units_runs import BENCHMARK, make_units

RSS_BAR = 1.2  # a shard's peak RSS over a shard-sized run's


def _rollouts(root: Path, *argv: str) -> Measured:
    return run_command(
        ["rollouts", "--benchmark", BENCHMARK, "--harness", "simple_agent", "--workers", "1",
         "--concurrency", "64", "--configs", str(root / "configs"), "--data-root",
         str(root / "data"), "--no-rebuild", *argv]
    )  # fmt: skip


def _line(name: str, measured: Measured, floor: Measured | None = None) -> str:
    ratio = f"  ({measured.peak_rss_mb / floor.peak_rss_mb:.2f}× the floor)" if floor else ""
    return (
        f"  {name:<32} peak RSS {measured.peak_rss_mb:6.0f} MB{ratio}   CPU "
        f"{measured.cpu:6.1f} s   wall {measured.wall:6.1f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rollouts", type=int, default=100_000, help="planned rollouts")
    parser.add_argument("--shards", type=int, default=8)
    args = parser.parse_args()
    if not 2 <= args.shards <= args.rollouts:
        parser.error("--shards must be at least 2 and at most --rollouts")
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        root = Path(tmp)
        make_units(root, args.rollouts)
        shards_dir, merged = root / "shards", root / "merged"
        span = args.rollouts // args.shards
        print(f"{args.rollouts:,} units rollouts in {args.shards} shards, one process a command")
        floor = _rollouts(root, "--out", str(root / "floor"), "--limit", str(span))
        print(_line(f"floor: a run of {span:,}", floor))
        shards = []
        for index in range(1, args.shards + 1):
            shard = f"{index}/{args.shards}"
            shards.append(_rollouts(root, "--out", str(shards_dir), "--shard", shard))
            maker = " (made the inventory)" if index == 1 else ""
            print(_line(f"shard {shard}{maker}", shards[-1], floor))
        merge = run_command(
            ["rollouts", "merge", "--benchmark", BENCHMARK, "--harness", "simple_agent",
             "--shards", str(shards_dir), "--out", str(merged), "--configs",
             str(root / "configs"), "--data-root", str(root / "data")]
        )  # fmt: skip
        print(_line("merge", merge))
        result = json.loads((merged / "rollouts_result.json").read_text())
        recorded = sum(1 for _ in (merged / "rollouts.jsonl").open("rb"))
    worst = max(s.peak_rss_mb / floor.peak_rss_mb for s in shards[1:])
    ok = worst <= RSS_BAR and recorded == args.rollouts
    print(
        f"  bar: shards after the first within {RSS_BAR}× the floor's peak RSS (worst "
        f"{worst:.2f}×); {recorded:,} of {args.rollouts:,} planned rollouts recorded "
        f"(the merge's result plans {result['planned']:,})"
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
