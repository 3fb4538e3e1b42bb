"""``run_suite``: every selected harness × scenario as a supervised episode, judged, reported
(docs/conformance.md: its exit codes and output layout).

    <output>/suite.json                     written first: manifest, harnesses, sources
    <output>/<harness>/<scenario>/...       one episode directory each (see ``episode``)
    <output>/conformance_report.md|.html    from one in-memory report
    <output>/conformance_summary.json       written atomically, last

The output must not exist, so stale rollouts can never qualify a new run. Episodes run in
parallel (``jobs``), each in its own directory, process group, gateway port (bound to port 0)
and capture files; their results are reported in catalogue order whatever order they finish
in. A ``cli`` harness that is not installed at its pinned version runs no episode: its verdict
is ``unavailable``, with the command that installs it (never a pass, never a crash). A harness
whose program cannot say its version (``--version`` fails or prints nothing) runs no episode
either: its verdict is ``unusable``, one line with why, rather than one failure per scenario. The
version is asked once per harness, in the harness sandbox, and handed to its episodes.
Exit code: 2 if any episode failed to run (non-zero exit, timeout, or its inspection failed),
else 0 if every harness meets the P0 gate, else 1 (an unavailable or unusable harness does not
meet it). An interrupted run writes no summary.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.conformance.matrix import HARNESS_NAME
from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import CONFORMANCE_RUN
from gym_assets.outputs.targets import Target
from gym_assets.rollouts.harnesses.install import unavailable_reason
from gym_assets.rollouts.harnesses.registry import (
    Harness,
    get_harness,
    load_harnesses,
    runtime_version,
)
from gym_assets.sandbox import SandboxPolicy
from gym_assets.suite import report
from gym_assets.suite.judging import ScenarioResult, inspect_episode
from gym_assets.suite.layout import LOG_FILE
from gym_assets.suite.scenarios import SUITE_ID, Scenario, manifest, select_scenarios
from gym_assets.suite.supervise import SUPERVISION_GRACE_S, supervise
from gym_assets.workspace import Workspace

SUMMARY_SCHEMA = "harness-probe-report/v1"
SUITE_FILE = "suite.json"
SUMMARY_FILE = "conformance_summary.json"
REPORT_MD = "conformance_report.md"
REPORT_HTML = "conformance_report.html"
DEFAULT_TIMEOUT_S = 90.0
LIMITS = (
    "local harness runtime and controlled Chat/Responses model only; no remote sandbox "
    "qualification",
    "all current checks are P0, including ownership and call-to-step checks",
    "multimodal, compaction, parallelism and deployment health are outside this suite",
)
_SUITE = Path(__file__).resolve().parent  # gym_assets/suite
_JUDGE = _SUITE.parent / "conformance"


@dataclass(frozen=True)
class TeCount:
    required: int = 0
    observed: int = 0
    passed: int = 0

    def to_json(self) -> dict[str, int]:
        return {"required": self.required, "observed": self.observed, "passed": self.passed}


UNAVAILABLE = "unavailable"
UNUSABLE = "unusable"
NOT_RUN = (UNAVAILABLE, UNUSABLE)  # verdicts of a harness that ran no scenario


@dataclass
class HarnessResult:
    verdict: bool
    scenarios: list[ScenarioResult]
    evidence: dict[str, TeCount] = field(default_factory=dict)
    unavailable: str | None = None  # why the harness could not run, with its install command
    unusable: str | None = None  # why its program could not be used (its --version failed)

    @classmethod
    def of_unavailable(cls, reason: str) -> HarnessResult:
        return cls(verdict=False, scenarios=[], unavailable=reason)

    @classmethod
    def of_unusable(cls, reason: str) -> HarnessResult:
        return cls(verdict=False, scenarios=[], unusable=reason)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "scenarios": [s.to_json() for s in self.scenarios],
            "evidence": {label: c.to_json() for label, c in self.evidence.items()},
            "verdict": "fulfilled" if self.verdict else "not_fulfilled",
        }
        for status, reason in ((UNAVAILABLE, self.unavailable), (UNUSABLE, self.unusable)):
            if reason is not None:
                data["verdict"] = status
                data[status] = reason
        return data


def runtime_versions(
    harnesses: Mapping[str, Harness], sandbox: SandboxPolicy
) -> tuple[dict[str, str], dict[str, str]]:
    """Each harness's runtime version, asked once for the whole run (``--version`` runs in the
    harness sandbox), and why each one whose program cannot say it is unusable: said once for
    the harness instead of once per scenario."""
    versions, unusable = {}, {}
    for name, harness in harnesses.items():
        try:
            versions[name] = runtime_version(harness, sandbox)
        except UserError as exc:
            unusable[name] = exc.render()
    return versions, unusable


def pinned(harness: Harness, version: str) -> Harness:
    """A command harness with the version the run asked for, so its episodes ask no more."""
    return harness.model_copy(update={"version": version}) if harness.kind == "command" else harness


@dataclass
class SuiteSummary:
    verdict: bool
    exit_code: int
    output: Path
    summary_path: Path
    report_md: Path
    report_html: Path
    harnesses: dict[str, HarnessResult]


def _sources(paths: Sequence[Path]) -> dict[str, str]:
    return {
        str(p.relative_to(_SUITE.parents[1])): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(paths)
    }


def suite_document(harnesses: Mapping[str, Harness], timeout_s: float) -> dict[str, Any]:
    runner = list(_SUITE.glob("*.py"))
    checker = [p for p in _JUDGE.glob("*.py") if p.name != "health.py"]
    return {
        **manifest(),
        "harnesses": {
            name: h.model_dump(mode="json", exclude_defaults=True) for name, h in harnesses.items()
        },
        "timeout": timeout_s,
        "python": platform.python_version(),
        "runner_sources": _sources(runner),
        "checker_sources": _sources(checker),
        "health_sources": _sources([_JUDGE / "health.py"]),
    }


def te_counts(
    results: Sequence[ScenarioResult], scenarios: Sequence[Scenario]
) -> dict[str, TeCount]:
    """Per TE: scenarios listing it, of those the ones with a record, of those the fulfilled."""
    labels = dict.fromkeys(label for s in scenarios for label in s.evidence)
    counts = {}
    for label in sorted(labels, key=lambda text: int(text.split("-")[1])):
        listing = [r for r, s in zip(results, scenarios, strict=True) if label in s.evidence]
        observed = [r for r in listing if r.exercised]
        passed = [r for r in observed if r.te_verdict(label) == "fulfilled"]
        counts[label] = TeCount(len(listing), len(observed), len(passed))
    return counts


def check_timeout(timeout_s: float) -> None:
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        raise UserError(f"--timeout must be a finite number of seconds above 0, got {timeout_s}")


def episode_command(
    harness: Harness, scenario: Scenario, directory: Path, timeout_s: float, unsandboxed: bool
) -> list[str]:
    argv = [sys.executable, "-m", "gym_assets.suite.episode"]
    argv += ["--harness-json", json.dumps(harness.model_dump(mode="json", exclude_defaults=True))]
    argv += ["--scenario", scenario.name, "--directory", str(directory)]
    argv += ["--timeout", repr(timeout_s)]
    return argv + (["--allow-unsandboxed"] if unsandboxed else [])


def episode_line(done: int, total: int, harness: str, result: ScenarioResult) -> str:
    """The progress line of one finished episode: where the run is, and what it found."""
    execution = result.execution
    how = (
        "timed out"
        if execution.timed_out
        else f"exit {execution.returncode}"
        if execution.failed
        else result.verdict.replace("_", " ")
    )
    return f"[{done}/{total}] {harness}: {result.scenario}: {how} ({execution.seconds:.1f} s)"


def run_suite(
    config: Mapping[str, Any],
    *,
    harnesses: Sequence[str],
    scenarios: Sequence[str] | None,
    output: Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = None,
    allow_unsandboxed: bool = False,
    configs: str | None = None,
) -> SuiteSummary:
    """Run the suite into ``output`` (see the module docstring). ``config`` is the resolved
    configs tree holding the ``harnesses:`` registry; ``harnesses`` empty means all of them."""
    check_timeout(timeout_s)
    if jobs is None:
        jobs = os.cpu_count() or 1
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, got {jobs}")
    registry = load_harnesses(config)
    names = list(dict.fromkeys(harnesses)) or list(registry)
    if not names:
        raise UserError("no harness is configured; add one under the top-level `harnesses:` key")
    selected = {name: get_harness(registry, name) for name in names}
    for name in selected:
        if not HARNESS_NAME.match(name):
            raise UserError(
                f"harness name {name!r} names the run's directory for it: use letters, digits, "
                "'_' or '-' in the harnesses: registry"
            )
    chosen = select_scenarios(scenarios)
    unavailable = {
        name: reason
        for name, harness in selected.items()
        if (reason := unavailable_reason(harness)) is not None
    }
    available = {name: h for name, h in selected.items() if name not in unavailable}
    versions, unusable = runtime_versions(available, SandboxPolicy(allow_unsandboxed))
    output = Path(os.path.abspath(output))
    if os.path.lexists(output):
        raise UserError(
            "already exists; a conformance run writes a new directory so that stale rollouts "
            "can never qualify it: choose another --output",
            path=output,
        )
    say = progress or (lambda line: None)
    stop = threading.Event()
    with claimed_dir(
        Target(output, CONFORMANCE_RUN, Workspace.resolve(configs).configs, flag="--output")
    ):
        atomic_write_text(
            output / SUITE_FILE,
            json.dumps(suite_document(selected, timeout_s), indent=2, sort_keys=True) + "\n",
        )

        for name, reason in unavailable.items():
            say(f"{name}: unavailable: {reason}")
        for name, reason in unusable.items():
            say(f"{name}: harness unusable: {reason}")
        runnable = [pinned(h, versions[h.name]) for h in available.values() if h.name in versions]
        work = [(h, s) for h in runnable for s in chosen]
        done = [0]
        saying = threading.Lock()  # episodes finish on several threads; one line at a time

        def episode(job: tuple[Harness, Scenario]) -> ScenarioResult:
            harness, scenario = job
            directory = output / harness.name / scenario.name
            directory.mkdir(parents=True)
            execution = supervise(
                episode_command(harness, scenario, directory, timeout_s, allow_unsandboxed),
                log_path=directory / LOG_FILE,
                deadline_s=timeout_s + SUPERVISION_GRACE_S,
                stop=stop,
            )
            result = inspect_episode(directory, scenario, execution)
            with saying:
                done[0] += 1
                say(episode_line(done[0], len(work), harness.name, result))
            return result

        pool = ThreadPoolExecutor(max_workers=max(1, min(jobs, len(work))))
        try:
            finished = list(pool.map(episode, work))
        except BaseException:  # Ctrl-C or a failure of our own: stop every episode, no summary
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
        results: dict[str, HarnessResult] = {}
        ran = {h.name: index for index, h in enumerate(runnable)}
        for name in selected:
            if name in unavailable:
                results[name] = HarnessResult.of_unavailable(unavailable[name])
                continue
            if name in unusable:
                results[name] = HarnessResult.of_unusable(unusable[name])
                continue
            mine = finished[ran[name] * len(chosen) : (ran[name] + 1) * len(chosen)]
            results[name] = HarnessResult(
                verdict=all(r.verdict == "fulfilled" for r in mine),
                scenarios=mine,
                evidence=te_counts(mine, chosen),
            )
        verdict = all(r.verdict for r in results.values())
        execution_failed = any(s.execution_failed for r in results.values() for s in r.scenarios)
        exit_code = 2 if execution_failed else 0 if verdict else 1
        document = report.Report(
            suite=SUITE_ID,
            verdict=verdict,
            tables=tuple(
                report.harness_table(
                    name,
                    r.verdict,
                    [s.to_json() for s in r.scenarios],
                    timeout_s=timeout_s,
                    configs=configs,
                    unavailable=r.unavailable,
                    unusable=r.unusable,
                )
                for name, r in results.items()
            ),
        )
        atomic_write_text(output / REPORT_MD, report.render_markdown(document))
        atomic_write_text(output / REPORT_HTML, report.render_html(document))
        summary = {
            "schema_version": SUMMARY_SCHEMA,
            "suite": SUITE_ID,
            "runner_status": "completed",
            "full_suite": len(chosen) == len(select_scenarios(None)),
            "verdict": "fulfilled" if verdict else "not_fulfilled",
            "exit_code": exit_code,
            "suite_sha256": hashlib.sha256((output / SUITE_FILE).read_bytes()).hexdigest(),
            "harnesses": {name: r.to_json() for name, r in results.items()},
            "limits": list(LIMITS),
        }
        atomic_write_text(output / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    return SuiteSummary(
        verdict=verdict,
        exit_code=exit_code,
        output=output,
        summary_path=output / SUMMARY_FILE,
        report_md=output / REPORT_MD,
        report_html=output / REPORT_HTML,
        harnesses=results,
    )
