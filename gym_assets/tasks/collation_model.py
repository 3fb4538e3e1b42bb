"""What collation takes and gives back: one declaration's input, the files written, and the
report shown as asset metadata and printed by the command line."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.config.model import DeclaredDataset
from gym_assets.modes import CollationMode, ValidationLevel


@dataclass(frozen=True)
class CollationInput:
    """One dataset declaration and the files it resolves to."""

    declared: DeclaredDataset
    source_path: Path
    prompt_config_path: Path | None = None
    sidecar_dir: Path | None = None  # default: the source file's directory

    @property
    def label(self) -> str:
        return f"{self.declared.instance.name}/{self.declared.dataset.name}"

    @property
    def sidecar_path(self) -> Path:
        directory = self.sidecar_dir or self.source_path.parent
        return directory / f"{self.source_path.stem}_metrics.json"


@dataclass(frozen=True)
class OutputFile:
    path: str
    sha256: str
    rows: int | None  # None for JSON documents


@dataclass
class DatasetSummary:
    """What collation did with one declaration."""

    label: str
    type: str
    source: str
    prepared: str
    taskset: str | None
    source_rows: int = 0
    rows_written: int = 0
    positional_ids: int = 0
    non_string_ids: int = 0  # rows whose own ID is not a string, used as its str()
    agent_ref_stripped: int = 0
    malformed_tasks: int = 0
    validation: dict[str, Any] | None = None


@dataclass
class CollationReport:
    """Everything a run produced and found, small enough to show as asset metadata."""

    mode: CollationMode
    validation_mode: ValidationLevel
    outputs: list[OutputFile] = field(default_factory=list[OutputFile])
    rows: int = 0  # rows written to the collated {type}.jsonl files, repeats included
    tasks: int = 0  # distinct tasks: source rows (a flat row is a task too), repeats excluded
    tasksets: list[str] = field(default_factory=list[str])
    datasets: list[DatasetSummary] = field(default_factory=list[DatasetSummary])
    duplicate_task_ids: list[str] = field(
        default_factory=list[str]
    )  # the first collate.KEPT_DUPLICATES
    duplicate_task_id_count: int = 0
    validation_reports: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    validation_summary: str = ""
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    warnings: list[str] = field(default_factory=list[str])
    preview: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    @property
    def positional_ids(self) -> dict[str, int]:
        return {d.label: d.positional_ids for d in self.datasets if d.positional_ids}

    @property
    def agent_ref_stripped(self) -> dict[str, int]:
        return {d.label: d.agent_ref_stripped for d in self.datasets if d.agent_ref_stripped}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def warn(self, message: str, category: type[Warning] = UserWarning) -> None:
        """Emit a warning and keep it, so that it also shows where warnings are not printed."""
        warnings.warn(message, category, stacklevel=3)
        self.warnings.append(message)
