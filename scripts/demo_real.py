"""``make demo-real``: HumanEval and arith through ``simple_agent`` against a real model here.

    .venv/bin/python scripts/demo_real.py [--limit N] [--out DIR]

Installs the local model server if needed (``gym-assets model install``: the first install on a
machine compiles llama.cpp), starts it on a free loopback port, runs the first N tasks of each
benchmark with ``--upstream openai`` against it, and stops it. SmolLM2-135M is a tiny model:
rewards near 0 are its real result; what the demo shows is the whole pipeline carrying a real
model's calls. Exit status: the first non-zero exit of a run, else 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gym_assets.cli import main as gym_assets
from gym_assets.local_services.model_install import ModelInstall
from gym_assets.local_services.model_server import (
    API_KEY,
    API_KEY_ENV,
    MODEL_ALIAS,
    UPSTREAM_API,
    serving,
)
from gym_assets.workspace import Workspace

BENCHMARKS = ("humaneval", "arith")


def run(limit: int, out: Path) -> int:
    install = ModelInstall.default(Workspace.resolve().configs)
    install.install(lambda line: print(line, file=sys.stderr, flush=True))
    os.environ.setdefault(API_KEY_ENV, API_KEY)
    codes = []
    with serving(install, install.root / "server.log") as base_url:
        print(f"model server: {base_url}", file=sys.stderr, flush=True)
        for benchmark in BENCHMARKS:
            argv = ["rollouts", "--benchmark", benchmark, "--harness", "simple_agent"]
            argv += ["--out", str(out / benchmark), "--limit", str(limit), "--timeout", "300"]
            argv += ["--upstream", "openai", "--base-url", base_url, "--model", MODEL_ALIAS]
            argv += ["--api-key-env", API_KEY_ENV, "--upstream-api", UPSTREAM_API]
            argv += ["--concurrency", "2"]
            codes.append(gym_assets(argv))
    return next((code for code in codes if code), 0)


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/demo_real.py", description=__doc__)
    parser.add_argument("--limit", type=int, default=10, help="tasks per benchmark (default 10)")
    parser.add_argument(
        "--out", type=Path, default=Path(".gym_assets/demo-real"), help="where the runs go"
    )
    args = parser.parse_args()
    return run(args.limit, args.out)


if __name__ == "__main__":
    sys.exit(main())
