"""Benchmark: collect 1,000 rollouts through the real gateway, environment server and agent.

    python bench/rollouts.py                       # 1,000 tasks at concurrency 32
    python bench/rollouts.py --tasks 200           # quick run

The benchmark is the bundled ``arith`` benchmark with generated rows, answered by the scripted
upstream with a two-call script (one ``calculate`` tool call, then a text answer). Prints:

- rollouts/s of ``run_rollouts`` (from starting the gateway process to the last rollout
  written and the gateway stopped);
- per-rollout orchestration overhead: the synchronous time collection itself spends on a
  rollout outside ``EnvironmentServer.run`` (plan gate, stamps, request, capture read,
  trajectory projection, record) — CPU time of the event-loop thread around the one await,
  so neither other rollouts nor the gateway's thread are counted;
- CPU time per rollout, everything included (for scale: the overhead's share): this process
  (agents, environment and resources servers, collection) and the gateway's child process;
- the model calls' own rate, measured in the same run just before it on the same kind of
  gateway (a child process, as ``run_rollouts`` starts): the rollouts' first-turn request
  (Responses, with the tool) sent by the raw load generator (``bench/loadgen.py``) to captured
  URLs spread over ``concurrency`` capture files, as a run in flight writes them;
- the same request through the agents' own call path (``create_turn``: the official ``openai``
  client), which bounds any harness built on that client.

Bar: rollouts/s >= 25% of (raw requests/s / model calls per rollout). The client line says
whether the bar is reachable at all with the official client on this machine: its calls
alone, with no environment, verifier or collection around them, give a ceiling of
(client requests/s / model calls per rollout) rollouts/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import shutil
import sys
import tempfile
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from loadgen import run_load  # bench/loadgen.py (the script's own directory)

from gym_assets.rollouts.collection import dispatch, run
from gym_assets.rollouts.collection.gateway_process import GatewayProcess
from gym_assets.rollouts.collection.products import ensure_products
from gym_assets.rollouts.collection.run import RunOptions, run_rollouts
from gym_assets.rollouts.episodes.model_calls import (
    ModelSettings,
    create_turn,
    open_client,
    shared_connections,
)
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
            row = {
                "task_id": f"arith-{index:05d}",
                "responses_create_params": _params(a, b),
                "expected_answer": str(a * b),
            }
            handle.write(json.dumps(row) + "\n")
    return configs


def _params(a: int, b: int) -> dict[str, Any]:
    prompt = f"Compute {a} * {b}. Use the calculate tool, then reply with the integer only."
    return {"input": [{"role": "user", "content": prompt}], "tools": [TOOL]}


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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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


async def _client_load(gateway: GatewayProcess, keys: list[str], requests: int) -> float:
    """Requests/s of ``create_turn`` (the agents' call path) on the rollouts' first turn."""
    params = _params(123, 45)
    remaining = requests

    async def worker(key: str) -> None:
        nonlocal remaining
        async with (
            shared_connections(),
            open_client(gateway, key, "root", ModelSettings()) as client,
        ):
            while remaining > 0:
                remaining -= 1
                await create_turn(client, "responses", "policy", params, params["input"], [TOOL])

    started = time.perf_counter()
    await asyncio.gather(*(worker(key) for key in keys))
    return requests / (time.perf_counter() - started)


def _model_call_rates(root: Path, concurrency: int, requests: int) -> tuple[float, float]:
    """(raw requests/s, official client requests/s) for the first-turn request, each after a
    warm-up, spread over ``concurrency`` capture files."""
    return asyncio.run(_measure_model_calls(root, concurrency, requests))


async def _measure_model_calls(root: Path, concurrency: int, requests: int) -> tuple[float, float]:
    body = {"model": "policy", **_params(123, 45)}
    gateway = GatewayProcess(
        upstream_of(mode="scripted"),
        root / "load-captures",
        model_name="policy",
        model_server_name="policy_model",
        script=SCRIPT,
    )
    async with gateway:
        rates = []
        for name in ("warmup", "raw", "client-warmup", "client"):
            keys = [f"{name}-{k}" for k in range(concurrency)]
            count = requests if name in ("raw", "client") else 200
            if name.startswith("client"):
                rates.append(await _client_load(gateway, keys, count))
            else:
                urls = [gateway.url_for(key) for key in keys]
                result = await run_load(urls, concurrency=concurrency, requests=count, body=body,
                                        route="responses")  # fmt: skip
                if result.errors:
                    raise RuntimeError(f"{result.errors} load requests failed")
                rates.append(result.requests_per_second)
        return rates[1], rates[3]


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
        raw_rps, client_rps = _model_call_rates(root, args.concurrency, requests=4000)
        overheads = _instrument()
        cpu_started, gateway_started = time.process_time(), _children_cpu()
        result = run_rollouts(
            catalog,
            "arith",
            harness,
            root / "run",
            upstream_of(mode="scripted"),
            RunOptions(concurrency=args.concurrency, script=SCRIPT),
            progress_stream=open("/dev/null", "w"),  # noqa: SIM115 - lives as long as the run
        )
        per_rollout = 1000.0 / max(result.dispatched, 1)
        cpu_ms = per_rollout * (time.process_time() - cpu_started)
        gateway_ms = per_rollout * (_children_cpu() - gateway_started)  # reaped when it stops
    outcomes = result.totals.outcomes
    produced = outcomes.produced
    rate = result.rollouts_per_second
    bound = raw_rps / CALLS_PER_ROLLOUT
    overhead_ms = 1000.0 * sum(overheads) / len(overheads) if overheads else float("nan")
    print(f"rollouts                 : {result.dispatched} ({produced} records, "
          f"{outcomes.failed} failed) at concurrency {args.concurrency}")  # fmt: skip
    print(f"rollouts/s               : {rate:.1f}  ({result.seconds:.1f} s)")
    print(f"orchestration overhead   : {overhead_ms:.2f} ms per rollout (collection's own work)")
    print(f"CPU per rollout          : {cpu_ms:.2f} ms here (agent, servers, collection) "
          f"+ {gateway_ms:.2f} ms in the gateway process")  # fmt: skip
    ceiling = client_rps / CALLS_PER_ROLLOUT
    print(f"model calls, raw client  : {raw_rps:.0f} requests/s  (first-turn request, "
          f"{args.concurrency} capture files)")  # fmt: skip
    print(f"model calls, agent client: {client_rps:.0f} requests/s  (the same request through "
          "the official openai client)")  # fmt: skip
    print(f"bound (raw / {CALLS_PER_ROLLOUT} calls)     : {bound:.1f} rollouts/s")
    print(f"ratio                    : {rate / bound:.1%} of the bound (bar {BAR:.0%})")
    print(f"client ceiling           : {ceiling:.1f} rollouts/s = {ceiling / bound:.1%} of the "
          f"bound; the run reaches {rate / ceiling:.0%} of it")  # fmt: skip
    ok = produced == result.dispatched and rate >= BAR * bound
    if not ok and ceiling < BAR * bound:
        print("the official client's calls alone stay under the bar on this machine")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
