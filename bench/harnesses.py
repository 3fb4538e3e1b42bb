"""Benchmark the installed third-party harnesses: seconds per conformance episode, and our share.

For each ``cli`` harness of the registry that is installed at its pinned version (``make
harnesses``; the others are listed as skipped), the whole conformance suite runs as ``gym-assets
conformance run`` runs it (a supervised process per episode, ``--jobs`` at a time). Per episode
it prints the wall time (episode process launch to exit), the wall time of the harness process
(from the activation's ``sandbox`` record, ``wall_time_s``: start to exit inside its sandbox) and
the share outside it — our overhead: interpreter start and imports, gateway and servers, the
adapter writing the config and reading the artifacts, verification, collection, shutdown. An
episode without a record counts 0 s inside.

No bar: the numbers are printed (bench/README.md). Exit 1 only if an episode could not run.

    .venv/bin/python bench/harnesses.py [--harness NAME]... [--jobs N] [--timeout S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from conformance import print_episodes

from gym_assets.config.loader import load_configs
from gym_assets.rollouts.harnesses.install import unavailable_reason
from gym_assets.rollouts.harnesses.registry import get_harness, load_harnesses
from gym_assets.suite.run import run_suite

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--harness", action="append", default=[], help="default: every cli one")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=120.0, help="per episode (default 120)")
    parser.add_argument("--configs", type=Path, default=CONFIGS)
    args = parser.parse_args()
    config = load_configs(args.configs)
    registry = load_harnesses(config)
    named = [get_harness(registry, name) for name in args.harness]
    chosen = []
    for harness in named or [h for h in registry.values() if h.kind == "cli"]:
        reason = unavailable_reason(harness)
        if reason is None:
            chosen.append(harness.name)
        else:
            print(f"skipped: {reason}")
    if not chosen:
        print("no installed cli harness to run (`make harnesses` installs them)")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-harnesses-") as scratch:
        output = Path(scratch) / "run"
        summary = run_suite(
            config,
            harnesses=chosen,
            scenarios=None,
            output=output,
            timeout_s=args.timeout,
            jobs=args.jobs,
            configs=str(args.configs),
        )
        lines = []
        for name in chosen:
            print(f"\n{name}")
            results = summary.harnesses[name].scenarios
            episodes, inside = print_episodes(output, name, results)
            fulfilled = sum(r.verdict == "fulfilled" for r in results)
            lines.append(
                f"{name:<16} {episodes / len(results):6.2f} s an episode, "
                f"{1 - inside / episodes if episodes else 0.0:4.0%} outside the harness process, "
                f"{fulfilled}/{len(results)} scenarios fulfilled"
            )
    print("\nper harness (seconds per conformance episode, our overhead):")
    print("\n".join(lines))
    ran = all(not r.execution_failed for h in summary.harnesses.values() for r in h.scenarios)
    return 0 if ran else 1


if __name__ == "__main__":
    sys.exit(main())
