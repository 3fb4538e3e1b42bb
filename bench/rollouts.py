"""Benchmark: rollouts at the concurrency users run, against a model that takes its time.

    python bench/rollouts.py                        # base 32, then 1,024 and 2,048 in flight
    python bench/rollouts.py --workers 1            # the same in the run's own process
    python bench/rollouts.py --levels 1024 --waves 4 # quicker
    python bench/rollouts.py --spread 0              # without the spread-latency runs

Scale of concurrency. Each level runs ``waves × concurrency`` rollouts of generated ``units``
tasks (one model call each, exact-match verifier; see ``units_runs.py``) on the ``reference``
upstream with a simulated model latency of 2 s a call, in a fresh process, so its peak
memory is its own, with the run's worker processes (``--workers``, default the run's own: the
cores, one per 32 in flight at most). Printed per level:

- steady-state rollouts/s: rollouts finished between the end of the first wave and the start
  of the last one, over that time (no worker or gateway start or stop, no ramp-up, no drain),
  against the ideal ``concurrency ÷ (calls per rollout × latency)``, and the rate over each
  wave after the first (how long the start-up's lockstep takes to wear off);
- peak RSS of the run's process and of its children (the largest worker or gateway), and per
  rollout in flight beyond the base level's (measured in the same run at low concurrency);
- CPU per rollout over the whole run (the run's process; its workers and gateways) and in the
  steady state (the run's process and every process under it, read from /proc, in all and
  split into the run's process, its workers and their gateways), the open file descriptors of
  the run's process at most, and the most rollouts/s the CPU allows: the steady CPU a rollout
  over the cores the run may use.

Then each level above the base again with every call's latency drawn uniformly from
``latency × (1 ± spread)`` (``--spread``, default ±50%; printed, not a bar). With one fixed
latency every rollout in flight finishes at once, so the ones at the back of that burst wait
for the CPU to get through the ones before; spread, completions arrive as the CPU frees up.
The gap between the two rates is what the lockstep costs, not the run.

Bars, at each level above the base: rollouts/s ≥ 90% of the ideal at 1,024 in flight and 80% at
2,048, steady CPU a rollout within 1.3× the base's, peak memory under 1 MB per rollout in flight
beyond the base, and every rollout a record.

Raw orchestration overhead (printed, not a bar): 1,000 rollouts at concurrency 32 with no
latency in the run's own process, the synchronous time collection spends on a rollout outside
``EnvironmentServer.run`` (thread CPU time around the one await); next to it, what a model
call costs the gateway alone (``loadgen.py``, raw HTTP) and through the agents' client.

The soft limit on open files is raised to the hard limit when a level needs more than it
allows (each rollout in flight holds a connection in both processes).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from loadgen import run_load
from units_runs import (
    CALLS_PER_ROLLOUT,
    CpuMeter,
    make_units,
    run_units,
    tree_cpu_seconds,
    units_catalog,
)

from gym_assets.rollouts import run
from gym_assets.rollouts.collection import dispatch
from gym_assets.rollouts.collection.gateway_process import GatewayProcess
from gym_assets.rollouts.collection.workers import available_cores, worker_count
from gym_assets.rollouts.episodes.model_calls import (
    ModelSettings,
    create_turn,
    open_client,
    shared_connections,
)
from gym_assets.rollouts.gateway.upstream_config import upstream_config

LATENCY_S = 2.0
BASE = 32
LEVELS = (1024, 2048)
WAVES = 16  # the all-at-once start takes 3–5 waves to smear out; the steady rate needs more
RATE_BARS = {2048: 0.8}  # share of the ideal rollouts/s; any other level: RATE_BAR
RATE_BAR = 0.9
CPU_BAR = 1.3  # steady CPU a rollout, against the base level's
SPREAD = 0.5  # the comparison runs: each call's latency uniform in 1–3 s
MEMORY_BAR_MB = 1.0
OVERHEAD_ROLLOUTS, OVERHEAD_CONCURRENCY = 1000, 32
PROMPT = [{"role": "user", "content": "Convert 168 kilometres to metres."}]
T = TypeVar("T")


def _raise_open_files(needed: int) -> str | None:
    """Raise the soft RLIMIT_NOFILE towards ``needed`` (within the hard limit); a note if so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return None
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return f"raised the soft limit on open files from {soft} to {target} (hard limit {hard})"


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def _level(
    root: Path, concurrency: int, waves: int, latency: float, spread: float, workers: int | None
) -> dict[str, Any]:
    """One level, in this (fresh) process: the numbers the parent prints."""
    rollouts = concurrency * waves
    marks = {concurrency - 1: 0, rollouts - concurrency - 1: 1}  # the steady state's ends
    steady_at: list[tuple[float, dict[str, float]]] = [(0.0, {}), (0.0, {})]  # wall, CPU by role
    finished = [0]
    most_files = [0]
    wave_ends: list[float] = []  # when each wave's worth of rollouts had finished
    keep = dispatch.Keeper.keep

    def timed_keep(self: Any, rows: list[dict]) -> None:  # bench only: when each rollout ends
        keep(self, rows)
        if finished[0] in marks:
            steady_at[marks[finished[0]]] = (time.perf_counter(), tree_cpu_seconds())
        if finished[0] % concurrency == concurrency - 1:
            wave_ends.append(time.perf_counter())
        finished[0] += 1
        if finished[0] % 32 == 0:
            most_files[0] = max(most_files[0], _open_files())

    dispatch.Keeper.keep = timed_keep  # type: ignore[method-assign]
    with CpuMeter() as cpu:
        result = run_units(
            units_catalog(root),
            root / f"run-{concurrency}",
            concurrency=concurrency,
            limit=rollouts,
            latency_s=latency,
            latency_spread=spread,
            workers=workers,
        )
    (wall_0, cpu_0), (wall_1, cpu_1) = steady_at
    steady = rollouts - 2 * concurrency
    by_role = {role: 1000 * (cpu_1[role] - cpu_0[role]) / steady for role in cpu_1}
    return {
        "concurrency": concurrency,
        "spread": spread,
        "workers": worker_count(workers, concurrency, rollouts),
        "rollouts": result.dispatched,
        "produced": result.totals.outcomes.produced,
        "rate": steady / (wall_1 - wall_0),
        "wave_rates": [concurrency / (b - a) for a, b in itertools.pairwise(wave_ends)],
        "cpu_steady_ms": sum(by_role.values()),
        "cpu_steady_by_role_ms": by_role,
        "cpu_here_ms": 1000 * cpu.own / rollouts,
        "cpu_children_ms": 1000 * cpu.children / rollouts,
        "rss_here_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "open_files": most_files[0],
    }


