"""Where a rollout's CPU goes: one run in one process, sampled in its steady state.

    python bench/rollout_cpu.py                          # 1,024 in flight, a 20 s window
    python bench/rollout_cpu.py --concurrency 2048 --seconds 30

A run of generated ``units`` tasks (``units_runs.py``: one model call a rollout on the
``reference`` upstream, 2 s a call) runs in a child process with ``--workers 1``. Once three
waves are recorded, a window of ``--seconds`` is measured:

- the run's process: its CPU from /proc, the garbage collector's share timed collection by
  collection (``gc.callbacks``, which only observe), and the rest split into layers by
  ``py-spy`` samples of its stacks (native frames on, so a sample inside a collection is
  known and left out);
- the gateway child: each thread's CPU from /proc, named by ``py-spy dump``;

each over the rollouts recorded in the window. The layers are the rollout's path: collection
(``collection/dispatch.py``) hands the episode (``episodes/``, ``servers/``) its request,
the agent's model call goes through aiohttp to the gateway, and collection reads the
gateway's capture back (``Attempts._row``) and keeps the rows. Not a bar: it says where to
look (docs/rollouts.md, "Where a rollout's CPU goes").

Needs ``py-spy`` (``.venv/bin/pip install py-spy``) and permission to trace the child: root,
or ``kernel.yama.ptrace_scope`` 0.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from units_runs import make_units, process_roles, run_units, stat_seconds, units_catalog

WARM_WAVES = 3  # the all-at-once start smears out over three to five waves
# A sample's layer: the first pattern any frame of its stack matches, in this order.
LAYERS = (
    ("the garbage collector", ("gc_collect",)),
    ("the model call in the agents' client (aiohttp)", ("aiohttp/", "episodes/model_http.py")),
    ("reading the capture back, projecting the trajectory", ("Attempts._row",)),
    (
        "the episode: runner, environment server, agent, sessions",
        ("rollouts/episodes/", "servers/"),
    ),
    ("the logs and the ledger", ("Keeper.keep",)),
    ("the reference upstream's script to the gateway", ("collection/gateway_process.py",)),
    ("the rest of collection (stamps, plan gate, deadline)", ("collection/dispatch.py",)),
)
OTHER = "the event loop: scheduling, sockets, callbacks"
THREADS = (  # the gateway's threads by name
    ("its HTTP server", re.compile(r"model-gateway")),
    ("writing the capture", re.compile(r"capture-write")),
    ("its command pipe (main thread)", re.compile(r"MainThread")),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=1024)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds a model call")
    parser.add_argument("--seconds", type=float, default=20.0, help="the measured window")
    parser.add_argument("--rate", type=int, default=100, help="py-spy samples a second")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rollouts", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return _child(args)
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if spy is None:
        print(f"needs py-spy: {Path(sys.executable).parent}/pip install py-spy", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rollout-cpu-") as tmp:
        return _measure(args, Path(tmp), spy)


def _measure(args: argparse.Namespace, root: Path, spy: str) -> int:
    rollouts = args.concurrency * (WARM_WAVES + math.ceil(args.seconds / args.latency) + 4)
    make_units(root, rollouts)
    command = [sys.executable, __file__, "--child", str(root), "--rollouts", str(rollouts)]
    command += ["--concurrency", str(args.concurrency), "--latency", str(args.latency)]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, start_new_session=True)
    records, status = root / "run" / "rollouts.jsonl", root / "status.jsonl"
    try:
        while _lines(records) < WARM_WAVES * args.concurrency:
            if child.poll() is not None:
                print("the run ended before its steady state", file=sys.stderr)
                return 1
            time.sleep(0.2)
        gateway = _gateway(child.pid)
        names = _thread_names(spy, gateway)
        before = _cpu(child.pid), _cpu(gateway), _probe(child, status, 1), _lines(records)
        stacks = root / "stacks.txt"
        sampling = [spy, "record", "--pid", str(child.pid), "--native", "--format", "raw"]
        sampling += ["--rate", str(args.rate), "--duration", str(math.ceil(args.seconds))]
        subprocess.run([*sampling, "-o", str(stacks)], check=True, capture_output=True)
        after = _cpu(child.pid), _cpu(gateway), _probe(child, status, 2), _lines(records)
        child.wait()  # the run ends a few waves on, its gateway stopped
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    rollouts = after[3] - before[3]
    run_cpu = sum(after[0].values()) - sum(before[0].values())
    gc_s = after[2] - before[2]
    threads = {tid: after[1][tid] - before[1].get(tid, 0.0) for tid in after[1]}
    _report(args, rollouts, run_cpu, gc_s, _layers(stacks), threads, names)
    return 0


def _child(args: argparse.Namespace) -> int:
    """The run, with its collections timed; SIGUSR1 appends the total so far to a file."""
    collecting = [0.0, 0.0]  # seconds in collections, the start of the current one

    def timed(phase: str, info: dict) -> None:
        if phase == "start":
            collecting[1] = time.thread_time()  # CPU: the sampler's pauses are not counted
        else:
            collecting[0] += time.thread_time() - collecting[1]

    def report(*_: object) -> None:
        with (args.child / "status.jsonl").open("a") as handle:
            handle.write(json.dumps({"gc_s": collecting[0]}) + "\n")

    gc.callbacks.append(timed)
    signal.signal(signal.SIGUSR1, report)
    run_units(
        units_catalog(args.child),
        args.child / "run",
        concurrency=args.concurrency,
        limit=args.rollouts,
        latency_s=args.latency,
        workers=1,
    )
    return 0


def _probe(child: subprocess.Popen, status: Path, count: int) -> float:
    """The child's collector seconds so far (its ``count``-th answer to SIGUSR1)."""
    child.send_signal(signal.SIGUSR1)
    while _lines(status) < count:
        time.sleep(0.01)
    return json.loads(status.read_text().splitlines()[count - 1])["gc_s"]


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except (FileNotFoundError, IsADirectoryError):
        return 0


