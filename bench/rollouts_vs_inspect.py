"""Benchmark: CPU per one-call sample, ours and Inspect AI's, side by side in the same run.

    python bench/rollouts_vs_inspect.py              # 1,000 samples at concurrency 32, 3 rounds
    python bench/rollouts_vs_inspect.py --venv DIR   # keep Inspect's venv in DIR (reused later)

Inspect AI is installed from PyPI into a scratch venv (a temporary one, unless ``--venv``
names one to keep); when it cannot be installed, the comparison is skipped with a message
(exit 0). Both sides run the same shape, one model call per sample at concurrency 32:

- Inspect: an eval of ``generate()`` on its ``mockllm`` model with an ``exact()`` scorer,
  ``max_samples`` = ``max_connections`` = 32, its log written (``inspect_mockllm.py``);
- ours: ``run_rollouts`` of generated ``units`` tasks on the offline ``reference`` upstream
  (gateway child, simple agent, environment server, exact-match verifier; records, captures
  and metrics written; ``units_runs.py``).

CPU is user + system time of the process and of its children (our gateway process) during
the run itself (Inspect's ``eval()``, our ``run_rollouts``), so interpreter start and imports
are left out on both sides; the rounds alternate and the median of each side is compared.

Bar: our CPU per sample ≤ 0.5 × Inspect's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from units_runs import CpuMeter, make_units, run_units

HERE = Path(__file__).resolve().parent
INSPECT = "inspect-ai"
BAR = 0.5
INSTALL_TIMEOUT_S = 900


def _inspect_python(venv_dir: Path) -> tuple[Path | None, str]:
    """The scratch venv's interpreter with Inspect AI installed, or None and why not."""
    python = venv_dir / "bin" / "python"
    if not python.exists():
        try:
            venv.create(venv_dir, with_pip=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            return None, f"cannot create a venv in {venv_dir}: {exc}"
    found = subprocess.run(
        [python, "-c", "import inspect_ai"], capture_output=True, text=True
    ).returncode
    if found == 0:
        return python, "already installed"
    try:
        installed = subprocess.run(
            [python, "-m", "pip", "install", "--quiet", INSPECT],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"pip install {INSPECT} took over {INSTALL_TIMEOUT_S} s"
    if installed.returncode != 0:
        last = (installed.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"pip install {INSPECT} failed: {last}"
    return python, "installed"


def _inspect_round(python: Path, samples: int, concurrency: int, logs: Path) -> dict:
    command = [python, HERE / "inspect_mockllm.py", str(samples), str(concurrency), str(logs)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the Inspect eval failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout.splitlines()[-1])
    if result["samples"] != samples:
        raise RuntimeError(f"the Inspect eval logged {result['samples']} of {samples} samples")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--venv", type=Path, help="keep Inspect's venv here (reused if present)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-vs-inspect-") as tmp:
        root = Path(tmp)
        python, how = _inspect_python(args.venv or root / "inspect-venv")
        if python is None:
            print(f"SKIP: Inspect AI cannot be installed here ({how})")
            return 0
        version = subprocess.run(
            [python, "-c", "import inspect_ai; print(inspect_ai.__version__)"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        catalog = make_units(root, args.samples)
        ours: list[float] = []
        theirs: list[dict] = []
        for round_ in range(args.rounds):
            logs = root / f"inspect-logs-{round_}"
            theirs.append(_inspect_round(python, args.samples, args.concurrency, logs))
            with CpuMeter() as cpu:
                result = run_units(
                    catalog,
                    root / f"run-{round_}",
                    concurrency=args.concurrency,
                    limit=args.samples,
                )
            if result.totals.outcomes.measured != args.samples:
                raise RuntimeError(f"our run measured {result.totals.outcomes} rollouts")
            ours.append(cpu.total)
    per_sample = {
        "Inspect AI, mockllm": [1000 * r["cpu_s"] / args.samples for r in theirs],
        "gym_assets, units  ": [1000 * cpu / args.samples for cpu in ours],
    }
    print(f"{args.samples} one-call samples at concurrency {args.concurrency}, median of "
          f"{args.rounds} alternating rounds (Inspect AI {version}, {how})")  # fmt: skip
    for side, rounds in per_sample.items():
        listed = ", ".join(f"{ms:.2f}" for ms in rounds)
        print(f"  {side} : {statistics.median(rounds):.2f} ms CPU a sample  (rounds: {listed})")
    ratio = statistics.median(per_sample["gym_assets, units  "]) / statistics.median(
        per_sample["Inspect AI, mockllm"]
    )
    print(f"  ratio               : {ratio:.2f} (bar ≤ {BAR}; ours includes the gateway child)")
    ok = ratio <= BAR
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
