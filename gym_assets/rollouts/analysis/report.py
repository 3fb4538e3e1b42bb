"""The run's HTML report: one self-contained page a person opens in a browser.

Everything is inline (CSS, the plots as SVG from matplotlib); nothing is fetched, no script
runs. Every string that came from data (task ids, failure kinds, digests) is escaped, since a
task or a verifier may put markup there. The page is deterministic: matplotlib's SVG ids come
from a fixed salt and carry no date, and nothing on the page depends on the clock, so the same
run and the same previous snapshot give the same bytes.

Each rollout's row links (a relative href) to ``report/<task>-<rollout>.json``: its record, or
for a failed rollout its latest failure row. A run of many tasks lists the ones with the lowest
mean reward (``publish.REPORT_TASKS``) and says so.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import matplotlib
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.typing import RcKeyType

from gym_assets.plans.canonical import short_digest
from gym_assets.rollouts.analysis.bootstrap import CONFIDENCE, Interval
from gym_assets.rollouts.analysis.compare import Comparison
from gym_assets.rollouts.analysis.estimates import RunStatistics
from gym_assets.rollouts.collection.metrics import HistogramBin, RunTotals

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .2em .6em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plots figure { margin: 0; } .muted { color: #666; } code { font-size: .95em; }
"""
SVG_RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "gym-assets-report",
    "svg.fonttype": "path",
    "text.parse_math": False,
}
SVG_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}


@dataclass(frozen=True)
class ReportInput:
    """What the page shows; ``table`` holds the tasks it lists, of ``tasks`` in the run (None:
    all of them); ``links`` maps a task index to its rollouts' (index, href)."""

    benchmark: str
    harness: str
    totals: RunTotals
    statistics: RunStatistics
    table: pd.DataFrame
    links: Mapping[int, Sequence[tuple[int, str | None]]]
    comparison: Comparison | None
    previous: str | None  # the snapshot compared with
    tasks: int | None = None


def svg(figure: Figure) -> str:
    """The figure as inline SVG, deterministic (fixed id salt, no date)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(SVG_RC):
        figure.savefig(buffer, format="svg", metadata=SVG_METADATA)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # no XML prolog or DOCTYPE inside HTML


def _bin_label(item: HistogramBin) -> str:
    low = "" if item.lo is None else f"{item.lo:.1f}"
    high = "" if item.hi is None else f"{item.hi:.1f}"
    return f"{low}–{high}" if low and high else (f"< {high}" if high else f"> {low}")


def reward_plot(bins: Sequence[HistogramBin]) -> str:
    figure = Figure(figsize=(6, 3))
    axes = figure.subplots()
    axes.bar([_bin_label(b) for b in bins], [b.count for b in bins], color="#3a6ea5")
    axes.set_xlabel("reward (measured rollouts)")
    axes.set_ylabel("rollouts")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.tick_params(axis="x", labelrotation=45, labelsize=8)
    figure.tight_layout()
    return svg(figure)


def failure_plot(failed: Mapping[str, int], masked: Mapping[str, int]) -> str | None:
    bars = [(f"failed: {k}", v, "#b5473a") for k, v in failed.items()]
    bars += [(f"masked: {k}", v, "#c9a227") for k, v in masked.items()]
    if not bars:
        return None
    figure = Figure(figsize=(6, 0.6 + 0.35 * len(bars)))
    axes = figure.subplots()
    axes.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    axes.invert_yaxis()
    axes.set_xlabel("rollouts")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.tight_layout()
    return svg(figure)


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _interval_row(name: str, value: Interval) -> list[str]:
    ci = (
        "–"
        if value.ci_low is None or value.ci_high is None
        else f"{value.ci_low:.3f} – {value.ci_high:.3f}"
    )
    return [escape(name), _number(value.mean), _number(value.stderr), ci, str(value.n)]


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> str:
    """A table of cells that are already HTML (escaped by the caller)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>\n"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def _statistics(stats: RunStatistics) -> str:
    rows = [_interval_row("reward mean", stats.reward)]
    rows += [_interval_row(name, value) for name, value in stats.pass_at_k.items()]
    note = (
        f"<p class=muted>Over tasks (each task's mean reward or pass@k estimate counts once); "
        f"{CONFIDENCE:.0%} interval by a seeded bootstrap over tasks. An interval needs at "
        "least two measured tasks.</p>"
    )
    headers = ["estimate", "mean", "std. error", f"{CONFIDENCE:.0%} CI", "tasks"]
    return html_table(headers, rows, {1, 2, 4}) + note


