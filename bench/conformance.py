"""Benchmark the conformance suite: all seven scenarios for the built-in ``simple_agent``.

Runs ``run_suite`` as ``gym-assets conformance run`` does (one supervised process per episode,
``--jobs`` at a time, default the number of cores), then prints per episode its wall time
(process launch to exit), the time the harness itself spent (``harness_seconds``: its
activations' time in the saved record, model calls and tools included) and the share
outside the harness — our overhead: interpreter start and imports, gateway and servers,
collection, the sandbox for tool commands, shutdown. Inspection runs after each episode in the
runner's process and is reported on its own.

Bar: the whole suite in under 60 s, every episode run to completion (no execution error).

    .venv/bin/python bench/conformance.py [--jobs N] [--output DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from gym_assets.config.loader import load_configs
from gym_assets.suite.judging import ScenarioResult
from gym_assets.suite.run import run_suite

BAR_S = 60.0
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def harness_seconds(episode: Path) -> float:
    """What the harness itself took, from the saved record: a program's wall time as its
    sandbox records hold it (``sandbox`` records of role ``agent``, one per activation: command
    and cli harnesses), else its invocations' ``duration_ms`` (a built-in agent's activations,
    model calls and tools included); 0 without a record."""
    records = episode / "rollouts.jsonl"
    text = records.read_text() if records.is_file() else ""
    processes, invocations = [], 0.0
    for line in filter(None, text.splitlines()):
        record = json.loads(line)
        for kept in record.get("ng_agent_observations", {}).get("records", []):
            if kept.get("kind") == "sandbox" and kept.get("role") == "agent":
                processes.append(kept.get("wall_time_s") or 0.0)
        for invocation in record.get("ng_trajectory", {}).get("invocations", []):
            invocations += (invocation.get("duration_ms") or 0) / 1000.0
    return sum(processes) if processes else invocations


def print_episodes(
    output: Path, harness: str, results: Sequence[ScenarioResult]
) -> tuple[float, float]:
    """One line per episode of ``harness`` in the run at ``output``: its wall time, the
    harness's own time and the share outside it; returns the two totals."""
    print(f"{'scenario':<18} {'episode s':>9} {'harness s':>9} {'outside':>8}  verdict")
    episodes = inside_total = 0.0
    for result in results:
        seconds = result.execution.seconds
        inside = harness_seconds(output / harness / result.scenario)
        episodes, inside_total = episodes + seconds, inside_total + inside
        share = 1 - inside / seconds if seconds else 0.0
        print(f"{result.scenario:<18} {seconds:9.2f} {inside:9.2f} {share:8.0%}  {result.verdict}")
    return episodes, inside_total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--output", type=Path, default=None, help="a new directory (default tmp)")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory(prefix="bench-conformance-")
    output = args.output or Path(scratch.name) / "run"
    started = time.perf_counter()
    summary = run_suite(
        load_configs(CONFIGS),
        harnesses=["simple_agent"],
        scenarios=None,
        output=output,
        timeout_s=60,
        jobs=args.jobs,
        configs=str(CONFIGS),
    )
    wall = time.perf_counter() - started
    results = summary.harnesses["simple_agent"].scenarios
    episodes, harness_total = print_episodes(output, "simple_agent", results)
    print(
        f"suite: {wall:.1f} s wall for {len(results)} episodes ({episodes / len(results):.2f} s "
        f"an episode, {1 - harness_total / episodes:.0%} outside the harness); exit code "
        f"{summary.exit_code}"
    )
    ran = all(not r.execution_failed for r in results)
    met = wall < BAR_S and ran
    print(f"bar: under {BAR_S:.0f} s with every episode run: {'met' if met else 'MISSED'}")
    scratch.cleanup()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
