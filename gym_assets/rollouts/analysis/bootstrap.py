"""Mean, standard error and a 95% bootstrap interval over tasks.

Tasks are the unit of resampling: rollouts of one task are not independent draws, so the
interval resamples whole tasks (each task's value once per draw). The generator is seeded and
the number of resamples fixed, so the same values always give the same interval.

- ``stderr``: the sample standard deviation (n − 1) over √n; None below two tasks.
- ``ci_low``/``ci_high``: the 2.5th and 97.5th percentiles of the means of ``RESAMPLES``
  resamples drawn with replacement; None below two tasks (one value has no spread to resample).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
DRAWS_AT_ONCE = 1 << 22  # task indices held at once (32 MiB), however many tasks there are


@dataclass(frozen=True)
class Interval:
    """An estimate over ``n`` tasks; the fields are None where ``n`` is too small for them."""

    n: int
    mean: float | None
    stderr: float | None
    ci_low: float | None
    ci_high: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """``0.732 ± 0.034 (95% CI 0.665–0.799, n=164 tasks)``, or why there is no interval."""
        if self.mean is None:
            return "n/a (no task measured)"
        if self.stderr is None or self.ci_low is None or self.ci_high is None:
            return f"{self.mean:.3f} (n={self.n} task: no interval from one task)"
        return (
            f"{self.mean:.3f} ± {self.stderr:.3f} ({CONFIDENCE:.0%} CI "
            f"{self.ci_low:.3f}–{self.ci_high:.3f}, n={self.n} tasks)"
        )


def estimate(values: Any, *, seed: int = SEED, resamples: int = RESAMPLES) -> Interval:
    """The mean of ``values`` (one per task; NaN entries are left out) with its interval."""
    data = np.asarray(values, dtype="float64")
    data = data[~np.isnan(data)]
    n = int(data.size)
    if n == 0:
        return Interval(0, None, None, None, None)
    mean = float(data.mean())
    if n == 1:
        return Interval(1, mean, None, None, None)
    if data.min() == data.max():  # every resample is this value (exactly, not up to rounding)
        return Interval(n, mean, 0.0, mean, mean)
    stderr = float(data.std(ddof=1)) / math.sqrt(n)
    generator = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = max(1, DRAWS_AT_ONCE // n)  # resamples drawn together: memory stays bounded
    for start in range(0, resamples, step):
        count = min(step, resamples - start)
        draws = generator.integers(0, n, size=(count, n))
        means[start : start + count] = data[draws].mean(axis=1)
    tail = (1.0 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(n, mean, stderr, float(low), float(high))
