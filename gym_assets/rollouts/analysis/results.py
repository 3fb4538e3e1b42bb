"""A run's result: the one small file a scoreboard reads instead of the run's records.

    <out>/rollouts_result.json   benchmark, harness, the model it ran, every planned rollout's
                                 outcome, the reward and pass@k estimates with their
                                 intervals, run time, plan digest and when the run finished

A run directory holds one benchmark × harness, and the next run there replaces it whatever
model it asks; so the model is part of the result, and a scoreboard keeps each result it has
seen (``scoreboard``). The model is named as the gateway answered under it, with the upstream
mode and the base URL stripped of credentials, query and fragment: nothing secret is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text, json_line
from gym_assets.outputs.markers import read_small_json
from gym_assets.rollouts.analysis.bootstrap import Interval
from gym_assets.rollouts.analysis.estimates import RunStatistics
from gym_assets.rollouts.collection.metrics import Outcomes

RESULT_FORMAT = 1
OUTCOMES = ("measured", "masked", "unscored", "failed", "pending")


def public_url(url: str | None) -> str | None:
    """``url`` without user, password, query or fragment (where a key could hide)."""
    if url is None:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Model:
    """The model a run ran: its name, the gateway's upstream mode, the server's base URL."""

    name: str
    upstream: str
    base_url: str | None = None

    @classmethod
    def of(cls, name: str, upstream: str, base_url: str | None) -> Model:
        return cls(name=name, upstream=upstream, base_url=public_url(base_url))

    @property
    def label(self) -> str:
        """What a scoreboard keys on: ``<name> (<upstream>)``, plus the server when remote."""
        label = f"{self.name} ({self.upstream})"
        return f"{label} @ {self.base_url}" if self.base_url else label

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Result:
    """One finished run of a benchmark with a harness and a model (module docstring)."""

    benchmark: str
    harness: str
    model: Model
    planned: int
    outcomes: dict[str, int]  # every planned rollout once: the counts add up to ``planned``
    reward: Interval
    pass_at_k: dict[str, Interval]
    seconds: float
    plan_digest: str
    finished_at: str  # ISO 8601, UTC

    @property
    def cell(self) -> tuple[str, str, str]:
        return (self.benchmark, self.harness, self.model.label)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """Tells results apart: a cell's runs finish at different times."""
        return (*self.cell, self.finished_at)

    def share(self, outcome: str) -> float:
        return self.outcomes[outcome] / self.planned if self.planned else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RESULT_FORMAT,
            "benchmark": self.benchmark,
            "harness": self.harness,
            "model": self.model.to_json(),
            "planned": self.planned,
            "outcomes": dict(self.outcomes),
            "reward": self.reward.to_json(),
            "pass_at_k": {name: value.to_json() for name, value in self.pass_at_k.items()},
            "seconds": self.seconds,
            "plan_digest": self.plan_digest,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_json(cls, value: Any) -> Result:
        """The result in ``value``; ``ValueError`` saying what is wrong when it is not one."""
        if not isinstance(value, dict) or value.get("format") != RESULT_FORMAT:
            raise ValueError(f"not a result of format {RESULT_FORMAT}")
        try:
            outcomes = {name: int(value["outcomes"][name]) for name in OUTCOMES}
            result = cls(
                benchmark=str(value["benchmark"]),
                harness=str(value["harness"]),
                model=Model(**value["model"]),
                planned=int(value["planned"]),
                outcomes=outcomes,
                reward=Interval(**value["reward"]),
                pass_at_k={str(k): Interval(**v) for k, v in value["pass_at_k"].items()},
                seconds=float(value["seconds"]),
                plan_digest=str(value["plan_digest"]),
                finished_at=str(value["finished_at"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"a field is missing or of the wrong type ({exc})") from None
        if sum(outcomes.values()) != result.planned:
            raise ValueError(
                f"its outcomes count {sum(outcomes.values())} rollouts, not the "
                f"{result.planned} planned"
            )
        return result


def run_result(
    *,
    benchmark: str,
    harness: str,
    model: Model,
    outcomes: Outcomes,
    statistics: RunStatistics,
    seconds: float,
    plan_digest: str,
    finished_at: datetime,
) -> Result:
    return Result(
        benchmark=benchmark,
        harness=harness,
        model=model,
        planned=outcomes.planned,
        outcomes={name: getattr(outcomes, name) for name in OUTCOMES},
        reward=statistics.reward,
        pass_at_k=dict(statistics.pass_at_k),
        seconds=round(seconds, 3),
        plan_digest=plan_digest,
        finished_at=finished_at.isoformat(timespec="microseconds"),
    )


def write_result(path: Path, result: Result) -> None:
    atomic_write_text(path, json_line(result.to_json()).decode())


def read_result(path: Path) -> Result:
    """The result at ``path``; a ``UserError`` naming the file when it cannot be one."""
    value = read_small_json(path)
    if value is None:
        raise UserError("not a readable result file (a small JSON file); run again", path=path)
    try:
        return Result.from_json(value)
    except ValueError as exc:
        raise UserError(f"not a run result: {exc}; run the partition again", path=path) from None
