"""The reports a person reads after a suite run: ``conformance_report.md`` and a self-contained
``conformance_report.html``, both rendered from one in-memory :class:`Report`
(docs/conformance.md#reading-the-report).

Per harness, one table: a row per check (grouped Schema / Semantic / Behavioral / Health, in
first-seen order across the harness's scenarios), a column per scenario, a compact symbol per
cell — ✓ pass, ✗ fail, — not applicable, and ✗ when a scenario has no row for a check (absence
is never a pass). How each episode process ended is a separate line, never a check. Below the
table, each failed scenario leads with its cause (a failure kind and the reason, e.g. the
failure sidecar's text), then its failing cells' reasons and first failing locations; then the
exact command that reruns that harness × scenario. A harness that could not run has no table
and one line: unavailable (a ``cli`` harness not installed: with the command that installs it)
or unusable (its program cannot say its version). The HTML has no
scripts, fonts or links to fetch.
"""

from __future__ import annotations

import html
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_assets.conformance.engine import UNAVAILABLE_PREFIX
from gym_assets.conformance.inspection import BLOCKED_PREFIX
from gym_assets.conformance.matrix import STYLE
from gym_assets.rollouts.harnesses.install import install_command

GROUPS = (("schema", "Schema"), ("semantic", "Semantic"), ("behavioral", "Behavioral"),
          ("health", "Health"))  # fmt: skip
SYMBOL = {"pass": "✓", "fail": "✗", "not_applicable": "—", "absent": "✗"}
CSS = {"pass": "pass", "fail": "fail", "not_applicable": "na", "absent": "fail"}
TITLE = "Harness checks by scenario"
NOT_EVALUATED = "{n} checks not evaluated (their input is unavailable or a prerequisite failed)"
LEGEND = (
    "✓ Pass · ✗ Requirement not demonstrated (invalid, missing, blocked, or no result) · "
    "— Not applicable."
)


@dataclass(frozen=True)
class Cell:
    status: str  # pass | fail | not_applicable | absent
    reason: str | None = None
    location: str | None = None


@dataclass(frozen=True)
class CheckLine:
    check_id: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Failure:
    scenario: str
    check_id: str
    reason: str
    location: str | None


@dataclass(frozen=True)
class Cause:
    """Why one scenario failed: its failure kind and reason, named before its checks."""

    scenario: str
    kind: str
    reason: str


@dataclass(frozen=True)
class HarnessTable:
    harness: str
    verdict: bool
    scenarios: tuple[str, ...]
    verdicts: tuple[str, ...]
    process: tuple[str, ...]
    groups: tuple[tuple[str, tuple[CheckLine, ...]], ...]
    failures: tuple[Failure, ...]  # the failures with a reason of their own
    # per scenario, the checks that failed only because their input was unavailable or a
    # prerequisite failed: one line each, so the cause is not buried under its consequences
    not_evaluated: tuple[tuple[str, tuple[str, ...]], ...]
    reruns: tuple[tuple[str, str], ...]  # (scenario, command) for each scenario not fulfilled
    causes: tuple[Cause, ...] = ()
    unavailable: str | None = None  # why a cli harness could not run at all (not installed)
    unusable: str | None = None  # why the harness's program could not be used at all

    def failed_scenarios(self) -> tuple[str, ...]:
        """The scenarios with a cause or a failing check, in column order."""
        named = {c.scenario for c in self.causes} | {f.scenario for f in self.failures}
        named |= {scenario for scenario, _ in self.not_evaluated}
        return tuple(s for s in self.scenarios if s in named)


@dataclass(frozen=True)
class Report:
    suite: str
    verdict: bool
    tables: tuple[HarnessTable, ...]


def rerun_command(harness: str, scenario: str, timeout_s: float, configs: str | None) -> str:
    argv = ["gym-assets", "conformance", "run", "--harness", harness, "--scenario", scenario]
    argv += ["--timeout", f"{timeout_s:g}"]
    if configs is not None:
        argv += ["--configs", configs]
    return shlex.join(argv) + ' --output "$(mktemp -d)/conformance"'


