"""The project's code location plus ``empty_job`` (one op that does nothing), for
``bench/dagster_runs.py``: the empty job's run, launched through the same instance, code server,
run launcher and executor as the real jobs, is the fixed cost every run pays."""

import dagster as dg

from gym_assets.definitions import defs as project_defs


@dg.op
def nothing() -> None:
    """No work: what is left of the run is Dagster's fixed cost."""


@dg.job(description="One op that does nothing; runs under the code location's default executor.")
def empty_job() -> None:
    nothing()


defs = dg.Definitions.merge(project_defs, dg.Definitions(jobs=[empty_job]))
