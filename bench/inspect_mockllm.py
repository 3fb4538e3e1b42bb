"""Run by ``rollouts_vs_inspect.py`` with the interpreter of a scratch venv holding Inspect AI
(it does not import gym_assets): one eval of one-call samples on Inspect's ``mockllm`` model.

    python inspect_mockllm.py SAMPLES CONCURRENCY LOG_DIR

Prints one JSON object: the CPU seconds of this process and of its reaped children spent in
``eval`` (imports and dataset building excluded, as on our side), the wall time, and how many
samples the log holds. The mock's answers carry their token usage: without it, the mock counts
tokens with ``tiktoken``, which downloads its encoding from the internet (and spends more CPU
than the answer itself: Inspect comes out cheaper, not dearer, for it).
"""

from __future__ import annotations

import json
import resource
import sys
import time

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import exact
from inspect_ai.solver import generate


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _answer(*_: object) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm", content="168000")
    output.usage = ModelUsage(input_tokens=20, output_tokens=2, total_tokens=22)
    return output


def main() -> int:
    samples, concurrency, log_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dataset = MemoryDataset(
        [
            Sample(
                id=f"units-{index:06d}",
                input=f"Convert {index % 999 + 1} kilometres to metres. Reply with the number.",
                target=str((index % 999 + 1) * 1000),
            )
            for index in range(samples)
        ]
    )
    task = Task(dataset=dataset, solver=generate(), scorer=exact())
    cpu, wall = _cpu(), time.perf_counter()
    (log,) = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=_answer),
        max_samples=concurrency,
        max_connections=concurrency,
        display="none",
        log_dir=log_dir,
    )
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    done = len(log.samples or []) if log.status == "success" else 0
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "samples": done}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
