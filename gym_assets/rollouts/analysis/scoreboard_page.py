"""The scoreboard as Markdown and as one self-contained HTML page.

The page is made as the run report is (``report``): inline CSS, plots as inline SVG from
matplotlib with a fixed id salt, no script, nothing fetched; every string from data is
escaped. One plot per cell shows its mean reward (with the 95% interval) and pass@1 over its
runs, so a regression shows as a drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from matplotlib.figure import Figure

from gym_assets.plans.canonical import short_digest
from gym_assets.rollouts.analysis.report import STYLE, html_table, svg
from gym_assets.rollouts.analysis.results import Result
from gym_assets.rollouts.analysis.scoreboard import (
    IMPROVED,
    REGRESSED,
    Cell,
    Scoreboard,
    pass_at_k_text,
)

TITLE = "Rollouts scoreboard"
INTRO = (
    "The latest run of every benchmark × harness × model. Reward mean and pass@k are over "
    "tasks, with a 95% bootstrap interval; every planned rollout is counted once as measured, "
    "masked, failed, unscored or pending. The change compares the latest mean with the "
    "previous run's interval."
)
PAGE_STYLE = """
body { max-width: 110em; padding: 0 1em; }
th { background: #e4ebf3; } tbody tr:nth-child(even) { background: #f5f7fa; }
.bad { color: #b5473a; font-weight: 600; } .good { color: #2f7d32; }
"""
"""Beside the report's style: a wider page for the wide table, shaded headers and rows."""
SHOWN_OUTCOMES = ("measured", "masked", "failed", "unscored", "pending")
HEADERS = [
    "benchmark",
    "harness",
    "model",
    "reward mean (95% CI)",
    "vs previous",
    "pass@k",
    "planned",
    *SHOWN_OUTCOMES,
    "run time",
    "plan",
    "finished",
]


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _reward(result: Result) -> str:
    reward = result.reward
    if reward.ci_low is None or reward.ci_high is None:
        return _number(reward.mean)
    return f"{reward.mean:.3f} ({reward.ci_low:.3f}–{reward.ci_high:.3f})"


def _versus(cell: Cell) -> str:
    delta = cell.reward_delta
    return cell.change if delta is None else f"{delta:+.3f} {cell.change}"


def _count(result: Result, outcome: str) -> str:
    """The count, with its share of the planned rollouts when a rollout went unmeasured."""
    count = result.outcomes[outcome]
    return (
        f"{count} ({result.share(outcome):.1%})" if count and outcome != "measured" else str(count)
    )


def _when(result: Result) -> str:
    return result.finished_at[:19].replace("T", " ")


def _cells(cell: Cell) -> list[str]:
    """The row of a cell as plain text (escaped by the HTML renderer, piped for Markdown)."""
    latest = cell.latest
    return [
        latest.benchmark,
        latest.harness,
        latest.model.label,
        _reward(latest),
        _versus(cell),
        pass_at_k_text(latest) or "–",
        str(latest.planned),
        *(_count(latest, outcome) for outcome in SHOWN_OUTCOMES),
        f"{latest.seconds:.1f} s",
        short_digest(latest.plan_digest),
        _when(latest),
    ]


def _md_cell(text: str) -> str:
    return escape(text).replace("|", "\\|")


def render_markdown(board: Scoreboard) -> str:
    lines = [f"# {TITLE}", "", INTRO, ""]
    if not board.cells:
        lines.append("No rollouts run has finished yet.")
    else:
        lines.append("| " + " | ".join(HEADERS) + " |")
        lines.append("|" + "---|" * len(HEADERS))
        for cell in board.cells:
            lines.append("| " + " | ".join(_md_cell(c) for c in _cells(cell)) + " |")
    if board.notes:
        lines += ["", "Not shown:", ""] + [f"- {_md_cell(note)}" for note in board.notes]
    return "\n".join(lines) + "\n"


def _spread(bound: float | None, mean: float) -> float:
    """How far an interval's end lies from the mean (0: no interval)."""
    return 0.0 if bound is None else abs(bound - mean)


def history_plot(history: Sequence[Result]) -> str:
    """Mean reward (95% interval as error bars) and pass@1 per run, oldest left."""
    runs = list(range(1, len(history) + 1))
    nan = float("nan")
    means = [nan if r.reward.mean is None else r.reward.mean for r in history]
    below = [_spread(r.reward.ci_low, m) for r, m in zip(history, means, strict=True)]
    above = [_spread(r.reward.ci_high, m) for r, m in zip(history, means, strict=True)]
    figure = Figure(figsize=(5, 2.6))
    axes = figure.subplots()
    axes.errorbar(runs, means, yerr=[below, above], marker="o", capsize=3, label="reward mean")
    pass_1 = [r.pass_at_k.get("pass@1") for r in history]
    if any(p is not None and p.mean is not None for p in pass_1):
        values = [nan if p is None or p.mean is None else p.mean for p in pass_1]
        axes.plot(runs, values, marker="s", linestyle="--", label="pass@1")
    axes.set_xticks(runs, [r.finished_at[5:16].replace("T", " ") for r in history])
    axes.tick_params(axis="x", labelrotation=45, labelsize=7)
    axes.set_xlim(0.5, len(runs) + 0.5)
    low, high = axes.get_ylim()
    axes.set_ylim(min(low, -0.05), max(high, 1.05))  # the usual 0–1 scale at least
    axes.set_ylabel("over tasks")
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return svg(figure)


def _history_table(cell: Cell) -> str:
    rows = []
    previous: Result | None = None
    for result in cell.history:
        delta = (
            None
            if previous is None or previous.reward.mean is None or result.reward.mean is None
            else result.reward.mean - previous.reward.mean
        )
        rows.append(
            [
                escape(_when(result)),
                escape(_reward(result)),
                "–" if delta is None else f"{delta:+.3f}",
                escape(pass_at_k_text(result) or "–"),
                str(result.planned),
                escape(_count(result, "masked")),
                escape(_count(result, "failed")),
                f"<code>{escape(short_digest(result.plan_digest))}</code>",
            ]
        )
        previous = result
    headers = ["finished", "reward mean (95% CI)", "Δ previous", "pass@k", "planned"]
    headers += ["masked", "failed", "plan"]
    return html_table(headers, rows[::-1], {2, 4})


def _section(cell: Cell) -> str:
    title = " × ".join(cell.latest.cell)
    return (
        f"<h3>{escape(title)} <span class=muted>({escape(_versus(cell))})</span></h3>\n"
        f'<div class="plots"><figure>{history_plot(cell.history)}'
        f"<figcaption>{len(cell.history)} run(s), oldest left</figcaption></figure>"
        f"<div>{_history_table(cell)}</div></div>"
    )


def render_html(board: Scoreboard) -> str:
    """The page (module docstring)."""
    classes = {REGRESSED: "bad", IMPROVED: "good"}
    if board.cells:
        rows = []
        for cell in board.cells:
            texts = [escape(text) for text in _cells(cell)]
            mark = classes.get(cell.change)
            if mark:
                texts[4] = f'<span class="{mark}">{texts[4]}</span>'
            rows.append(texts)
        table = html_table(HEADERS, rows, {3, 4, 6, 7, 8, 9, 10, 11, 12})
        history = "\n".join(_section(cell) for cell in board.cells)
    else:
        table, history = "<p>No rollouts run has finished yet.</p>", ""
    notes = "".join(f"<li>{escape(note)}</li>" for note in board.notes)
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{TITLE}</title><style>{STYLE}{PAGE_STYLE}</style></head>\n<body>\n"
        f"<h1>{TITLE}</h1>\n<p>{escape(INTRO)}</p>\n{table}\n"
        + (f"<h2>Not shown</h2><ul>{notes}</ul>\n" if notes else "")
        + (f"<h2>History per cell</h2>\n{history}\n" if history else "")
        + "</body></html>\n"
    )
