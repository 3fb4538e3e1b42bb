"""Benchmark: collect 1,000 rollouts through the real gateway, environment server and agent.

    python bench/rollouts.py                       # 1,000 tasks at concurrency 32
    python bench/rollouts.py --tasks 200           # quick run

The benchmark is the bundled ``arith`` benchmark with generated rows, answered by the scripted
upstream with a two-call script (one ``calculate`` tool call, then a text answer). Prints:

- rollouts/s of ``run_rollouts`` (gateway start to metrics written);
- per-rollout orchestration overhead: the synchronous time collection itself spends on a
  rollout outside ``EnvironmentServer.run`` (plan gate, stamps, request, capture read,
  trajectory projection, record) — CPU time of the event-loop thread around the one await,
  so neither other rollouts nor the gateway's thread are counted;
- the process CPU time per rollout, everything included (for scale: the overhead's share);
- the gateway's raw request rate in the same process (``gateway.loadgen``, captured URL).

Bar: rollouts/s >= 25% of (raw gateway requests/s / model calls per rollout).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from gym_assets.rollouts.collection import dispatch, run
from gym_assets.rollouts.collection.products import ensure_products
from gym_assets.rollouts.collection.run import RunOptions, run_rollouts
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.rollouts.gateway.loadgen import measure_rps
from gym_assets.rollouts.harnesses import load_harnesses, upstream_of
from gym_assets.tasks.catalog import load_catalog

REPO = Path(__file__).resolve().parents[1]
SCRIPT = [{"call": "calculate", "args": {"expression": "6 * 7"}}, {"text": "42"}]
CALLS_PER_ROLLOUT = len(SCRIPT)
BAR = 0.25
TOOL = {
    "type": "function",
    "name": "calculate",
    "description": "Evaluate an integer arithmetic expression exactly.",
    "parameters": {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
    "strict": True,
}


def _configs(root: Path, tasks: int) -> Path:
    """A copy of the bundled configs whose arith benchmark has ``tasks`` generated rows."""
    configs = root / "configs"
    shutil.copytree(REPO / "configs", configs)
    arith = configs / "benchmarks" / "arith"
    (arith / "arith_metrics.json").unlink()
    rng = random.Random(0)
    with (arith / "arith.jsonl").open("w") as handle:
        for index in range(tasks):
            a, b = rng.randint(100, 999), rng.randint(2, 99)
            prompt = f"Compute {a} * {b}. Use the calculate tool, then reply with the integer only."
            row = {
                "task_id": f"arith-{index:05d}",
                "responses_create_params": {
                    "input": [{"role": "user", "content": prompt}],
                    "tools": [TOOL],
                },
                "expected_answer": str(a * b),
            }
            handle.write(json.dumps(row) + "\n")
    return configs


_marks: ContextVar[list[float]] = ContextVar("marks")


class _Timed:
    """An environment server proxy that marks when the dispatcher's await of ``run`` starts
    and ends (in the calling task's context)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name, self.implementation = inner.name, inner.implementation

    async def run(self, request: Any) -> Any:
        marks = _marks.get()
        marks.append(time.thread_time())
        try:
            return await self.inner.run(request)
        finally:
            marks.append(time.thread_time())


def _instrument() -> list[float]:
    """Patch the run so each attempt's synchronous time is recorded (bench only)."""
    overheads: list[float] = []
    build = run.build_environment
    run.build_environment = lambda *a, **k: _Timed(build(*a, **k))  # type: ignore[assignment]
    attempt = dispatch.Dispatcher._attempt

    async def timed_attempt(self: Any, item: Any, n: int) -> dict:
        marks: list[float] = []
        _marks.set(marks)
        started = time.thread_time()
        row = await attempt(self, item, n)
        ended = time.thread_time()
        begun, returned = marks
        overheads.append((begun - started) + (ended - returned))
        return row

    dispatch.Dispatcher._attempt = timed_attempt  # type: ignore[method-assign]
    return overheads


def _raw_gateway_rps(root: Path, concurrency: int, requests: int) -> float:
    with ModelGateway(ScriptedUpstream(SCRIPT), root / "load-captures") as gateway:
        measure_rps(gateway.url_for("warmup"), concurrency=concurrency, requests=200)
        return measure_rps(gateway.url_for("load"), concurrency=concurrency, requests=requests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rollouts-") as tmp:
        root = Path(tmp)
        catalog = load_catalog(_configs(root, args.tasks), root / "data")
        ensure_products(catalog, "arith", lambda message: None)
        harness = load_harnesses(catalog.loaded.data)["simple_agent"]
        raw_rps = _raw_gateway_rps(root, args.concurrency, requests=4000)
        overheads = _instrument()
        cpu_started = time.process_time()
        result = run_rollouts(
            catalog,
            "arith",
            harness,
            root / "run",
            upstream_of(mode="scripted"),
            RunOptions(concurrency=args.concurrency, script=SCRIPT),
            progress_stream=open("/dev/null", "w"),  # noqa: SIM115 - lives as long as the run
        )
        cpu_ms = 1000.0 * (time.process_time() - cpu_started) / max(result.dispatched, 1)
    outcomes = result.totals["outcomes"]
    produced = outcomes["measured"] + outcomes["masked"] + outcomes["unscored"]
    rate = result.rollouts_per_second
    bound = raw_rps / CALLS_PER_ROLLOUT
    overhead_ms = 1000.0 * sum(overheads) / len(overheads) if overheads else float("nan")
    print(f"rollouts                 : {result.dispatched} ({produced} records, "
          f"{outcomes['failed']} failed) at concurrency {args.concurrency}")  # fmt: skip
    print(f"rollouts/s               : {rate:.1f}  ({result.seconds:.1f} s)")
    print(f"orchestration overhead   : {overhead_ms:.2f} ms per rollout (collection's own work)")
    print(f"process CPU              : {cpu_ms:.2f} ms per rollout (gateway, agent, servers, all)")
    print(f"gateway raw requests/s   : {raw_rps:.0f}  (loadgen, captured URL, same process)")
    print(f"bound (raw / {CALLS_PER_ROLLOUT} calls)     : {bound:.1f} rollouts/s")
    print(f"ratio                    : {rate / bound:.1%} of the bound (bar {BAR:.0%})")
    ok = produced == result.dispatched and rate >= BAR * bound
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
