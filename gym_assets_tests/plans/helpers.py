"""Shared fixtures of the plan tests: the reference's ``row(...)`` shorthand and defaults."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gym_assets.plans.build import PlanSpec, build_plan
from gym_assets.plans.model import GymStamp, Plan

GYM = GymStamp("0.0.0", "abc")
CONFIG_PATHS = ("benchmarks/bench/config.yaml",)


def row(task_id: Any, prompt: str = "solve it", **extra: Any) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "responses_create_params": {"input": [{"role": "user", "content": prompt}]},
        **extra,
    }


def spec(
    taskset: str = "bench", selected: Iterable[str] | None = None, benchmark: str = "bench"
) -> PlanSpec:
    return PlanSpec(benchmark, taskset, GYM, CONFIG_PATHS, selected)


def plan_of(rows: Iterable[dict[str, Any]], **kwargs: Any) -> Plan:
    return build_plan(rows, spec(**kwargs))


def ids(plan: Plan) -> list[str]:
    return [task.task_id for task in plan.tasks]


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def humaneval_like_rows(count: int = 164) -> list[dict[str, Any]]:
    """Rows shaped like the prepared HumanEval benchmark (``HumanEval/N`` ids)."""
    return [
        {
            "task_id": f"HumanEval/{n}",
            "responses_create_params": {
                "input": [
                    {"role": "system", "content": "Complete the function."},
                    {"role": "user", "content": f'def f{n}(x):\n    """Return x * {n}."""\n'},
                ]
            },
            "verifier_metadata": {"entry_point": f"f{n}", "test": f"assert f{n}(2) == {2 * n}"},
        }
        for n in range(count)
    ]