def _gateway(run: int) -> int:
    """The run's gateway child."""
    gateways = [pid for pid, role in process_roles(run).items() if role == "gateways"]
    if not gateways:
        raise SystemExit("the run has no gateway child")
    return gateways[0]


def _cpu(pid: int) -> dict[int, float]:
    """User + system CPU seconds of each thread of ``pid``."""
    seconds = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            seconds[int(tid)] = stat_seconds(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue  # ended meanwhile
    return seconds


def _thread_names(spy: str, pid: int) -> dict[int, str]:
    dump = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True)
    return {
        int(tid): name for tid, name in re.findall(r'^Thread (\d+) .*"(.*)"', dump.stdout, re.M)
    }


def _layers(stacks: Path) -> Counter[str]:
    """Samples by layer (py-spy's raw format: one stack a line, frames by ';', then a count)."""
    samples: Counter[str] = Counter()
    for line in stacks.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if count.isdigit():
            layer = next((name for name, keys in LAYERS if any(k in stack for k in keys)), OTHER)
            samples[layer] += int(count)
    return samples


def _report(
    args: argparse.Namespace,
    rollouts: int,
    run_cpu: float,
    gc_s: float,
    samples: Counter[str],
    threads: dict[int, float],
    names: dict[int, str],
) -> None:
    per = 1000 / max(rollouts, 1)
    rest = run_cpu - gc_s
    sampled = sum(n for layer, n in samples.items() if layer != LAYERS[0][0])
    gateway = sum(threads.values())
    print(
        f"{args.concurrency} in flight, {args.latency:g} s a call, one process: {rollouts} "
        f"rollouts in {args.seconds:g} s; {(run_cpu + gateway) * per:.2f} ms of CPU a rollout"
    )
    print(f"  the run's process {run_cpu * per:.2f} ms")
    print(f"    {gc_s * per:5.2f}  {LAYERS[0][0]} (timed)")
    for layer, count in samples.most_common():
        if layer != LAYERS[0][0]:
            print(f"    {rest * per * count / max(sampled, 1):5.2f}  {layer}")
    print(f"  the gateway {gateway * per:.2f} ms")
    by_role: Counter[str] = Counter()
    for tid, seconds in threads.items():
        name = names.get(tid, "")
        role = next((role for role, pattern in THREADS if pattern.search(name)), "other threads")
        by_role[role] += seconds
    for role, seconds in by_role.most_common():
        print(f"    {seconds * per:5.2f}  {role}")


if __name__ == "__main__":
    raise SystemExit(main())
