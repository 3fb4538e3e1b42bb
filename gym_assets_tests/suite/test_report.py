"""The reports a person reads: one table per harness, grouped rows, symbols, absent cells."""

from __future__ import annotations

import re
from typing import Any

from gym_assets.suite.report import (
    Report,
    harness_table,
    render_html,
    render_markdown,
)


def _row(check_id: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
    return {
        "id": check_id,
        "kind": kind,
        "status": status,
        "reasons": [reason] if reason else [],
        "locations": ["$.ng_trajectory.model_calls[0].started_at"] if status == "fail" else [],
    }


def _result(name: str, rows: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    verdict = "not_fulfilled" if any(r["status"] == "fail" for r in rows) else "fulfilled"
    base = {"scenario": name, "verdict": verdict, "checks": rows}
    return {**base, "execution": {"returncode": 0, "timed_out": False}, **extra}


RESULTS = [
    _result(
        "normal",
        [
            _row("call.id", "schema", "pass"),
            _row("tool.status", "behavioral", "fail", "retained tool status | differs"),
            _row("health.model_call_failed", "health", "pass"),
        ],
    ),
    _result("error", [], execution={"returncode": 1, "timed_out": False}),
    _result(
        "late",
        [
            _row("calls.timing", "schema", "fail", "needs clocks"),
            _row("calls.order", "semantic", "fail", "blocked by calls.timing; ordered clocks"),
            _row("calls.owner", "semantic", "fail", "required input is unavailable; an owner"),
            _row("x", "semantic", "not_applicable"),
        ],
    ),
]


def _report() -> Report:
    table = harness_table("pi", False, RESULTS, timeout_s=30)
    return Report("harness-p0-probes/v1", False, (table,))


def test_markdown_groups_rows_and_marks_absent_cells_as_not_demonstrated() -> None:
    text = render_markdown(_report())
    lines = text.splitlines()
    assert "## pi" in lines
    assert "| pi | ✗ | 1 / 3 |" in lines
    assert "| Check | normal | error | late |" in lines
    assert "| **Schema** | | | |" in lines
    assert "| `call.id` | ✓ | ✗ | ✗ |" in lines
    assert "| `calls.timing` | ✗ | ✗ | ✗ |" in lines
    assert "| `x` | ✗ | ✗ | — |" in lines
    assert "| `tool.status` | ✗ | ✗ | ✗ |" in lines
    assert "| `health.model_call_failed` | ✓ | ✗ | ✗ |" in lines
    groups = [line for line in lines if line.startswith("| **")]
    assert groups == [
        "| **Schema** | | | |",
        "| **Semantic** | | | |",
        "| **Behavioral** | | | |",
        "| **Health** | | | |",
    ]
    assert "?" not in text and "Gate" not in text


def test_markdown_keeps_process_status_apart_and_explains_failures() -> None:
    text = render_markdown(_report())
    assert "Process status: normal exit 0 · error exit 1 · late exit 0" in text
    assert "- normal · `tool.status`: retained tool status &#124; differs" in text
    assert "(first failing location `$.ng_trajectory.model_calls[0].started_at`)" in text
    assert "gym-assets conformance run --harness pi --scenario error --timeout 30" in text


def test_consequential_failures_are_one_line_after_their_cause() -> None:
    text = render_markdown(_report())
    assert "- late · `calls.timing`: needs clocks" in text
    assert "`calls.order`: blocked" not in text
    assert (
        "- late · 2 checks not evaluated (their input is unavailable or a prerequisite failed): "
        "`calls.order`, `calls.owner`"
    ) in text


def test_html_is_self_contained_and_has_the_same_cells() -> None:
    page = render_html(_report())
    assert not re.search(r"https?://|<script|<link|src=|@import|url\(", page)
    assert page.count('<tr class="group">') >= 4
    assert "retained tool status | differs" in page
    assert "No check results available" not in page


def test_a_harness_without_rows_says_no_check_results() -> None:
    table = harness_table("h", False, [_result("only", [])], timeout_s=5)
    assert "| No check results available | ✗ |" in render_markdown(Report("s", False, (table,)))


def _caused() -> Report:
    failure = {"kind": "hung_after_answer", "reason": "the harness gave the final answer, then "
               "did not exit: Episode timed out"}  # fmt: skip
    late = {**RESULTS[2], "failure": failure}
    table = harness_table("pi", False, [RESULTS[0], late], timeout_s=30)
    return Report("harness-p0-probes/v1", False, (table,))


def test_each_failed_scenario_leads_with_its_failure_kind_and_reason() -> None:
    text = render_markdown(_caused())
    cause = (
        "**late** · `hung_after_answer`: the harness gave the final answer, then did not exit: "
        "Episode timed out"
    )
    assert cause in text
    assert text.index("- normal · `tool.status`") < text.index(cause)
    assert text.index(cause) < text.index("- late · `calls.timing`: needs clocks")
    page = render_html(_caused())
    lead = page.index("<code>hung_after_answer</code>: the harness gave the final answer")
    assert lead < page.index("late · <code>calls.timing</code>")


def test_an_unusable_harness_is_one_line_and_no_table() -> None:
    why = "harness 'x': `x --version` failed (CalledProcessError); fix the command"
    table = harness_table("x", False, [], timeout_s=30, unusable=why)
    text = render_markdown(Report("s", False, (table,)))
    assert "| x | ✗ unusable | 0 / 0 |" in text
    assert [line for line in text.splitlines() if "unusable" in line.lower()] == [
        "| x | ✗ unusable | 0 / 0 |",
        f"**Harness unusable**: {why}",
    ]
    assert "| Check |" not in text
    assert "harness unusable" in render_html(Report("s", False, (table,)))
