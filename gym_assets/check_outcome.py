"""The verdict of a check implemented in the library (the Dagster asset checks wrap it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CheckOutcome:
    """A check's verdict, a one-line description, and details for the UI.

    ``warn_only`` marks advisories: a failing one is shown as a warning and never blocks.
    """

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
    warn_only: bool = False
