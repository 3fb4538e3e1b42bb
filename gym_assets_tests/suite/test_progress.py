"""The progress line a conformance run prints as each episode finishes."""

from pathlib import Path

import pytest

from gym_assets.suite.judging import ScenarioResult
from gym_assets.suite.run import episode_line
from gym_assets.suite.supervise import Execution


def _result(verdict: str, execution: Execution) -> ScenarioResult:
    return ScenarioResult(
        scenario="retry_429",
        exercised=True,
        verdict=verdict,  # type: ignore[arg-type]
        failing_checks=[],
        execution=execution,
        result_path=Path("scenario_result.json"),
    )


@pytest.mark.parametrize(
    ("verdict", "execution", "expected"),
    [
        ("fulfilled", Execution(0, False, 2.04), "fulfilled (2.0 s)"),
        ("not_fulfilled", Execution(0, False, 1.0), "not fulfilled (1.0 s)"),
        ("not_fulfilled", Execution(3, False, 0.5), "exit 3 (0.5 s)"),
        ("not_fulfilled", Execution(None, True, 90.2), "timed out (90.2 s)"),
    ],
)
def test_each_line_says_where_the_run_is_and_what_the_episode_found(
    verdict: str, execution: Execution, expected: str
) -> None:
    line = episode_line(3, 7, "simple_agent", _result(verdict, execution))
    assert line == f"[3/7] simple_agent: retry_429: {expected}"