def _process(result: Mapping[str, Any]) -> str:
    if "checker_error" in result:
        return f"checker error ({result['checker_error']})"
    execution = result["execution"]
    if execution["timed_out"]:
        return "timed out"
    return f"exit {execution['returncode']}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def harness_table(
    harness: str,
    verdict: bool,
    results: Sequence[Mapping[str, Any]],
    *,
    timeout_s: float,
    configs: str | None = None,
    unavailable: str | None = None,
    unusable: str | None = None,
) -> HarnessTable:
    """The table of one harness from its scenario results (``scenario_result.json`` shapes);
    ``unavailable`` or ``unusable``: why it ran no scenario."""
    kind_of: dict[str, str] = {}
    rows_by_scenario = []
    for result in results:
        rows = {row["id"]: row for row in result.get("checks", [])}
        rows_by_scenario.append(rows)
        for check_id, row in rows.items():
            kind_of.setdefault(check_id, row["kind"])
    groups = []
    for kind, label in GROUPS:
        lines = []
        for check_id in (c for c, k in kind_of.items() if k == kind):
            cells = []
            for rows in rows_by_scenario:
                row = rows.get(check_id)
                if row is None:
                    cells.append(Cell("absent", "no result for this check"))
                elif row["status"] == "fail":
                    reasons, locations = row.get("reasons") or [""], row.get("locations") or []
                    cells.append(Cell("fail", reasons[0], locations[0] if locations else None))
                else:
                    cells.append(Cell(row["status"]))
            lines.append(CheckLine(check_id, tuple(cells)))
        if lines:
            groups.append((label, tuple(lines)))
    scenarios = tuple(r["scenario"] for r in results)
    failures: list[Failure] = []
    not_evaluated: dict[str, list[str]] = {}
    for _, lines in groups:
        for line in lines:
            for i, cell in enumerate(line.cells):
                reason = _one_line(cell.reason or "")
                if cell.status == "fail" and reason.startswith(
                    (UNAVAILABLE_PREFIX, BLOCKED_PREFIX)
                ):
                    not_evaluated.setdefault(scenarios[i], []).append(line.check_id)
                elif cell.status in ("fail", "absent"):
                    failures.append(Failure(scenarios[i], line.check_id, reason, cell.location))
    reruns = tuple(
        (r["scenario"], rerun_command(harness, r["scenario"], timeout_s, configs))
        for r in results
        if r["verdict"] != "fulfilled" or "checker_error" in r or _process(r) != "exit 0"
    )
    return HarnessTable(
        harness=harness,
        verdict=verdict,
        scenarios=scenarios,
        verdicts=tuple(r["verdict"] for r in results),
        process=tuple(_process(r) for r in results),
        groups=tuple(groups),
        failures=tuple(failures),
        not_evaluated=tuple((k, tuple(v)) for k, v in not_evaluated.items()),
        reruns=reruns,
        causes=tuple(
            Cause(r["scenario"], r["failure"]["kind"], _one_line(r["failure"]["reason"]))
            for r in results
            if r.get("failure")
        ),
        unavailable=unavailable,
        unusable=unusable,
    )


# --------------------------------------------------------------------------- markdown


def _md(text: str) -> str:
    return _one_line(text).replace("|", "&#124;")


def _passing(table: HarnessTable) -> str:
    passed = sum(v == "fulfilled" for v in table.verdicts)
    return f"{passed} / {len(table.verdicts)}"


def _gate_mark(table: HarnessTable) -> str:
    """The overview's P0 cell: ✓, ✗, or ✗ unavailable / unusable (never a pass)."""
    if table.verdict:
        return "✓"
    return "✗ unavailable" if table.unavailable else "✗ unusable" if table.unusable else "✗"


