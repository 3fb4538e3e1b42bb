"""A configs tree with an environment server that fronts two agents, written to a temp dir.

``support_dialogue`` (the bundled ``conversation`` server) fronts ``customer_sim`` and
``support_bot``; its resources server declares a benchmark, an example, a train and a
validation dataset, each with a taskset routed to it. ``arith_environment`` fronts one agent
and runs flat rows, so tests can send rows of one server's agent to the other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SUPPORT = """\
environment_server_routes:
  support:dialogue: support_dialogue
  support:examples: support_dialogue
  support:train: support_dialogue
  support:validation: support_dialogue
error_on_agent_without_environment_server: true
harnesses:
  simple_agent: {kind: builtin, agent_implementation: simple_agent}

policy_model:
  responses_api_models:
    gateway_model: {entrypoint: app.py, model: policy}

support_resources:
  resources_servers:
    support_desk:
      entrypoint: app.py
      domain: dialogue
      datasets:
        - {name: support_bench, type: benchmark, jsonl_fpath: bench.jsonl,
           taskset: "support:dialogue", license: Apache-2.0,
           prepare_dependencies: [support_desk_tools, pyyaml]}
        - {name: support_example, type: example, jsonl_fpath: example.jsonl,
           taskset: "support:examples"}
        - {name: support_train, type: train, jsonl_fpath: train.jsonl,
           taskset: "support:train", num_repeats: 2}
        - {name: support_validation, type: validation, jsonl_fpath: validation.jsonl,
           taskset: "support:validation"}

customer_sim:
  responses_api_agents:
    user_simulator:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: support_resources}
      model_server: {type: responses_api_models, name: policy_model}

support_bot:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: support_resources}
      model_server: {type: responses_api_models, name: policy_model}

support_dialogue:
  environment_servers:
    conversation:
      entrypoint: app.py
      user_agent: {type: responses_api_agents, name: customer_sim}
      assistant_agent: {type: responses_api_agents, name: support_bot}
      resources_server: {type: resources_servers, name: support_resources}
"""

ARITH = """\
arith_resources:
  resources_servers:
    arith:
      entrypoint: app.py
      domain: math
      datasets:
        - {name: arith, type: benchmark, jsonl_fpath: arith.jsonl}
        - {name: arith_train, type: train, jsonl_fpath: arith_train.jsonl}

arith_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: arith_resources}
      model_server: {type: responses_api_models, name: policy_model}

arith_environment:
  environment_servers:
    single_agent_turn_legacy:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: arith_agent}
      resources_server: {type: resources_servers, name: arith_resources}
"""


def dialogue(task_id: str, resolution: str) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "scenario": f"The customer asks for a {resolution}.",
        "user_profile": {"name": "Maya", "order_id": task_id.upper()},
        "opening_message": f"Hi, about {task_id}.",
        "expected_resolution": resolution,
        "max_turns": 4,
    }


def arith_row(task_id: str, a: int, b: int) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "responses_create_params": {"input": [{"role": "user", "content": f"{a}+{b}?"}]},
        "verifier_metadata": {"expected_answer": str(a + b)},
    }


ROWS: dict[str, list[dict[str, Any]]] = {
    "support/bench.jsonl": [dialogue("b-1", "refund"), dialogue("b-2", "replacement")],
    "support/example.jsonl": [dialogue("e-1", "refund")],
    "support/train.jsonl": [
        dialogue("t-1", "refund"),
        dialogue("t-2", "refund"),
        dialogue("t-3", "apology"),
    ],
    "support/validation.jsonl": [dialogue("v-1", "apology")],
    "arith/arith.jsonl": [arith_row("a-1", 2, 2), arith_row("a-2", 3, 4)],
    "arith/arith_train.jsonl": [arith_row("at-1", 1, 1)],
}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_tree(root: Path, *, extra: str = "") -> Path:
    """Write the tree under ``root`` (``extra`` is appended to the support config)."""
    (root / "support").mkdir(parents=True, exist_ok=True)
    (root / "arith").mkdir(parents=True, exist_ok=True)
    (root / "support" / "config.yaml").write_text(SUPPORT + extra, encoding="utf-8")
    (root / "arith" / "config.yaml").write_text(ARITH, encoding="utf-8")
    for relative, rows in ROWS.items():
        write_jsonl(root / relative, rows)
    return root