def _run_level(
    root: Path, concurrency: int, waves: int, latency: float, spread: float, workers: int | None
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--root", str(root), "--level", str(concurrency)]
    command += ["--waves", str(waves), "--latency", str(latency), "--spread", str(spread)]
    command += [] if workers is None else ["--workers", str(workers)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"level {concurrency} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def _report_levels(levels: list[dict[str, Any]], latency: float) -> bool:
    base = levels[0]
    cores = available_cores()
    print(f"scale of concurrency: units, {CALLS_PER_ROLLOUT} model call a rollout, "
          f"{latency * 1000:.0f} ms a call, reference upstream; base {base['concurrency']} "
          f"in flight; {cores} cores, load average {os.getloadavg()[0]:.1f} now")  # fmt: skip
    ok = True
    for level in levels:
        concurrency, rate = level["concurrency"], level["rate"]
        ideal = _ideal(level, latency)
        bar = RATE_BARS.get(concurrency, RATE_BAR)
        ceiling = 1000 * cores / level["cpu_steady_ms"]
        print(f"{_rate(level, latency)}, {level['rollouts']} rollouts, {level['produced']} "
              "records")  # fmt: skip
        print(f"        {_waves(level)}")
        print(f"        peak RSS {level['rss_here_mb']:.1f} MB run + "
              f"{level['rss_children_mb']:.1f} MB its largest child, {level['open_files']} files "
              "open at most")  # fmt: skip
        print(f"        CPU a rollout {level['cpu_here_ms']:.2f} ms run + "
              f"{level['cpu_children_ms']:.2f} ms workers and gateways (whole run); steady "
              f"state {level['cpu_steady_ms']:.2f} ms in all ({_by_role(level)}), so {cores} "
              f"busy cores would allow {ceiling:.0f} rollouts/s")  # fmt: skip
        ok &= level["produced"] == level["rollouts"]
        if level is base:
            continue
        peak_mb = level["rss_here_mb"] + level["rss_children_mb"]
        base_mb = base["rss_here_mb"] + base["rss_children_mb"]
        per_flight = (peak_mb - base_mb) / (concurrency - base["concurrency"])
        cpu_ratio = level["cpu_steady_ms"] / base["cpu_steady_ms"]
        print(f"        memory beyond the base: {per_flight * 1024:.0f} KB per rollout in flight "
              f"(largest child only); steady CPU {cpu_ratio:.2f}× the base's")  # fmt: skip
        ok &= rate >= bar * ideal and per_flight < MEMORY_BAR_MB and cpu_ratio <= CPU_BAR
        if rate < bar * ideal and ceiling < bar * ideal:
            print(f"        the bar needs {bar * ideal:.0f} rollouts/s: more than the "
                  "run's CPU allows")  # fmt: skip
    print(f"  bars: rollouts/s ≥ {RATE_BAR:.0%} of the ideal ({RATE_BARS[2048]:.0%} at 2,048), "
          f"steady CPU a rollout ≤ {CPU_BAR:g}× the base's, peak memory < {MEMORY_BAR_MB:g} MB "
          "per rollout in flight beyond the base, a record for every rollout")  # fmt: skip
    return ok


def _ideal(level: dict[str, Any], latency: float) -> float:
    """Rollouts/s if nothing but the model's latency took time."""
    return level["concurrency"] / (CALLS_PER_ROLLOUT * latency)


def _rate(level: dict[str, Any], latency: float) -> str:
    """A level's steady rate against its ideal, as its report's first line begins."""
    rate, ideal = level["rate"], _ideal(level, latency)
    return (f"  {level['concurrency']:5d} in flight, {level['workers']} worker(s): {rate:7.1f} "
            f"rollouts/s of {ideal:.0f} ideal ({rate / ideal:.0%})")  # fmt: skip


def _waves(level: dict[str, Any]) -> str:
    """Rollouts/s over each wave after the first: how long one fixed latency's lockstep takes
    to wear off (the steady rate covers every wave but the first and the last)."""
    rates = " ".join(f"{rate:.0f}" for rate in level["wave_rates"])
    return f"rollouts/s wave by wave from the second: {rates}"


def _by_role(level: dict[str, Any]) -> str:
    """The steady CPU a rollout of each kind of process that spent any."""
    roles = level["cpu_steady_by_role_ms"].items()
    return ", ".join(f"{role} {ms:.2f}" for role, ms in roles if ms >= 0.005)


def _report_spread(levels: list[dict[str, Any]], latency: float) -> None:
    """The same levels with each call's latency spread around its mean (not a bar): with one
    fixed latency every rollout in flight finishes at once, and each waits in that burst for
    the CPU to reach it; spread, they arrive as the CPU frees up."""
    spread = levels[0]["spread"]
    print(f"  the same, each call's latency uniform in {latency * (1 - spread):g}–"
          f"{latency * (1 + spread):g} s (mean {latency:g} s; not a bar):")  # fmt: skip
    for level in levels:
        print(f"{_rate(level, latency)}, {level['produced']} of {level['rollouts']} recorded; "
              f"steady state {level['cpu_steady_ms']:.2f} ms CPU a rollout "
              f"({_by_role(level)})")  # fmt: skip
        print(f"        {_waves(level)}")


_marks: ContextVar[list[float]] = ContextVar("marks")


async def _marked(awaitable: Awaitable[T]) -> T:
    """Await, marking the calling task's thread CPU time before and after (other rollouts
    run on the thread meanwhile, so what lies between the marks is not this rollout's)."""
    marks = _marks.get()
    marks.append(time.thread_time())
    try:
        return await awaitable
    finally:
        marks.append(time.thread_time())


class _Timed:
    """An environment server proxy whose ``run`` is marked."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name, self.implementation = inner.name, inner.implementation

    async def run(self, request: Any) -> Any:
        return await _marked(self.inner.run(request))


class _TimedGateway(GatewayProcess):
    """The gateway process, its scripting marked."""

    async def set_reference_script(self, rollout_id: str, steps: Any) -> None:
        await _marked(super().set_reference_script(rollout_id, steps))


def _instrument() -> list[float]:
    """Patch the run so each attempt's own synchronous time is recorded (bench only): the
    thread CPU time of the attempt outside its awaits of the gateway and the server."""
    overheads: list[float] = []
    build = run.build_environment
    run.build_environment = lambda *a, **k: _Timed(build(*a, **k))  # type: ignore[assignment]
    run.GatewayProcess = _TimedGateway  # type: ignore[misc]
    attempt = dispatch.Attempts.attempt

    async def timed_attempt(self: Any, item: Any, n: int) -> list[dict]:
        marks = [time.thread_time()]
        _marks.set(marks)
        row = await attempt(self, item, n)
        marks.append(time.thread_time())
        overheads.append(sum(marks[1::2]) - sum(marks[0::2]))  # the spans between awaits
        return row

    dispatch.Attempts.attempt = timed_attempt  # type: ignore[method-assign]
    return overheads


async def _model_call_rates(root: Path, concurrency: int, requests: int) -> tuple[float, float]:
    """(raw requests/s, agents' client requests/s) of a units first turn, after a warm-up,
    over ``concurrency`` capture files."""
    gateway = GatewayProcess(
        upstream_config(mode="scripted"),
        root / "load-captures",
        model_name="policy",
        model_server_name="policy_model",
        script=[{"text": "168000"}],
    )
    body = {"model": "policy", "input": PROMPT}
    remaining = 0

    async def client(key: str) -> None:
        nonlocal remaining
        async with open_client(gateway, key, "root", ModelSettings()) as model:
            while remaining > 0:
                remaining -= 1
                await create_turn(model, "responses", "policy", {}, PROMPT, [])

    rates = []
    async with gateway, shared_connections(concurrency):
        for name in ("warmup", "raw", "client-warmup", "client"):
            keys = [f"{name}-{k}" for k in range(concurrency)]
            count = requests if name in ("raw", "client") else 200
            started = time.perf_counter()
            if name.startswith("client"):
                remaining = count
                await asyncio.gather(*(client(key) for key in keys))
            else:
                urls = [gateway.url_for(key) for key in keys]
                load = await run_load(urls, concurrency=concurrency, requests=count, body=body,
                                      route="responses")  # fmt: skip
                if load.errors:
                    raise RuntimeError(f"{load.errors} load requests failed")
            rates.append(count / (time.perf_counter() - started))
    return rates[1], rates[3]


def _report_overhead(root: Path) -> bool:
    raw_rps, client_rps = asyncio.run(_model_call_rates(root, OVERHEAD_CONCURRENCY, 3000))
    overheads = _instrument()
    with CpuMeter() as cpu:
        result = run_units(
            units_catalog(root),
            root / "run-overhead",
            concurrency=OVERHEAD_CONCURRENCY,
            limit=OVERHEAD_ROLLOUTS,
        )
    per = 1000 / result.dispatched
    overhead_ms = 1000 * sum(overheads) / len(overheads)
    print(f"raw orchestration overhead ({result.dispatched} rollouts at concurrency "
          f"{OVERHEAD_CONCURRENCY}, no latency; not a bar):")  # fmt: skip
    print(f"  collection's own work   : {overhead_ms:.2f} ms per rollout")
    print(f"  CPU per rollout         : {per * cpu.own:.2f} ms in the run's process (agent, "
          f"servers, collection) + {per * cpu.children:.2f} ms in the gateway process")  # fmt: skip
    print(f"  rollouts/s              : {result.rollouts_per_second:.1f} (the whole run, gateway "
          "start and stop included)")  # fmt: skip
    print(f"  a model call, raw HTTP  : {raw_rps:.0f} requests/s (what the gateway alone allows)")
    print(f"  ... the agents' client  : {client_rps:.0f} requests/s (aiohttp, the SDK's retries)")
    return result.totals.outcomes.produced == result.dispatched


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--levels", type=int, nargs="+", default=list(LEVELS))
    parser.add_argument("--base", type=int, default=BASE)
    parser.add_argument("--waves", type=int, default=WAVES, help="rollouts per level ÷ level")
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds a model call")
    parser.add_argument("--workers", type=int, help="worker processes (default: the run's)")
    parser.add_argument(
        "--spread",
        type=float,
        default=SPREAD,
        help="each level again with the latency spread ±this fraction, not a bar (0: skip)",
    )
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--level", type=int, help=argparse.SUPPRESS)  # one level, in a child
    args = parser.parse_args()
    if args.waves < 3:
        parser.error("--waves must be at least 3 (a steady state between two waves)")
    if not 0 <= args.spread <= 1:
        parser.error("--spread must be a fraction from 0 to 1 (0: no spread-latency runs)")
    if args.level is not None:
        level = _level(args.root, args.level, args.waves, args.latency, args.spread, args.workers)
        print(json.dumps(level))
        return 0
    note = _raise_open_files(4 * max(args.levels) + 1024)
    if note:
        print(f"note: {note}")
    with tempfile.TemporaryDirectory(prefix="bench-rollouts-") as tmp:
        root = Path(tmp)
        make_units(root, max(args.waves * max(args.levels), OVERHEAD_ROLLOUTS))
        levels = [
            _run_level(root, c, args.waves, args.latency, 0.0, args.workers)
            for c in [args.base, *args.levels]
        ]
        ok = _report_levels(levels, args.latency)
        if args.spread:
            spread = [
                _run_level(root, c, args.waves, args.latency, args.spread, args.workers)
                for c in args.levels
            ]
            _report_spread(spread, args.latency)
        print()
        ok &= _report_overhead(root)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
