"""Resources of the rollouts and conformance assets: the model endpoint and how harnesses run."""

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from gym_assets.modes import UpstreamApi, UpstreamMode
from gym_assets.records.contracts import Step
from gym_assets.rollouts.collection.model_gateway import load_script
from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig, upstream_config
from gym_assets.rollouts.options import RunOptions
from gym_assets.suite.run import DEFAULT_TIMEOUT_S, SuiteSummary, run_suite

# The run options' defaults: a field named like an option is that option (RunOptions.of).
_RUN = RunOptions()


class ModelEndpoint(dg.ConfigurableResource):
    """Where the model gateway gets its answers: `upstream` is `reference` (the benchmark's
    reference answers, offline), `scripted` (`script_path`, a JSON step list) or `openai` (a
    real model at `base_url`). `api_key_env` is the NAME of the variable holding the key; the
    key itself is read from the environment when the run starts and never enters config, logs
    or metadata. `api` is the API the real model's server speaks (`responses`, `chat`, or
    `auto`: asked once at start); calls made in the other are translated."""

    upstream: UpstreamMode = "reference"
    base_url: str | None = None
    api_key_env: str | None = None
    model: str | None = None
    api: UpstreamApi = "auto"
    corrupt_fraction: float = 0.0
    seed: int = 0
    script_path: str | None = None

    def upstream_config(self) -> UpstreamConfig:
        return upstream_config(
            mode=self.upstream,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            model=self.model,
            api=self.api,
            corrupt_fraction=self.corrupt_fraction,
            seed=self.seed,
        )

    def script(self) -> list[Step] | None:
        return None if self.script_path is None else load_script(Path(self.script_path))


class HarnessRunner(dg.ConfigurableResource):
    """How harnesses are run: for rollouts, parallelism, repeats, deadlines, resume, and the
    budget of unmeasured rollouts (`max_unmeasured_share`: masked, failed or never run; past it
    the blocking `unmeasured_share` check fails); for the conformance suite, the per-episode
    timeout and how many episodes run at once (`conformance_jobs`; default: the number of
    cores). Every process (episodes, harness programs, the gateway) is started and supervised
    by the library, never by Dagster code. `allow_unsandboxed` lets model-written code be
    verified, and command or cli harnesses run, without isolation where no sandbox can be made
    (records then say `sandbox: none`); leave it off. `quarantine_corrupt` lets a resume move a
    damaged run file aside instead of failing. `resume` continues the partition's last run; a
    run that re-executes a failed run (Dagster's run retry) resumes whatever `resume` says.
    `max_request_bytes` and `max_answer_bytes` cap the bodies through the model gateway.
    `workers` spreads a run's rollouts in flight over that many processes, one core each
    (default: the cores, at most one per 32 in flight; 1: the step's own process)."""

    concurrency: int = _RUN.concurrency
    workers: int | None = _RUN.workers
    repeats: int | None = _RUN.repeats
    timeout_s: float | None = _RUN.timeout_s
    resume: bool = _RUN.resume
    quarantine_corrupt: bool = _RUN.quarantine_corrupt
    max_attempts: int = _RUN.max_attempts
    max_unmeasured_share: float = _RUN.max_unmeasured_share
    allow_unsandboxed: bool = _RUN.allow_unsandboxed
    max_request_bytes: int = _RUN.max_request_bytes
    max_answer_bytes: int = _RUN.max_answer_bytes
    conformance_timeout_s: float = DEFAULT_TIMEOUT_S
    conformance_jobs: int | None = None

    def options(self, script: list[Step] | None) -> RunOptions:
        return RunOptions.of(self, script=script)

    def run_conformance(
        self,
        config: Mapping[str, Any],
        harness: str,
        output: Path,
        *,
        scenarios: Sequence[str] | None = None,
        configs: str | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> SuiteSummary:
        """The conformance suite (all scenarios, or ``scenarios``) for one harness of
        ``config``'s registry, into ``output`` (which must not exist)."""
        return run_suite(
            config,
            harnesses=[harness],
            scenarios=scenarios,
            output=output,
            timeout_s=self.conformance_timeout_s,
            jobs=self.conformance_jobs,
            progress=progress,
            allow_unsandboxed=self.allow_unsandboxed,
            configs=configs,
        )