def _scenario_failures(
    table: HarnessTable, scenario: str
) -> tuple[Cause | None, list[Failure], tuple[str, ...]]:
    """One failed scenario's cause, its failing checks, and the checks it could not evaluate."""
    cause = next((c for c in table.causes if c.scenario == scenario), None)
    failures = [f for f in table.failures if f.scenario == scenario]
    skipped = next((ids for s, ids in table.not_evaluated if s == scenario), ())
    return cause, failures, skipped


def render_markdown(report: Report) -> str:
    lines = [f"# {TITLE}", "", f"Suite `{report.suite}` · {LEGEND}", ""]
    lines += ["| Harness | P0 | Scenarios passing |", "|---|---|---|"]
    for table in report.tables:
        lines.append(f"| {table.harness} | {_gate_mark(table)} | {_passing(table)} |")
    lines.append("")
    for table in report.tables:
        if table.unavailable:
            lines += [f"## {table.harness}", "", f"**Unavailable**: {_md(table.unavailable)}", ""]
            lines += ["```bash", install_command(table.harness), "```", ""]
            continue
        if table.unusable:
            lines += [f"## {table.harness}", "", f"**Harness unusable**: {_md(table.unusable)}", ""]
            continue
        verdict = "P0 met" if table.verdict else "P0 not met"
        lines += [f"## {table.harness}", "", f"**{verdict}**", ""]
        blanks = " |" * len(table.scenarios)
        lines.append("| Check | " + " | ".join(table.scenarios) + " |")
        lines.append("|---|" + "---|" * len(table.scenarios))
        if not table.groups:
            lines.append("| No check results available |" + " ✗ |" * len(table.scenarios))
        for label, check_lines in table.groups:
            lines.append(f"| **{label}** |{blanks}")
            for line in check_lines:
                cells = " | ".join(SYMBOL[c.status] for c in line.cells)
                lines.append(f"| `{line.check_id}` | {cells} |")
        lines += [
            "",
            "Scenario verdict: "
            + " · ".join(
                f"{s} {'✓' if v == 'fulfilled' else '✗'}"
                for s, v in zip(table.scenarios, table.verdicts, strict=True)
            ),
            "",
            "Process status: "
            + " · ".join(f"{s} {p}" for s, p in zip(table.scenarios, table.process, strict=True)),
            "",
        ]
        if table.failed_scenarios():
            lines += ["### Failing scenarios", ""]
        for scenario in table.failed_scenarios():
            cause, failures, skipped = _scenario_failures(table, scenario)
            if cause is not None:
                lines.append(f"**{scenario}** · `{cause.kind}`: {_md(cause.reason)}")
                lines.append("")
            for f in failures:
                where = f" (first failing location `{f.location}`)" if f.location else ""
                lines.append(f"- {f.scenario} · `{f.check_id}`: {_md(f.reason)}{where}")
            if skipped:
                listed = ", ".join(f"`{i}`" for i in skipped)
                lines.append(f"- {scenario} · {NOT_EVALUATED.format(n=len(skipped))}: {listed}")
            lines.append("")
        if table.reruns:
            lines += ["### Rerun", ""]
            for scenario, command in table.reruns:
                lines += [f"{scenario}:", "", "```bash", command, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- HTML


def _cell_html(cell: Cell) -> str:
    e = html.escape
    title = f' title="{e(_one_line(cell.reason))}"' if cell.reason else ""
    return f'<td class="{CSS[cell.status]}"{title}>{SYMBOL[cell.status]}</td>'


def _scenario_html(table: HarnessTable, scenario: str) -> str:
    """One failed scenario: its cause first, then its failing checks."""
    e = html.escape
    cause, failures, skipped = _scenario_failures(table, scenario)
    lead = (
        f"<p><strong>{e(scenario)}</strong> · <code>{e(cause.kind)}</code>: {e(cause.reason)}</p>"
        if cause is not None
        else ""
    )
    items = "".join(
        f"<li>{e(f.scenario)} · <code>{e(f.check_id)}</code>: {e(f.reason)}"
        + (f' <span class="meta">(first failing location <code>{e(f.location)}</code>)</span>'
           if f.location else "")
        + "</li>"
        for f in failures
    )  # fmt: skip
    if skipped:
        items += (
            f"<li>{e(scenario)} · {e(NOT_EVALUATED.format(n=len(skipped)))}: "
            + ", ".join(f"<code>{e(i)}</code>" for i in skipped)
            + "</li>"
        )
    return lead + (f"<ul>{items}</ul>" if items else "")


def _table_html(table: HarnessTable) -> str:
    e = html.escape
    if table.unavailable:
        return (
            f'<section class="bad"><h2>{e(table.harness)} — ✗ unavailable</h2>'
            f"<p>{e(table.unavailable)}</p><p>Install it: "
            f"<code>{e(install_command(table.harness))}</code></p></section>"
        )
    if table.unusable:
        return (
            f'<section class="bad"><h2>{e(table.harness)} — ✗ harness unusable</h2>'
            f"<p>{e(table.unusable)}</p></section>"
        )
    head = "".join(f"<th>{e(s)}</th>" for s in table.scenarios)
    width = len(table.scenarios) + 1
    body = []
    if not table.groups:
        body.append(
            '<tr><th scope="row">No check results available</th>'
            + '<td class="fail">✗</td>' * len(table.scenarios)
            + "</tr>"
        )
    for label, check_lines in table.groups:
        body.append(f'<tr class="group"><th colspan="{width}">{e(label)}</th></tr>')
        for line in check_lines:
            cells = "".join(_cell_html(c) for c in line.cells)
            body.append(f'<tr><th scope="row"><code>{e(line.check_id)}</code></th>{cells}</tr>')
    verdicts = "".join(
        f'<td class="{"pass" if v == "fulfilled" else "fail"}">{"✓" if v == "fulfilled" else "✗"}'
        "</td>"
        for v in table.verdicts
    )
    process = "".join(f'<td class="na">{e(p)}</td>' for p in table.process)
    failures = "".join(_scenario_html(table, scenario) for scenario in table.failed_scenarios())
    reruns = "".join(
        f"<li>{e(scenario)}: <code>{e(command)}</code></li>" for scenario, command in table.reruns
    )
    status = "ok" if table.verdict else "bad"
    mark = "✓ P0 met" if table.verdict else "✗ P0 not met"
    return (
        f'<section class="{status}"><h2>{e(table.harness)} — {mark}</h2>'
        f"<table><thead><tr><th>Check</th>{head}</tr></thead><tbody>{''.join(body)}"
        f'<tr class="group"><th colspan="{width}">Scenario verdict</th></tr>'
        f'<tr><th scope="row">P0 gate</th>{verdicts}</tr>'
        f'<tr class="group"><th colspan="{width}">Process status (not a check)</th></tr>'
        f'<tr><th scope="row">episode</th>{process}</tr></tbody></table>'
        + (f"<h3>Failing scenarios</h3>{failures}" if failures else "")
        + (f"<h3>Rerun</h3><ul>{reruns}</ul>" if reruns else "")
        + "</section>"
    )


def render_html(report: Report) -> str:
    e = html.escape
    tables = "".join(_table_html(t) for t in report.tables)
    overview = "".join(
        f'<tr><th scope="row">{e(t.harness)}</th>'
        f'<td class="{"pass" if t.verdict else "fail"}">{_gate_mark(t)}</td>'
        f"<td>{_passing(t)}</td></tr>"
        for t in report.tables
    )
    extra = "tr.group th{background:#eef1f5;text-align:left}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{TITLE}</title><style>{STYLE}{extra}</style></head><body>"
        f"<h1>{TITLE}</h1>"
        f'<p class="meta">Suite <code>{e(report.suite)}</code> · '
        f"{'every harness meets' if report.verdict else 'not every harness meets'} the P0 gate</p>"
        "<table><thead><tr><th>Harness</th><th>P0</th><th>Scenarios passing</th></tr></thead>"
        f"<tbody>{overview}</tbody></table>"
        f'<p class="legend">{e(LEGEND)}</p>{tables}</body></html>\n'
    )
