"""The scoreboard: the latest result of every benchmark × harness × model, with its history.

    <data_root>/scoreboard/results.jsonl     every run result seen (``results.Result``), oldest
                                             first, at most ``KEEP`` per cell
    <data_root>/scoreboard/scoreboard.json   the cells: latest, previous, delta, history
    <data_root>/scoreboard/scoreboard.md     the table as Markdown
    <data_root>/scoreboard/scoreboard.html   the table and a plot per cell over time

A run directory keeps only its last run, whatever model ran it; the scoreboard keeps every
result it has read, so a run with another model adds a cell instead of replacing one, and a
cell's earlier runs stay to compare with. Publishing reads each run directory's result
(``<data_root>/rollouts/<benchmark>/<harness>/rollouts_result.json``), adds the new ones to
the history, and renders; a run directory without a readable result is named in the notes
(the rest still publish). Nothing depends on the clock: the same history gives the same bytes.

A cell's change against its previous run: ``regressed`` when the latest mean reward lies
below the previous run's 95% interval, ``improved`` above it, ``within interval`` inside it
(``changed`` when the previous run had no interval and another mean), ``not measured``
when the latest run measured nothing, ``first run`` when there is no previous run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError, reported
from gym_assets.fileio import atomic_write_text, iter_jsonl
from gym_assets.limits import MAX_NESTING
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import SCOREBOARD
from gym_assets.outputs.targets import Roots, Target
from gym_assets.rollouts.analysis.results import Result, read_result
from gym_assets.rollouts.collection.files import RunFiles, write_jsonl_atomic

KEEP = 50  # results kept per cell
HISTORY_FILE = "results.jsonl"
BOARD_JSON = "scoreboard.json"
BOARD_MD = "scoreboard.md"
BOARD_HTML = "scoreboard.html"

REGRESSED, IMPROVED, WITHIN = "regressed", "improved", "within interval"
CHANGED, FIRST, UNMEASURED = "changed", "first run", "not measured"


@dataclass(frozen=True)
class Cell:
    """One benchmark × harness × model: its runs, oldest first, the latest last."""

    history: tuple[Result, ...]

    @property
    def latest(self) -> Result:
        return self.history[-1]

    @property
    def previous(self) -> Result | None:
        return self.history[-2] if len(self.history) > 1 else None

    @property
    def reward_delta(self) -> float | None:
        """Latest − previous mean reward (None without both)."""
        previous = self.previous
        if previous is None or previous.reward.mean is None or self.latest.reward.mean is None:
            return None
        return self.latest.reward.mean - previous.reward.mean

    @property
    def change(self) -> str:
        """How the latest run compares with the previous one (module docstring)."""
        previous, mean = self.previous, self.latest.reward.mean
        if previous is None:
            return FIRST
        if mean is None:
            return UNMEASURED
        low, high = previous.reward.ci_low, previous.reward.ci_high
        if previous.reward.mean is None or low is None or high is None:
            return WITHIN if mean == previous.reward.mean else CHANGED
        if mean < low:
            return REGRESSED
        return IMPROVED if mean > high else WITHIN

    def to_json(self) -> dict[str, Any]:
        benchmark, harness, model = self.latest.cell
        return {
            "benchmark": benchmark,
            "harness": harness,
            "model": model,
            "change": self.change,
            "reward_delta": self.reward_delta,
            "latest": self.latest.to_json(),
            "previous": None if self.previous is None else self.previous.to_json(),
            "history": [result.to_json() for result in self.history],
        }


@dataclass(frozen=True)
class Scoreboard:
    cells: tuple[Cell, ...]  # sorted by benchmark, harness, model
    notes: tuple[str, ...]  # run directories whose result could not be read
    directory: Path | None = None  # where it was published

    def to_json(self) -> dict[str, Any]:
        return {
            "cells": [cell.to_json() for cell in self.cells],
            "notes": list(self.notes),
        }


def merged(history: Iterable[Result], found: Iterable[Result]) -> list[Result]:
    """Every result once (by identity), oldest first, at most ``KEEP`` per cell."""
    unique = {result.identity: result for result in [*history, *found]}
    ordered = sorted(unique.values(), key=lambda r: (r.finished_at, r.cell))
    per_cell: dict[tuple[str, str, str], list[Result]] = {}
    for result in ordered:
        per_cell.setdefault(result.cell, []).append(result)
    kept = {r.identity for results in per_cell.values() for r in results[-KEEP:]}
    return [result for result in ordered if result.identity in kept]


def cells_of(results: Iterable[Result]) -> tuple[Cell, ...]:
    """The cells of ``results`` (each cell's runs in time order), sorted by cell."""
    per_cell: dict[tuple[str, str, str], list[Result]] = {}
    for result in sorted(results, key=lambda r: r.finished_at):
        per_cell.setdefault(result.cell, []).append(result)
    return tuple(Cell(tuple(per_cell[key])) for key in sorted(per_cell))


def run_results(rollouts_root: Path) -> tuple[list[Result], list[str]]:
    """The result of every run directory ``<rollouts_root>/<benchmark>/<harness>/``, and a
    note for each directory that has none to read."""
    results, notes = [], []
    if not rollouts_root.is_dir():
        return results, notes
    with reported(rollouts_root):
        run_dirs = sorted(p for p in rollouts_root.glob("*/*") if p.is_dir())
    for run_dir in run_dirs:
        path = RunFiles(run_dir).result
        if not path.exists():
            notes.append(
                f"{run_dir}: no result (its last run did not finish, or ran before runs "
                "recorded one); run the partition again to show it"
            )
            continue
        try:
            results.append(read_result(path))
        except UserError as exc:
            notes.append(exc.render())
    return results, notes


def read_history(path: Path) -> list[Result]:
    """The scoreboard's results file; a damaged line is a ``UserError`` naming it."""
    if not path.exists():
        return []
    results = []
    for line, value in iter_jsonl(path, max_depth=MAX_NESTING):
        try:
            results.append(Result.from_json(value))
        except ValueError as exc:
            raise UserError(
                f"not a run result ({exc}); delete the file to start the history afresh "
                "(the run directories' latest results are read again)",
                path=path,
                line=line,
            ) from None
    return results


def publish_scoreboard(rollouts_root: Path, directory: Path, roots: Roots) -> Scoreboard:
    """Add the run directories' results to the history in ``directory`` and render it."""
    # Imported here: matplotlib is needed only to render.
    from gym_assets.rollouts.analysis.scoreboard_page import render_html, render_markdown

    with claimed_dir(Target.of(directory, SCOREBOARD, roots)):
        history_path = directory / HISTORY_FILE
        found, notes = run_results(rollouts_root)
        results = merged(read_history(history_path), found)
        board = Scoreboard(cells_of(results), tuple(notes), directory)
        write_jsonl_atomic(history_path, [result.to_json() for result in results])
        atomic_write_text(directory / BOARD_JSON, _json(board.to_json()))
        atomic_write_text(directory / BOARD_MD, render_markdown(board))
        atomic_write_text(directory / BOARD_HTML, render_html(board))
    return board


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


COLUMNS: list[tuple[str, str, str]] = [
    ("benchmark", "string", "the benchmark"),
    ("harness", "string", "the harness (agent) that ran it"),
    ("model", "string", "the model: name (upstream mode) @ server"),
    ("reward_mean", "float", "mean reward over measured tasks (latest run)"),
    ("reward_ci_low", "float", "95% bootstrap interval over tasks, low end"),
    ("reward_ci_high", "float", "95% bootstrap interval over tasks, high end"),
    ("previous_reward_mean", "float", "the cell's previous run's mean reward"),
    ("reward_delta", "float", "latest − previous mean reward"),
    ("change", "string", "regressed / improved / within interval of the previous run"),
    ("pass_at_1", "float", "pass@1 over tasks"),
    ("pass_at_k", "string", "every pass@k estimate of the run"),
    ("planned", "int", "planned rollouts; the five outcome counts add up to it"),
    ("measured", "int", "rollouts with a reward, not masked"),
    ("masked", "int", "rollouts masked (our machinery's failure, not the model's)"),
    ("failed", "int", "rollouts without a result"),
    ("unscored", "int", "rollouts the verifier did not score"),
    ("pending", "int", "rollouts never run or lost in flight"),
    ("masked_share", "float", "masked / planned"),
    ("failed_share", "float", "failed / planned"),
    ("seconds", "float", "run time of the run's last invocation"),
    ("plan_digest", "string", "digest of the plan's pins the run was pinned to"),
    ("finished_at", "string", "when the run finished (UTC)"),
    ("runs", "int", "runs of this cell in the history"),
]


def pass_at_k_text(result: Result) -> str:
    """``pass@1 0.500 · pass@4 0.900`` (``–`` for an estimate with no value)."""
    return " · ".join(
        f"{name} {'–' if value.mean is None else f'{value.mean:.3f}'}"
        for name, value in result.pass_at_k.items()
    )


def table_rows(board: Scoreboard) -> list[dict[str, Any]]:
    """One row per cell with the ``COLUMNS`` (None where a value does not exist)."""
    rows = []
    for cell in board.cells:
        latest, previous = cell.latest, cell.previous
        pass_at_1 = latest.pass_at_k.get("pass@1")
        rows.append(
            {
                "benchmark": latest.benchmark,
                "harness": latest.harness,
                "model": latest.model.label,
                "reward_mean": latest.reward.mean,
                "reward_ci_low": latest.reward.ci_low,
                "reward_ci_high": latest.reward.ci_high,
                "previous_reward_mean": None if previous is None else previous.reward.mean,
                "reward_delta": cell.reward_delta,
                "change": cell.change,
                "pass_at_1": None if pass_at_1 is None else pass_at_1.mean,
                "pass_at_k": pass_at_k_text(latest),
                "planned": latest.planned,
                **latest.outcomes,
                "masked_share": latest.share("masked"),
                "failed_share": latest.share("failed"),
                "seconds": latest.seconds,
                "plan_digest": latest.plan_digest,
                "finished_at": latest.finished_at,
                "runs": len(cell.history),
            }
        )
    return rows
