"""Write a benchmark's plan into the data root, keeping the one it replaces for drift reports."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from gym_assets.io import atomic_write_bytes
from gym_assets.plans.model import Plan, load_plan
from gym_assets.plans.render import plan_text


@dataclass(frozen=True)
class PublishedPlan:
    path: Path
    sha256: str
    replaced_previous: bool


def publish_plan(plan: Plan, path: Path, previous_path: Path) -> PublishedPlan:
    """Move the current plan (if any) to ``previous_path`` and write ``plan`` at ``path``."""
    data = plan_text(plan).encode("utf-8")
    replaced = path.is_file()
    if replaced:
        atomic_write_bytes(previous_path, path.read_bytes())
    atomic_write_bytes(path, data)
    return PublishedPlan(path, hashlib.sha256(data).hexdigest(), replaced)


def load_previous(previous_path: Path) -> Plan | None:
    return load_plan(previous_path) if previous_path.is_file() else None
