"""Product kinds and the markers that say a path was written by gym-assets.

A product directory holds ``.gym-assets-product.json``::

    {"format": 1, "product": "taskset", "written_by": "gym-assets"}

A single-file product whose bytes belong to another format (an eval plan must stay exactly
NeMo Gym's plan file) gets the marker beside it, ``.<name>.gym-assets.json``, which also lists
the sha256 of the bytes written: a file someone replaced after us is then no longer ours. A
marker that cannot be read (not a small regular JSON file of this shape) counts as absent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.fileio import atomic_write_text
from gym_assets.untrusted_files import RefusedFile, read_beneath

MARKER_NAME = ".gym-assets-product.json"
WRITTEN_BY = "gym-assets"
MARKER_FORMAT = 1
_MAX_MARKER_BYTES = 64 * 1024


@dataclass(frozen=True)
class Kind:
    """A kind of product: ``id`` is stored in markers, ``label`` reads well after "holds"."""

    id: str
    label: str


TASKSET = Kind("taskset", "a taskset")
COLLATION = Kind("collation", "a collation of every dataset of a config")
PREPARED = Kind("prepared", "prepared rows")
PLAN_DIR = Kind("plan", "a benchmark's plans")
PLAN_FILE = Kind("plan-file", "a plan file")
METRICS = Kind("metrics", "dataset metrics")
METRICS_CONFLICTS = Kind("metrics-conflicts", "conflicting dataset metrics")
ROLLOUTS_RUN = Kind("rollouts-run", "a rollouts run")
ROLLOUTS_INVENTORY = Kind("rollouts-inventory", "a partition's rollouts inventory")
CAPTURES = Kind("captures", "model-call captures")
RUN_REPORT = Kind("run-report", "a rollouts run's report records")
RUN_HISTORY = Kind("run-history", "a rollouts run's per-task snapshots")
REVERIFIED_RUN = Kind("reverified-run", "a re-verified rollouts run")
CONFORMANCE_REPORTS = Kind("conformance-reports", "conformance reports")
CONFORMANCE_MATRIX = Kind("conformance-matrix", "a conformance matrix")
CONFORMANCE_RUN = Kind("conformance-run", "a conformance run")
CONFORMANCE_RUNS = Kind("conformance-runs", "a harness's conformance runs")
CONFORMANCE_SWEEP = Kind("conformance-sweep", "the conformance matrix of every harness")
CATALOGUE = Kind("catalogue", "the conformance check catalogue")
ALERTS = Kind("alerts", "an alert log")
SCOREBOARD = Kind("scoreboard", "the rollouts scoreboard")
HARNESS_INSTALL = Kind("harness-install", "a harness install")

KINDS = {
    kind.id: kind
    for kind in (
        TASKSET,
        COLLATION,
        PREPARED,
        PLAN_DIR,
        PLAN_FILE,
        METRICS,
        METRICS_CONFLICTS,
        ROLLOUTS_RUN,
        CAPTURES,
        RUN_REPORT,
        RUN_HISTORY,
        REVERIFIED_RUN,
        CONFORMANCE_REPORTS,
        CONFORMANCE_MATRIX,
        CONFORMANCE_RUN,
        CONFORMANCE_RUNS,
        CONFORMANCE_SWEEP,
        CATALOGUE,
        ALERTS,
        SCOREBOARD,
        HARNESS_INSTALL,
    )
}


def label_of(kind_id: str) -> str:
    kind = KINDS.get(kind_id)
    return kind.label if kind else f"a gym-assets product of kind {kind_id!r}"


def _document(kind: Kind, **extra: Any) -> str:
    fields = {"format": MARKER_FORMAT, "product": kind.id, "written_by": WRITTEN_BY, **extra}
    return json.dumps(fields, sort_keys=True) + "\n"


def read_small_json(path: Path) -> Any:
    """A small JSON file gym-assets keeps beside a product (a marker, an inputs record), or
    None: read only when it is a regular file of at most 64 KiB, never through a link, a FIFO
    or a device someone put in its place."""
    try:
        return json.loads(read_beneath(path.parent, path.name, _MAX_MARKER_BYTES))
    except (OSError, ValueError, RecursionError, RefusedFile):
        return None


def _read(path: Path) -> dict[str, Any] | None:
    """The marker's fields, or None when there is no readable marker of ours at ``path``."""
    value = read_small_json(path)
    if (
        not isinstance(value, dict)
        or value.get("written_by") != WRITTEN_BY
        or value.get("format") != MARKER_FORMAT
        or not isinstance(value.get("product"), str)
    ):
        return None
    return value


def dir_marker(directory: Path) -> str | None:
    """The product kind id the directory's marker names, or None."""
    fields = _read(directory / MARKER_NAME)
    return None if fields is None else fields["product"]


def write_dir_marker(directory: Path, kind: Kind) -> None:
    atomic_write_text(directory / MARKER_NAME, _document(kind))


def file_marker_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.gym-assets.json")


@dataclass(frozen=True)
class FileMarker:
    kind_id: str
    sha256: frozenset[str]  # digests the file may have: the last one written (and, while a
    # replacement is being renamed into place, the one before)


def file_marker(path: Path) -> FileMarker | None:
    fields = _read(file_marker_path(path))
    if fields is None:
        return None
    digests = fields.get("sha256")
    if not isinstance(digests, list) or not all(isinstance(d, str) for d in digests):
        return None
    return FileMarker(fields["product"], frozenset(digests))


def write_file_marker(path: Path, kind: Kind, digests: Iterable[str]) -> None:
    atomic_write_text(file_marker_path(path), _document(kind, sha256=sorted(set(digests))))
