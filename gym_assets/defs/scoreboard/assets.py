"""``scoreboard``: the latest result of every benchmark × harness × model, with its history.

The library (``rollouts.analysis.scoreboard``) reads the run directories' results, keeps
their history and renders it; this asset hands Dagster the same table, typed.
"""

from typing import Any

import dagster as dg

from gym_assets.defs.metadata import as_failure, labels, page_link
from gym_assets.defs.resources import GymWorkspace
from gym_assets.errors import UserError

AFTER_EVERY_ROLLOUTS_RUN = (
    (dg.AutomationCondition.newly_missing() | dg.AutomationCondition.any_deps_updated())
    .since_last_handled()
    .with_label("a rollouts partition materialized since the last render")
    & ~dg.AutomationCondition.in_progress()
).with_label("after every rollouts run")
"""Unlike ``eager()``, partitions of ``rollouts`` that never ran (a harness not installed)
or that are running do not hold the scoreboard back: it follows each run that finishes."""


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> dg.MetadataValue:
    schema = dg.TableSchema(
        columns=[dg.TableColumn(name, kind, description=text) for name, kind, text in columns]
    )
    return dg.MetadataValue.table([dg.TableRecord(row) for row in rows], schema=schema)


@dg.asset(
    group_name="rollouts",
    deps=[dg.AssetKey("rollouts")],  # by key: one step or shards (defs/rollouts/shards.py)
    kinds={"python", "html"},
    code_version="1",
    automation_condition=AFTER_EVERY_ROLLOUTS_RUN,
    **labels("evaluation"),
    description="The latest result of every benchmark × harness × model (reward mean with its "
    "95% interval, pass@k, masked and failed shares of the planned rollouts, run time, plan "
    "digest, when), with each cell's change against its previous run and its history, as a "
    "table here and as Markdown, HTML (a plot per cell) and JSON under "
    "`<data_root>/scoreboard/`. Re-rendered after every rollouts run.",
)
def scoreboard(workspace: GymWorkspace) -> dg.MaterializeResult:
    # Imported here: the analysis needs pandas and matplotlib, which loading the definitions
    # should not pay for.
    from gym_assets.rollouts.analysis.scoreboard import (
        BOARD_HTML,
        BOARD_MD,
        COLUMNS,
        REGRESSED,
        publish_scoreboard,
        table_rows,
    )

    paths = workspace.paths
    directory = paths.scoreboard_dir()
    try:
        board = publish_scoreboard(paths.rollouts_root(), directory, paths)
    except UserError as exc:
        raise as_failure(exc) from None
    regressed = [" × ".join(c.latest.cell) for c in board.cells if c.change == REGRESSED]
    return dg.MaterializeResult(
        metadata={
            "cells": dg.MetadataValue.int(len(board.cells)),
            "regressed": dg.MetadataValue.int(len(regressed)),
            "scoreboard": _table(table_rows(board), COLUMNS),
            "markdown": dg.MetadataValue.md((directory / BOARD_MD).read_text(encoding="utf-8")),
            "scoreboard_html": page_link(directory / BOARD_HTML),
            "scoreboard_md": dg.MetadataValue.path(str(directory / BOARD_MD)),
            "not_shown": dg.MetadataValue.md(
                "\n".join(f"- {note}" for note in board.notes) or "none"
            ),
        }
    )
