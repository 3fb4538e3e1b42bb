"""The verdict of a check implemented in the library (the Dagster asset checks wrap it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CheckOutcome:
    """A check's verdict, a one-line description, and details for the UI.

    ``warn_only`` marks advisories: a failing one is shown as a warning and never blocks.
    ``applicable`` is False when the check has nothing to judge (a property of rows the data does
    not have): the description says why, and no verdict is recorded, so nothing passes vacuously.
    """

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
    warn_only: bool = False
    applicable: bool = True

    @classmethod
    def not_applicable(cls, why: str) -> CheckOutcome:
        return cls(True, f"not applicable: {why}", applicable=False)