def _outcomes(report: ReportInput) -> str:
    outcomes = report.totals.outcomes
    names = ["measured", "masked", "unscored", "failed", "pending"]
    rows = [[name, str(getattr(outcomes, name))] for name in names]
    return html_table(["outcome", "rollouts"], rows, {1})


def _comparison(report: ReportInput) -> str:
    comparison = report.comparison
    if comparison is None or report.previous is None:
        return "<p>No previous run to compare (no earlier snapshot in <code>history/</code>).</p>"
    parts = [
        f"<p>Against the previous run (snapshot <code>{escape(report.previous)}</code>): "
        f"{comparison.paired} tasks paired by task index and input digest.</p>",
        html_table(
            ["estimate", "mean", "std. error", f"{CONFIDENCE:.0%} CI", "tasks"],
            [_interval_row("reward difference (this − previous)", comparison.reward_delta)],
            {1, 2, 4},
        ),
    ]
    for title, listed in comparison.sections("the previous run", "this run"):
        items = "".join(f"<li>{escape(task.describe())}</li>" for task in listed.tasks)
        more = listed.count - len(listed.tasks)
        tail = f"<li class=muted>… {more} more</li>" if more else ""
        listing = f"<ul>{items}{tail}</ul>" if listed.count else ""
        parts.append(f"<p>{escape(title)}: {listed.count}</p>{listing}")
    return "\n".join(parts)


def _task_rows(report: ReportInput) -> list[list[str]]:
    rows = []
    for task in report.table.to_dict("records"):
        index = int(task["task_index"])
        links = " ".join(
            f'<a href="{escape(href)}">{rollout}</a>' if href else f"{rollout} (pending)"
            for rollout, href in report.links.get(index, ())
        )
        digest = str(task["input_digest"])
        rows.append(
            [
                str(index),
                escape(str(task["task_id"])),
                f'<code title="{escape(digest)}">{escape(short_digest(digest))}</code>',
                str(task["rollouts"]),
                str(task["measured"]),
                str(task["masked"]),
                str(task["failed"]),
                str(task["passes"]),
                "–" if pd.isna(task["reward_mean"]) else f"{task['reward_mean']:.3f}",
                links,
            ]
        )
    return rows


def _tasks_note(report: ReportInput) -> str:
    """What a page listing some of the run's tasks says of the rest."""
    listed = len(report.table)
    if report.tasks is None or report.tasks <= listed:
        return ""
    return (
        f"<p class=muted>The {listed:,} tasks with the lowest mean reward (unmeasured first) of "
        f"the run's {report.tasks:,}, each with its rollouts' files; every task's row is in the "
        "run's snapshot under <code>history/</code>.</p>\n"
    )


def render(report: ReportInput) -> str:
    """The page (see the module docstring)."""
    title = f"Rollouts: {report.benchmark} × {report.harness}"
    failures = failure_plot(report.totals.failure_kinds, report.totals.masked_kinds)
    plots = [
        f"<figure>{reward_plot(report.totals.reward_histogram)}"
        "<figcaption>Reward distribution</figcaption></figure>",
        f"<figure>{failures}<figcaption>Failure and masking kinds</figcaption></figure>"
        if failures
        else "<p>No failed or masked rollouts.</p>",
    ]
    headers = ["task", "task id", "input digest", "rollouts", "measured", "masked", "failed"]
    headers += ["passes", "mean reward", "records (by rollout)"]
    sections: list[tuple[str, Any]] = [
        ("Statistics", _statistics(report.statistics)),
        ("Outcomes", _outcomes(report)),
        ("Plots", f'<div class="plots">{"".join(plots)}</div>'),
        ("Compared with the previous run", _comparison(report)),
        (
            "Tasks",
            _tasks_note(report) + html_table(headers, _task_rows(report), {0, 3, 4, 5, 6, 7, 8}),
        ),
    ]
    body = "\n".join(f"<h2>{escape(name)}</h2>\n{html}" for name, html in sections)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n<p>{escape(report.totals.headline)}</p>\n{body}\n"
        "</body></html>\n"
    )
