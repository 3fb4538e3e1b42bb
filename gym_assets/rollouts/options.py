"""The options of a rollouts run, defined once for both faces that set them.

``RunOptions`` is what ``run_rollouts`` takes. Each option a user sets by name carries its
command-line flag and one-line help beside its default, so ``gym-assets rollouts`` builds its
flags from these fields, and the Dagster ``HarnessRunner`` takes its defaults from them and
fills a run's options by name (``gym_assets_tests/defs/test_harness_runner.py`` keeps the fields
it must still declare in step). Stdlib only, with the overrides it carries: ``--help`` shows
the flags without importing the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from gym_assets.limits import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_ANSWER_BYTES,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_UNMEASURED_SHARE,
)
from gym_assets.rollouts.collection.overrides import RunOverrides

if TYPE_CHECKING:
    from gym_assets.records.contracts import Step

_FLAG, _HELP = "flag", "help"


def _option(default: Any, help: str | None = None, *, flag: str | None = None) -> Any:
    """A field a user sets by name: as ``flag`` on the command line (default: ``--`` and the
    name with dashes) and as the field's own name on the Dagster resource."""
    return field(default=default, metadata={_FLAG: flag, _HELP: help})


@dataclass(frozen=True)
class RunOptions:
    """What ``run_rollouts`` takes. The fields made with ``_option`` are the ones a user sets by
    name (``OPTIONS``); the script and the overrides are built from flags, not copied."""

    repeats: int | None = _option(None, "rollouts per task")
    concurrency: int = _option(DEFAULT_CONCURRENCY)
    # None: the cores this process may use, one worker per 32 rollouts in flight at most
    workers: int | None = _option(
        None,
        "worker processes sharing the rollouts in flight, one event loop and model gateway "
        "each (default: the cores, at most one per 32 in flight; 1: all in this process)",
    )
    limit: int | None = _option(None, "first N tasks")
    resume: bool = _option(False, "continue the run in --out")
    allow_plan_drift: bool = _option(False, "dispatch tasks that differ from the plan")
    timeout_s: float | None = _option(None, "per rollout", flag="--timeout")
    max_attempts: int = _option(DEFAULT_MAX_ATTEMPTS)
    # Judges a finished run rather than steering it: past it the run fails (exit 1, a blocking
    # check), naming the kinds that cost the measurements.
    max_unmeasured_share: float = _option(
        DEFAULT_MAX_UNMEASURED_SHARE,
        "fail (exit 1) when more than this share of the planned rollouts is unmeasured: masked, "
        "failed or never run (docs/rollouts.md, Accounting)",
    )
    script: Sequence[Step] | None = None  # what the scripted upstream plays (from --script FILE)
    allow_unsandboxed: bool = _option(
        False,
        "verify model-written code, and run command or cli harnesses, without isolation when "
        "no sandbox can be made (records then say sandbox: none); see docs/security.md",
    )
    quarantine_corrupt: bool = _option(
        False,
        "with --resume: move a run file with a damaged line aside as <name>.corrupt-<n> (its "
        "rollouts run again) instead of refusing",
    )
    max_request_bytes: int = _option(
        DEFAULT_MAX_REQUEST_BYTES,
        "refuse a model request larger than this (HTTP 413; agent_request_too_large)",
    )
    max_answer_bytes: int = _option(
        DEFAULT_MAX_ANSWER_BYTES,
        "refuse a model server's answer larger than this, streamed or not (agent_answer_too_large)",
    )
    overrides: RunOverrides = field(default_factory=RunOverrides)  # flat rows only (--override)
    # Which positions of the T planned rollouts this invocation reads, dispatches and analyses
    # (a shard of the partition, rollouts/shards.py); the inventory, the manifest and the plan
    # copy stay the whole run's, and the merge analyses the whole run.
    span: Callable[[int], range] | None = None

    @classmethod
    def of(cls, source: object, **given: Any) -> RunOptions:
        """The options ``source`` sets by name (parsed flags, a Dagster resource: those it has
        no attribute for keep their defaults), with ``given``, which need more than a value."""
        named = {name: getattr(source, name) for name in OPTIONS if hasattr(source, name)}
        return cls(**named, **given)


@dataclass(frozen=True)
class Option:
    """One option a user sets by name, as the command line and the resource show it."""

    name: str  # the field of RunOptions (and of HarnessRunner, where it has one)
    flag: str
    default: Any
    help: str | None


OPTIONS: dict[str, Option] = {
    f.name: Option(
        f.name, f.metadata[_FLAG] or "--" + f.name.replace("_", "-"), f.default, f.metadata[_HELP]
    )
    for f in fields(RunOptions)
    if _FLAG in f.metadata
}
