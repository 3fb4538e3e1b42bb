"""Aggregate metrics of a run, one entry per environment server, computed from files.

Everything is derived from the inventory (materialized inputs), the success records and the
failure rows, sorted by ``(task, rollout)`` first, so the same files give the same numbers.

- ``summary``: the score with its denominator ("mean 0.500 over 10 of 10 planned; 0 masked;
  0 failed"), the same line the command, the report and the Dagster metadata show.
- ``passed``: measured rollouts whose reward is at least 1.0.
- ``outcomes``: every planned rollout is exactly one of measured (reward, not masked), masked,
  unscored (no reward: not a zero), failed (no success, at least one failed attempt) or pending
  (no row at all: never dispatched, or lost in flight).
- ``failure_kinds``: the latest failure of each failed rollout, by vocabulary name.
- ``masked_kinds``: the ``failure_kind`` of each masked record (why it is not a measurement).
- ``model_failure_kinds``: the ``failure_kind`` of each measured record the model's own failure
  scored 0 (``records.accounting``).
- ``agent_metrics``: mean, min, max, median and population std of every numeric top-level field
  over the unmasked successes (masked results are not measurements).
- ``pass_at_k``: for k in 1..the most rollouts a task has, the unbiased estimate
  ``1 - C(n-c, k) / C(n, k)`` averaged over tasks with n ≥ k measured rollouts, where a rollout
  passes when its reward is at least 1.0.
- ``reward_histogram``: measured rewards in ten bins over [0, 1] (plus below/above when used).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gym_assets.records import keys
from gym_assets.records.accounting import outcome_of
from gym_assets.records.keys import ENVIRONMENT_SERVER
from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.planned import PlannedRollout, agent_name
from gym_assets.rollouts.collection.records import failure_kind_of

PASS_REWARD = 1.0
HISTOGRAM_BINS = 10
STRIPPED_FIELDS = frozenset(
    {
        "response",
        "responses_create_params",
        keys.AGENT_OBSERVATIONS,
        keys.MODEL_CALL_CAPTURE,
        keys.TRAJECTORY,
    }
)
# What a summary row keeps beside the numeric fields: its key, what says how it counts
# (``rollout_outcome``, ``passed``, ``failure_kind_of``) and whose agent ran it.
SUMMARY_FIELDS = frozenset(
    {
        keys.TASK_INDEX,
        keys.ROLLOUT_INDEX,
        "reward",
        "mask_sample",
        "failure_kind",
        keys.FAILURE_KIND,
        keys.FAILURE_CLASS,
    }
)


@dataclass(frozen=True)
class Outcomes:
    """How many planned rollouts ended each way; each rollout counts once."""

    measured: int = 0
    masked: int = 0
    unscored: int = 0
    failed: int = 0
    pending: int = 0

    @property
    def produced(self) -> int:
        """Rollouts with a success record, whether or not it scores."""
        return self.measured + self.masked + self.unscored

    @property
    def planned(self) -> int:
        return self.measured + self.masked + self.unscored + self.failed + self.pending

    @property
    def unmeasured(self) -> int:
        """Rollouts our machinery lost a measurement of: masked, failed or never run. (An
        unscored one is a verifier's design, not a loss.)"""
        return self.masked + self.failed + self.pending

    @property
    def unmeasured_share(self) -> float:
        return self.unmeasured / self.planned if self.planned else 0.0


@dataclass(frozen=True)
class HistogramBin:
    lo: float | None  # None: everything below ``hi``
    hi: float | None  # None: everything above ``lo``
    count: int


@dataclass(frozen=True)
class RunTotals:
    """The metrics of one group of planned rollouts (see the module docstring)."""

    rollouts: int
    passed: int
    outcomes: Outcomes
    failure_kinds: Mapping[str, int]  # sorted by kind
    masked_kinds: Mapping[str, int]  # sorted by kind
    model_failure_kinds: Mapping[str, int]  # sorted by kind
    key_metrics: Mapping[str, float]  # ``mean/reward`` and ``pass@1``, when there are any
    agent_metrics: Mapping[str, float]
    pass_at_k: Mapping[str, float]
    reward_histogram: tuple[HistogramBin, ...]

    @property
    def reward_mean(self) -> float | None:
        return self.key_metrics.get("mean/reward")

    @property
    def unmeasured_kinds(self) -> dict[str, int]:
        """Why rollouts went unmeasured, by kind (masked and failed ones; ``pending``: never
        run or lost in flight), sorted by kind."""
        kinds: Counter[str] = Counter(self.failure_kinds) + Counter(self.masked_kinds)
        kinds["pending"] += self.outcomes.pending
        return dict(sorted((+kinds).items()))

    @property
    def headline(self) -> str:
        """The score with its denominator, e.g. "mean 0.500 over 10 of 10 planned; 0 masked;
        0 failed": every planned rollout is in it, measured or said why not."""
        o = self.outcomes
        mean = "mean -" if self.reward_mean is None else f"mean {self.reward_mean:.3f}"
        parts = [f"{mean} over {o.measured} of {o.planned} planned"]
        parts += [f"{o.masked} masked", f"{o.failed} failed"]
        parts += [f"{o.unscored} unscored"] if o.unscored else []
        parts += [f"{o.pending} pending"] if o.pending else []
        return "; ".join(parts)

    @property
    def pass_at_1(self) -> float | None:
        return self.pass_at_k.get("pass@1")

    def to_json(self) -> dict[str, Any]:
        """The entry's fields in the aggregate-metrics file, in the file's order."""
        entry = {"summary": self.headline, **asdict(self)}
        entry["reward_histogram"] = list(entry["reward_histogram"])
        return entry


def rollout_outcome(
    record: dict[str, Any] | None, failure: dict[str, Any] | None
) -> tuple[str, str]:
    """How one planned rollout ended (a field of ``Outcomes``) and, for a failed or masked one,
    the kind behind it (else "")."""
    if record is None:
        return ("pending", "") if failure is None else ("failed", failure_kind_of(failure))
    outcome = outcome_of(record)
    if outcome == "masked":
        return outcome, str(record.get("failure_kind") or "unspecified")
    return outcome, ""


def passed(record: dict[str, Any]) -> bool:
    """A measured rollout passes when its reward is at least ``PASS_REWARD``."""
    return record["reward"] >= PASS_REWARD


def pass_at_k_estimate(measured: int, passes: int, k: int) -> float:
    """The unbiased pass@k of one task with ``measured`` rollouts, ``passes`` of them passing."""
    return 1.0 - math.comb(measured - passes, k) / math.comb(measured, k)


def row_key(row: dict[str, Any]) -> Key:
    """A run file row's ``(task, rollout)``."""
    return row[keys.TASK_INDEX], row[keys.ROLLOUT_INDEX]


def _is_metric(name: str, value: Any) -> bool:
    """A numeric top-level field the agent metrics cover."""
    if name in STRIPPED_FIELDS or keys.is_collector_key(name) or isinstance(value, bool):
        return False
    return isinstance(value, int | float) and math.isfinite(value)


def _numeric_fields(record: dict[str, Any]) -> Iterable[tuple[str, float]]:
    return ((name, value) for name, value in record.items() if _is_metric(name, value))


def field_stats(records: list[dict[str, Any]]) -> dict[str, float]:
    """``{stat}/{field}`` for every numeric top-level field, fields in sorted order."""
    values: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for name, value in _numeric_fields(record):
            values[name].append(value)
    stats: dict[str, float] = {}
    for name in sorted(values):
        column = values[name]
        stats[f"mean/{name}"] = statistics.fmean(column)
        stats[f"min/{name}"] = min(column)
        stats[f"max/{name}"] = max(column)
        stats[f"median/{name}"] = statistics.median(column)
        stats[f"std/{name}"] = statistics.pstdev(column)
    return stats


def pass_at_k(passes_by_task: dict[int, list[bool]], max_k: int) -> dict[str, float]:
    """Unbiased pass@k for k in 1..max_k, over tasks with at least k measured rollouts."""
    result: dict[str, float] = {}
    for k in range(1, max_k + 1):
        estimates = [
            pass_at_k_estimate(len(passes), sum(passes), k)
            for passes in passes_by_task.values()
            if len(passes) >= k
        ]
        if estimates:
            result[f"pass@{k}"] = statistics.fmean(estimates)
    return result


def reward_histogram(rewards: list[float]) -> tuple[HistogramBin, ...]:
    """Ten bins over [0, 1] (the last one closed), plus out-of-range bins only when used."""
    counts = [0] * HISTOGRAM_BINS
    below = above = 0
    for reward in rewards:
        if reward < 0:
            below += 1
        elif reward > 1:
            above += 1
        else:
            counts[min(int(reward * HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
    bins = [
        HistogramBin(i / HISTOGRAM_BINS, (i + 1) / HISTOGRAM_BINS, count)
        for i, count in enumerate(counts)
    ]
    if below:
        bins.insert(0, HistogramBin(None, 0.0, below))
    if above:
        bins.append(HistogramBin(1.0, None, above))
    return tuple(bins)


def summarize(
    planned: Iterable[Key],
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
) -> RunTotals:
    """The metrics of one group of planned rollouts, given by their keys (see the module
    docstring)."""
    outcomes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    masked_kinds: Counter[str] = Counter()
    model_kinds: Counter[str] = Counter()
    unmasked: list[dict[str, Any]] = []
    passes: dict[int, list[bool]] = defaultdict(list)
    rollouts_per_task: Counter[int] = Counter()
    ordered = sorted(planned)
    for key in ordered:
        rollouts_per_task[key[0]] += 1
        record = records.get(key)
        outcome, kind = rollout_outcome(record, failures.get(key))
        outcomes[outcome] += 1
        if outcome == "failed":
            kinds[kind] += 1
        elif outcome == "masked":
            masked_kinds[kind] += 1
        if record is not None and outcome != "masked":
            unmasked.append(record)  # field_stats skips STRIPPED_FIELDS itself
        if record is not None and outcome == "measured":
            passes[key[0]].append(passed(record))
            if record.get("failure_kind") is not None:
                model_kinds[str(record["failure_kind"])] += 1
    stats = field_stats(unmasked)
    pass_k = pass_at_k(passes, max(rollouts_per_task.values(), default=0))
    rewards = [r["reward"] for r in unmasked if isinstance(r.get("reward"), int | float)]
    key_metrics = {k: stats[k] for k in ("mean/reward",) if k in stats}
    key_metrics.update({k: v for k, v in pass_k.items() if k == "pass@1"})
    return RunTotals(
        rollouts=len(ordered),
        passed=sum(sum(task) for task in passes.values()),
        outcomes=Outcomes(**outcomes),
        failure_kinds=dict(sorted(kinds.items())),
        masked_kinds=dict(sorted(masked_kinds.items())),
        model_failure_kinds=dict(sorted(model_kinds.items())),
        key_metrics=key_metrics,
        agent_metrics=stats,
        pass_at_k=pass_k,
        reward_histogram=reward_histogram(rewards),
    )


def summary_rows(rows: Iterable[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """The last row per ``(task, rollout)`` (for records: there is only one) with only the
    fields the summaries read: the numeric ones (the agent metrics), ``SUMMARY_FIELDS`` and
    the agent's name (``agent_ref``, one object per name), picked as each row is read. The
    rest (the payloads, the evidence, the task's own data a verifier echoes) is nearly all of
    a row, so summing up a run of a million rollouts holds a few hundred MB, not GBs."""
    agents: dict[str, dict[str, str]] = {}
    return {row_key(row): _summarized(row, agents) for row in rows}


def _summarized(row: dict[str, Any], agents: dict[str, dict[str, str]]) -> dict[str, Any]:
    kept = {
        name: value
        for name, value in row.items()
        if name in SUMMARY_FIELDS or _is_metric(name, value)
    }
    name = agent_name(row)
    if name is not None:
        kept["agent_ref"] = agents.setdefault(name, {"name": name})
    return kept


def aggregate(
    planned: Sequence[PlannedRollout],
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
) -> list[dict[str, Any]]:
    """One entry per environment server, in the order servers first appear in the inventory."""
    groups: dict[str, list[PlannedRollout]] = defaultdict(list)
    for item in planned:
        groups[item.server].append(item)
    entries = []
    for server, items in groups.items():
        label = _agent_label(items, records, failures) or server
        entries.append(
            {
                "agent_ref": {"name": label},
                ENVIRONMENT_SERVER: server,
                **summarize((item.key for item in items), records, failures).to_json(),
            }
        )
    return entries


def _agent_label(
    items: list[PlannedRollout],
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
) -> str | None:
    for item in sorted(items, key=lambda i: i.key):
        for row in (records.get(item.key), failures.get(item.key)):
            name = agent_name(row) if row else None
            if name is not None:
                return name
        if item.agent is not None:
            return item.agent
    return None
