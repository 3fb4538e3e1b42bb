"""The ``slow`` marker: what ``make test-fast`` (``pytest -m "not slow"``) leaves out.

Slow by rule, so that a new test of the same kind is slow without anyone remembering to say so:
a test on a real Dagster instance (a ``defs/`` test using an instance fixture), and a property test
(hypothesis runs it on a hundred generated inputs). Slow by module: the suites that run whole
rollouts, spawn processes or drive the sandbox with hostile code. A single slow test elsewhere
carries ``@pytest.mark.slow`` itself. ``make test`` runs everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import is_hypothesis_test

TESTS = Path(__file__).resolve().parent
SLOW_MODULES = frozenset(
    {
        # whole runs: a gateway process, environment servers and real verifiers per test
        "rollouts/collection/test_cli.py",
        "rollouts/collection/test_command_harnesses.py",
        "rollouts/collection/test_conformance_of_runs.py",
        "rollouts/collection/test_failed_model_calls.py",
        "rollouts/collection/test_gateway_process.py",
        "rollouts/collection/test_reverify.py",
        "rollouts/collection/test_run.py",
        "rollouts/collection/test_run_dir.py",
        # conformance: supervised processes, sandboxed tools, whole suite runs
        "suite/test_command_harness_suite.py",
        "suite/test_conformance_resources.py",
        "suite/test_suite_run.py",
        "suite/test_suite_blind_spots.py",
        "suite/test_supervise.py",
        # command harnesses: a harness program (and its descendants) per test
        "rollouts/episodes/test_command_agent.py",
        # a real model server (llama.cpp, SmolLM2-135M) answering whole runs of each harness
        "real_model/test_real_model.py",
        # the sandbox: a bubblewrap guest per test, hostile code and whole hostile runs
        "sandbox/test_hostile_completions.py",
        "sandbox/test_hostile_runs.py",
        "sandbox/test_session.py",
        "sandbox/test_workers.py",
    }
)


def is_slow(item: pytest.Item) -> bool:
    module = Path(str(item.path)).relative_to(TESTS).as_posix()
    function = getattr(item, "function", None)
    return (
        module in SLOW_MODULES
        or (
            module.startswith("defs/")
            and any("instance" in f for f in getattr(item, "fixturenames", ()))
        )
        or (function is not None and is_hypothesis_test(function))
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
