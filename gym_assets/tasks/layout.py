"""Where every product lives under the data root.

One function per product so the CLI, the Dagster assets and the docs agree on paths:

    <data_root>/prepared/<benchmark>/        rows written by a benchmark's prepare script
    <data_root>/tasksets/<benchmark>/        collated taskset, metrics, validation report
    <data_root>/plans/<benchmark>/plan.json  eval plan (plan.previous.json: the one before)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path

    def prepared_dir(self, benchmark: str) -> Path:
        return self.root / "prepared" / benchmark

    def taskset_dir(self, benchmark: str) -> Path:
        return self.root / "tasksets" / benchmark

    def plan_path(self, benchmark: str) -> Path:
        return self.root / "plans" / benchmark / "plan.json"

    def previous_plan_path(self, benchmark: str) -> Path:
        """The plan this benchmark had before its latest plan (for drift reports)."""
        return self.root / "plans" / benchmark / "plan.previous.json"
