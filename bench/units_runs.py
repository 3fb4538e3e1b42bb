"""The shape the rollout benches share: the bundled ``units`` benchmark with generated rows,
run end to end (gateway child, simple agent, environment server, exact-match verifier) on
the ``reference`` upstream, whose script for a units task is one text answer: one model call
per rollout, and a verifier that costs next to nothing.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import time
from pathlib import Path

from gym_assets.plans.products import ensure_products
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import RunResult, run_rollouts
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
CALLS_PER_ROLLOUT = 1
BENCHMARK = "units"


def make_units(root: Path, tasks: int) -> Catalog:
    """A copy of the bundled configs under ``root`` whose units benchmark has ``tasks``
    generated rows, collated and planned under ``root/data``."""
    configs = root / "configs"
    shutil.copytree(REPO / "configs", configs)
    units = configs / "benchmarks" / BENCHMARK
    (units / "units_metrics.json").unlink()  # describes the bundled rows, not these
    rng = random.Random(0)
    with (units / "units.jsonl").open("w") as handle:
        for index in range(tasks):
            km = rng.randint(1, 999)
            prompt = f"Convert {km} kilometres to metres. Reply with the number only."
            row = {
                "task_id": f"units-{index:06d}",
                "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
                "task_data": {"expected_answer": str(km * 1000), "aliases": [f"{km * 1000} m"]},
            }
            handle.write(json.dumps(row) + "\n")
    catalog = units_catalog(root)
    ensure_products(catalog, BENCHMARK, lambda message: None)
    return catalog


def units_catalog(root: Path) -> Catalog:
    """The catalog ``make_units`` wrote under ``root``."""
    return load_catalog(Workspace(root / "configs", root / "data"))


def run_units(
    catalog: Catalog,
    out: Path,
    *,
    concurrency: int,
    limit: int,
    latency_s: float = 0.0,
    latency_spread: float = 0.0,
    workers: int | None = 1,
) -> RunResult:
    """``limit`` rollouts of the generated units tasks with the simple agent (``workers``:
    the run's worker processes; None is the run's default)."""
    harness = load_harnesses(catalog.loaded.data)["simple_agent"]
    with open(os.devnull, "w") as quiet:
        return run_rollouts(
            catalog,
            BENCHMARK,
            harness,
            out,
            upstream_config(mode="reference", latency_s=latency_s, latency_spread=latency_spread),
            RunOptions(concurrency=concurrency, limit=limit, workers=workers),
            progress_stream=quiet,
        )


def cpu_seconds() -> tuple[float, float]:
    """(this process, its reaped children) user + system CPU seconds so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


ROLES = {b"collection.workers": "workers", b"collection.gateway_process": "gateways"}


def stat_seconds(stat: str) -> float:
    """User + system CPU seconds in a /proc ``stat`` file (a process's or a thread's)."""
    with open(stat) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def process_roles(root: int) -> dict[int, str]:
    """``root`` (``run``) and every live descendant by role: the run's ``workers``, the model
    ``gateways`` (their children, or the run's own with one process), anything else (harness
    programs) ``other``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue  # exited meanwhile
    roles, frontier = {root: "run"}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        roles.update((pid, _role(pid)) for pid in children)
        frontier.extend(children)
    return roles


def tree_cpu_seconds(root: int | None = None) -> dict[str, float]:
    """User + system CPU seconds of ``root`` (this process) and of every live descendant,
    summed by role (``process_roles``); read from /proc while they run."""
    seconds: dict[str, float] = dict.fromkeys(("run", "workers", "gateways", "other"), 0.0)
    for pid, role in process_roles(os.getpid() if root is None else root).items():
        try:
            seconds[role] += stat_seconds(f"/proc/{pid}/stat")
        except OSError:
            continue  # exited meanwhile
    return seconds


def _role(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read()
    except OSError:
        return "other"
    return next((role for module, role in ROLES.items() if module in command), "other")


class CpuMeter:
    """CPU of this process and of the children reaped while it is open (the gateway child
    is reaped when its run ends), and wall time."""

    def __enter__(self) -> CpuMeter:
        self._own, self._children = cpu_seconds()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        own, children = cpu_seconds()
        self.own = own - self._own
        self.children = children - self._children
        self.wall = time.perf_counter() - self._wall

    @property
    def total(self) -> float:
        return self.own + self.children
