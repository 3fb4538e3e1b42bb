"""Bad input, one case a row: each refusal is one clear line with the documented exit code, and
nothing on disk is written or damaged.

Every case builds what it needs in a temp directory (a small configs tree, or a copy of the
bundled one, and the bad file, flag or path it is about) and returns the command line. The
test runs it in-process and checks:

* the exit code: 1 for a refusal, 2 for a usage error or an unjudgeable conformance input;
* stderr: exactly one line matching the case's pattern, and no traceback. Only lines a command
  always prints first may come before it: argparse's usage block for a usage error, and the
  progress of collation ("collating ...") and of rollouts (the "rollouts N/M" counter);
* the temp tree, snapshotted before and after (relative path -> kind, mode, sha256), is
  unchanged except for the paths the case says the command may create (``creates`` globs), so
  the configs root in particular is never modified.

To add a case, write a ``setup(tmp) -> argv`` function and append a ``Case`` to the list of its
kind (bad input, or output paths); a case that mounts or starts something undoes it in
``cleanup(tmp)``. A case whose input once hung the command or made it read without end (a
FIFO, ``/dev/zero``) runs as a child process under a deadline and a memory cap (``child``), so
that a regression fails the case instead of stalling the suite or waking the OOM killer.
Comments on the bad-input cases say which were tracebacks (or hangs, or silent acceptances)
before the input bounds existed; the others pin a behaviour that must not regress.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import resource
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.limits import (
    MAX_CONFIG_BYTES,
    MAX_JSON_DOCUMENT_BYTES,
    MAX_NESTING,
    MAX_PLAN_BYTES,
    MAX_PRODUCT_NESTING,
)
from gym_assets_tests.filesystems import fill, snapshot, tmpfs

REPO = Path(__file__).resolve().parents[1]

Setup = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    setup: Setup
    exit_code: int
    message: str  # a regex the one stderr line must contain
    creates: tuple[str, ...] = ()  # globs of relative paths the command may create
    cleanup: Callable[[Path], None] | None = None
    slow: bool = False  # it makes a whole rollouts run first: left out of make test-fast
    child: bool = False  # it once hung or read without end: run it in a guarded child process


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code or 0)


CHILD_DEADLINE_S = 120  # an interpreter start and one refusal, on a loaded machine
CHILD_MEMORY_BYTES = 4 << 30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def run_child(argv: list[str], cwd: Path) -> tuple[int, str]:
    """``gym-assets argv`` in a child process of this checkout: its exit code and stderr; a
    case fails when the child outlives ``CHILD_DEADLINE_S`` (it is killed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GYM_ASSETS_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "gym_assets.cli", *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CHILD_DEADLINE_S,
            preexec_fn=_cap_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"gym-assets {' '.join(argv)} did not end within {CHILD_DEADLINE_S} s")
    return done.returncode, done.stderr


COLLATE = ["collate", "--benchmark", "units", "--out"]
PLAN = ["plan", "--benchmark", "units", "--out"]
ROLLOUTS = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--limit", "2"]


# --- bad input: the configs tree every case starts from --------------------------------------

ROUTES = """\
environment_server_routes:
  units: units_environment
error_on_agent_without_environment_server: true
"""
MODELS = """\
policy_model:
  responses_api_models:
    gateway_model: {entrypoint: app.py, model: policy}
harnesses:
  simple_agent: {kind: builtin, agent_implementation: simple_agent}
"""
BENCH = """\
units_resources:
  resources_servers:
    exact_match:
      entrypoint: app.py
      domain: knowledge
      datasets:
        - name: units
          type: benchmark
          jsonl_fpath: units.jsonl
          taskset: units
          num_repeats: 1

units_simple_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: units_resources}
      model_server: {type: responses_api_models, name: policy_model}
      max_steps: 2

units_environment:
  environment_servers:
    single_agent_turn:
      entrypoint: app.py
      agent_server: {type: responses_api_agents, name: units_simple_agent}
      resources_server: {type: resources_servers, name: units_resources}
"""


def row(task_id: object = "u1", **extra: object) -> dict[str, object]:
    question = {"role": "user", "content": "Convert 1 km to metres."}
    return {
        "task_id": task_id,
        "responses_create_params": {"input": [question]},
        "task_data": {"expected_answer": "1000"},
        **extra,
    }


def line(value: object) -> bytes:
    return json.dumps(value).encode() + b"\n"


GOOD_ROWS = line(row("u1")) + line(row("u2")) + line(row("u3"))


def tree(
    tmp: Path, *, rows: bytes = GOOD_ROWS, bench: str = BENCH, extra: dict[str, bytes] | None = None
) -> Path:
    """Write the configs tree (plus ``extra`` files, by path relative to it); its root."""
    root = tmp / "configs"
    files = {"routes.yaml": ROUTES, "models.yaml": MODELS, "bench/config.yaml": bench}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / "bench" / "units.jsonl").write_bytes(rows)
    for name, data in (extra or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def roots(tmp: Path, configs: Path) -> list[str]:
    return ["--configs", str(configs), "--data-root", str(tmp / "data")]


def command(*argv: str, **tree_args: object) -> Setup:
    """A setup that writes the tree (``tree_args``) and runs ``argv`` against it."""

    def setup(tmp: Path) -> list[str]:
        return [*argv, *roots(tmp, tree(tmp, **tree_args))]  # type: ignore[arg-type]

    return setup


def edited(old: str, new: str) -> str:
    assert old in BENCH
    return BENCH.replace(old, new, 1)


def nested(levels: int) -> object:
    """A value of exactly ``levels`` nested containers (alternating objects and lists)."""
    value: object = "leaf"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def deep_row(depth: int) -> bytes:
    """A row whose JSON nests ``depth`` levels, the row object itself being level 1."""
    return line(row("deep", task_data={"expected_answer": "1", "extra": nested(depth - 2)}))


ALIAS_BOMB = "".join(
    [
        "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
        *(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]\n" for n in range(1, 10)),
    ]
).encode()

LIST = ["list", "benchmarks"]
RUN = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--out"]


def plan_cmd(*flags: str, **tree_args: object) -> Setup:
    def setup(tmp: Path) -> list[str]:
        configs = tree(tmp, **tree_args)  # type: ignore[arg-type]
        return [*PLAN, str(tmp / "plan.json"), *flags, *roots(tmp, configs)]

    return setup


def collate_cmd(**tree_args: object) -> Setup:
    def setup(tmp: Path) -> list[str]:
        configs = tree(tmp, **tree_args)  # type: ignore[arg-type]
        return [*COLLATE, str(tmp / "out"), *roots(tmp, configs)]

    return setup


def rollouts_cmd(*flags: str) -> Setup:
    def setup(tmp: Path) -> list[str]:
        return [*RUN, str(tmp / "run"), *flags, *roots(tmp, tree(tmp))]

    return setup


# --- what a user may name instead of a file ---------------------------------------------------

Make = Callable[[Path], None]  # puts something that is not plain content at a path


def a_fifo(path: Path) -> None:
    os.mkfifo(path)


def a_link_to_dev_zero(path: Path) -> None:
    """Followed, as a user's link is: what it leads to never ends."""
    path.symlink_to("/dev/zero")


def sparse(size: int) -> Make:
    """A file of ``size`` bytes that takes no disk: one byte over a cap costs nothing."""

    def make(path: Path) -> None:
        path.touch()
        os.truncate(path, size)

    return make


def put(path: Path, data: bytes | Make | None) -> None:
    """``data`` written at ``path``; None: a directory there; a ``Make``: what it makes."""
    if data is None:
        path.mkdir()
    elif isinstance(data, bytes):
        path.write_bytes(data)
    else:
        data(path)


# --- plan files -----------------------------------------------------------------------------

DIGEST = "sha256:" + "0" * 64


def plan_document(*task_ids: str) -> dict[str, object]:
    return {
        "schema": "nemo-gym.eval-plan.v1",
        "gym": {"version": "0.1.0", "commit": None},
        "benchmark": {"name": "units", "config_paths": []},
        "selected_task_ids": None,
        "tasks": [
            {"task_id": {"taskset": "units", "task_id": task}, "digest": DIGEST}
            for task in task_ids
        ],
    }


def verify_cmd(plan: bytes | Make | None, taskset: bytes | Make | None = b"") -> Setup:
    """``plan verify`` of ``plan`` against a taskset file (each ``put`` in place)."""

    def setup(tmp: Path) -> list[str]:
        configs = tree(tmp)
        plan_path, taskset_path = tmp / "plan.json", tmp / "taskset.jsonl"
        for path, data in ((plan_path, plan), (taskset_path, taskset)):
            put(path, data)
        verify = ["plan", "verify", "--plan", str(plan_path), "--taskset", str(taskset_path)]
        return [*verify, "--configs", str(configs)]

    return setup


GOOD_PLAN = json.dumps(plan_document("u1", "u2")).encode()


def task_line(task_id: str, task_input: object) -> bytes:
    return line({"task_id": {"taskset": "units", "task_id": task_id}, "task_input": task_input})


# --- other inputs ---------------------------------------------------------------------------


def script_cmd(script: bytes | Make | None) -> Setup:
    """``rollouts --upstream scripted --script FILE`` with ``script`` ``put`` in place."""

    def setup(tmp: Path) -> list[str]:
        path = tmp / "script.json"
        put(path, script)
        flags = ["--upstream", "scripted", "--script", str(path)]
        return [*RUN, str(tmp / "run"), *flags, *roots(tmp, tree(tmp))]

    return setup


def with_dataset_key(key: str) -> str:
    """The benchmark config with one more key on its dataset entry."""
    return edited("jsonl_fpath: units.jsonl", f"jsonl_fpath: units.jsonl\n          {key}")


def prepare_cmd(script: str) -> Setup:
    bench = with_dataset_key("prepare_script: prep.py")
    return command(
        "prepare", "--benchmark", "units", bench=bench, extra={"bench/prep.py": script.encode()}
    )


def prompt_cmd(prompt: bytes) -> Setup:
    """Collate through a prompt config kept outside the configs root (inside it, the loader
    would read it as one more config file)."""

    def setup(tmp: Path) -> list[str]:
        (tmp / "p.yaml").write_bytes(prompt)
        raw = b"".join(line({"task_id": f"q{n}", "question": "2+2?"}) for n in range(2))
        configs = tree(tmp, bench=with_dataset_key("prompt_config: ../../p.yaml"), rows=raw)
        return [*COLLATE, str(tmp / "out"), *roots(tmp, configs)]

    return setup


def settings_cmd(old: str, new: str) -> Setup:
    """A rollouts run whose server settings are bad; its products are made first (from the
    edited configs, as the run would rebuild them: collation does not read server settings),
    so the configs tree (the metrics sidecar beside the data) is complete before the
    snapshot."""

    def setup(tmp: Path) -> list[str]:
        from gym_assets.plans.products import ensure_products
        from gym_assets.tasks.catalog import load_catalog
        from gym_assets.workspace import Workspace

        configs = tree(tmp)
        (configs / "bench" / "config.yaml").write_text(edited(old, new), encoding="utf-8")
        ensure_products(
            load_catalog(Workspace(configs, tmp / "data")), "units", lambda _message: None
        )
        return [*RUN, str(tmp / "run"), *roots(tmp, configs)]

    return setup


def bundle_cmd(data: bytes | Make) -> Setup:
    def setup(tmp: Path) -> list[str]:
        put(tmp / "rollouts.jsonl", data)
        bundle, report = str(tmp / "rollouts.jsonl"), str(tmp / "report")
        return ["conformance", "inspect", "--bundle", bundle, "--output", report]

    return setup


def migrate_cmd(data: bytes | Make, beside: Make | None = None) -> Setup:
    """``config add-environment-servers`` on one file of its configs tree (which holds what
    ``beside`` makes too, when given: the whole tree is read)."""

    def setup(tmp: Path) -> list[str]:
        configs = tmp / "configs"
        configs.mkdir()
        put(configs / "old.yaml", data)
        if beside is not None:
            beside(configs / "beside.yaml")
        return [
            "config",
            "add-environment-servers",
            str(configs / "old.yaml"),
            "--configs",
            str(configs),
        ]

    return setup


def in_the_tree(name: str, make: Make, *argv: str, **tree_args: object) -> Setup:
    """``argv`` against a configs tree (``tree_args``) whose file ``name`` (relative to it) is
    ``make``'s."""

    def setup(tmp: Path) -> list[str]:
        configs = tree(tmp, **tree_args)  # type: ignore[arg-type]
        (configs / name).unlink(missing_ok=True)
        make(configs / name)
        return [*argv, *roots(tmp, configs)]

    return setup


# --- names, the YAML of flags, and the OS (issue 29) ----------------------------------------


def registry_cmd(models: str, *argv: str) -> Setup:
    """``argv`` (a harness command: no data root) against the tree with ``models.yaml``."""

    def setup(tmp: Path) -> list[str]:
        return [*argv, "--configs", str(tree(tmp, extra={"models.yaml": models.encode()}))]

    return setup


def configs_root_cmd(make: Make) -> Setup:
    """``list benchmarks --configs FILE`` with what ``make`` puts there (one file may be the
    whole configs)."""

    def setup(tmp: Path) -> list[str]:
        make(tmp / "root.yaml")
        return [*LIST, "--configs", str(tmp / "root.yaml"), "--data-root", str(tmp / "data")]

    return setup


def harnesses_cmd(entries: str, *argv: str) -> Setup:
    """``argv`` with ``entries`` (YAML lines indented under ``harnesses:``) in the registry."""
    return registry_cmd(MODELS + entries, *argv)


def manifest_cmd(line: str, *, after: str = "") -> Setup:
    """``collate --benchmark units`` against the bundled configs, the units manifest with
    ``line`` added after the line ``after`` (at the end without one). A bad manifest refuses
    only the commands on its own benchmarks; ``list benchmarks`` would warn and go on."""

    def setup(tmp: Path) -> list[str]:
        flags = bundled(tmp)
        manifest = tmp / "configs" / "benchmarks" / "units" / "manifest.yaml"
        text = manifest.read_text("utf-8")
        text = text.replace(after, after + line, 1) if after else text + line
        manifest.write_text(text, encoding="utf-8")
        return [*COLLATE, str(tmp / "out"), *flags]

    return setup


# Each input a user names, with where the refusal names it: (case id, the setup that puts a
# special file there, exit code, the path's pattern, what the file is, the kinds tried, what
# the command may create first).
BOTH = ("a-fifo", "a-link-to-dev-zero")
# A dataset that leads outside the configs tree keeps its metrics under the data root: that
# product directory is claimed (made, marked) before the rows are read.
METRICS_PRODUCT = ("data", "data/metrics", "data/metrics/*")
SPECIAL_INPUTS: list[
    tuple[str, Callable[[Make], Setup], int, str, str, tuple[str, ...], tuple[str, ...]]
] = [
    ("plan", verify_cmd, 1, r"plan\.json", "plan file", BOTH, ()),
    ("verify-taskset", lambda make: verify_cmd(GOOD_PLAN, make), 1, r"taskset\.jsonl",
     "JSONL file", BOTH, ()),
    ("script", script_cmd, 1, r"script\.json", "script file", BOTH, ()),
    ("dataset", lambda make: in_the_tree("bench/units.jsonl", make, *COLLATE, "out"), 1,
     r"units\.jsonl", "JSONL file", BOTH, METRICS_PRODUCT),
    ("configs-file", lambda make: in_the_tree("bench/more.yaml", make, *LIST), 1,
     r"more\.yaml", "config file", BOTH, ()),
    ("prepare-script", lambda make: in_the_tree("bench/prep.py", make, "prepare", "--benchmark",
     "units", bench=with_dataset_key("prepare_script: prep.py")), 1, r"prep\.py",
     "prepare script", BOTH, ()),
    ("configs-root", configs_root_cmd, 1, r"root\.yaml", "config file", BOTH, ()),
    ("conformance-bundle", bundle_cmd, 2, r"rollouts\.jsonl", "bundle", BOTH, ()),
    # A named file that leads outside the configs tree is refused as such, before it is read.
    ("migrated-file", migrate_cmd, 2, r"old\.yaml", "config file", ("a-fifo",), ()),
]  # fmt: skip
SPECIAL_FILES = [
    ("a-fifo", a_fifo, "a FIFO"),
    ("a-link-to-dev-zero", a_link_to_dev_zero, "a device"),
]


OUTSIDE_INSTANCE = b"""\
../evil:
  resources_servers:
    exact_match:
      entrypoint: app.py
      domain: knowledge
      datasets: [{name: train, type: train, jsonl_fpath: train.jsonl}]
"""
LIST_HARNESSES = ("list", "harnesses")
CLI_HARNESS = "kind: cli, adapter: codex, version: 1.0.0, install: {npm: ./absent}, api: responses"


def token_cmd(token: str) -> Setup:
    def setup(tmp: Path) -> list[str]:
        return [
            "plan",
            "--benchmark",
            token,
            "--out",
            str(tmp / "plan.json"),
            *roots(tmp, tree(tmp)),
        ]

    return setup


def override_cmd(value: str) -> Setup:
    return rollouts_cmd("--override", value)


# 10 levels of 10 aliases: a million nodes, what the issue saw expanded and sent upstream.
OVERRIDE_BOMB = "".join(
    [
        f"a0: &a0 [{', '.join(['lol'] * 10)}]\n",
        *(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]\n" for n in range(1, 6)),
    ]
)
METADATA = "+responses_create_params.metadata="


def data_root_a_file(tmp: Path) -> list[str]:
    (tmp / "datafile").write_text("mine\n")
    configs = tree(tmp)
    return [*RUN, str(tmp / "run"), "--configs", str(configs), "--data-root", str(tmp / "datafile")]


def compare_with_a_string_reward(tmp: Path) -> list[str]:
    out = rollouts_run(tmp)
    records = out / "rollouts.jsonl"
    rows = [json.loads(text) for text in records.read_text("utf-8").splitlines()]
    rows[0]["reward"] = str(rows[0]["reward"])
    records.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return ["rollouts", "compare", str(out), str(out)]


# A prepare run makes its (empty) products directory before the script runs.
PREPARED_DIRS = ("data", "data/prepared", "data/prepared/units")
TOO_DEEP = f"JSON nested deeper than {MAX_NESTING} levels"

INPUT_CASES = [
    # --- configs (YAML) --------------------------------------------------------------------
    # Hung before: the line recorder walked the billion shared nodes.
    Case(
        "yaml-alias-bomb",
        command(*LIST, extra={"bomb.yaml": ALIAS_BOMB}),
        1,
        r"bomb\.yaml:5: the aliases of this YAML repeat more than 10,000 YAML nodes",
    ),
    # Loaded silently before (an endless value).
    Case(
        "yaml-recursive-alias",
        command(*LIST, extra={"loop.yaml": b"loop: &x\n  again: *x\n"}),
        1,
        r"loop\.yaml:2: the alias \*x is used inside the value it names",
    ),
    # RecursionError traceback before.
    Case(
        "yaml-nested-too-deep",
        command(*LIST, extra={"deep.yaml": b"deep: " + b"[" * 5000 + b"]" * 5000 + b"\n"}),
        1,
        rf"deep\.yaml:1: nested deeper than {MAX_NESTING} levels",
    ),
    # ReaderError traceback before (a multi-line message without a line number).
    Case(
        "yaml-control-character",
        command(*LIST, extra={"bin.yaml": b"a: 1\nb: \x00\x01\x02\n"}),
        1,
        r"bin\.yaml:2: not valid YAML: the control character #x00",
    ),
    Case(
        "yaml-not-utf8",
        command(*LIST, extra={"latin1.yaml": "name: caf\xe9\n".encode("latin-1")}),
        1,
        r"latin1\.yaml: cannot read the file: 'utf-8' codec",
    ),
    Case(
        "yaml-top-level-list",
        command(*LIST, extra={"list.yaml": b"- units_resources\n- units_environment\n"}),
        1,
        r"list\.yaml:1: the top level of a config file must be a mapping",
    ),
    Case(
        "yaml-duplicate-key",
        command(*LIST, bench=BENCH + "units_extra:\n  a: 1\n  a: 2\n"),
        1,
        r"config\.yaml:\d+: not valid YAML: key 'a' is written twice",
    ),
    Case(
        "yaml-two-documents",
        command(*LIST, extra={"two.yaml": b"a: 1\n---\nb: 2\n"}),
        1,
        r"two\.yaml:2: not valid YAML: .*another document",
    ),
    Case(
        "yaml-python-object-tag",
        command(*LIST, extra={"tag.yaml": b"x: !!python/object/apply:os.system [id]\n"}),
        1,
        r"tag\.yaml:1: not valid YAML: could not determine a constructor",
    ),
    # A traceback before (pydantic could not write the bytes into the metrics sidecar).
    Case(
        "yaml-binary-value",
        collate_cmd(bench=with_dataset_key("source: !!binary /w==")),
        1,
        r"config\.yaml:10: a YAML binary value has no JSON form",
    ),
    # Accepted before: NaN went into the metrics sidecar as invalid JSON, a set in random order.
    Case(
        "yaml-nan-value",
        collate_cmd(bench=with_dataset_key("source: .nan")),
        1,
        r"config\.yaml:10: \.nan has no JSON form \(JSON has no NaN or infinity\)",
    ),
    Case(
        "yaml-set-value",
        command(*LIST, bench=with_dataset_key("source: !!set {a, b}")),
        1,
        r"config\.yaml:10: a YAML set value has no JSON form",
    ),
    # Accepted before: YAML `true` became 1 repeat, "3" and 3.0 became 3, a million passed
    # (0 was refused already).
    *(
        Case(
            f"num-repeats-{name}",
            command(*LIST, bench=edited("num_repeats: 1", f"num_repeats: {value}")),
            1,
            rf"config\.yaml:11: .*'num_repeats': Input should be {problem}",
        )
        for name, value, problem in [
            ("boolean", "true", "a valid integer"),
            ("string", '"3"', "a valid integer"),
            ("float", "3.0", "a valid integer"),
            ("over-the-maximum", "1000000", "less than or equal to 10000"),
            ("zero", "0", "greater than or equal to 1"),
        ]
    ),
    Case(
        "datasets-not-a-list",
        command(*LIST, bench=edited("      datasets:\n", "      datasets: {}\n      old:\n")),
        1,
        r"'units_resources': datasets must be a list of dataset entries",
    ),
    Case(
        "dataset-name-not-a-string",
        command(*LIST, bench=edited("- name: units", "- name: 12")),
        1,
        r"config\.yaml:7: dataset 0 of 'units_resources' is invalid: field 'name'",
    ),
    # Silently kept the last `user:` before (prompt configs had their own plain loader).
    Case(
        "prompt-config-duplicate-key",
        prompt_cmd(b"user: 'Q: {question}'\nuser: 'A: {question}'\n"),
        1,
        r"p\.yaml:2: not valid YAML: key 'user' is written twice",
    ),
    Case(
        "prompt-config-alias-bomb",
        prompt_cmd(ALIAS_BOMB + b"user: 'Q: {question}'\n"),
        1,
        r"p\.yaml:5: the aliases of this YAML repeat more than 10,000 YAML nodes",
    ),
    # Traceback before (pydantic ValidationError from the agent's settings), after the run
    # had already replaced its outputs; now one line (the run directory is still written).
    Case(
        "agent-setting-out-of-range",
        settings_cmd("max_steps: 2", "max_steps: 0"),
        1,
        r"'units_simple_agent' \(responses_api_agents\.simple_agent\): setting 'max_steps': "
        r"Input should be greater than or equal to 1",
        creates=("run", "run/*"),
    ),
    # --- dataset rows (JSONL) --------------------------------------------------------------
    # RecursionError traceback before.
    Case(
        "row-nested-10000-levels",
        plan_cmd(rows=GOOD_ROWS + b'{"task_id": "d", "x": ' + b"[" * 10**4 + b"]" * 10**4 + b"}\n"),
        1,
        rf"units\.jsonl:4: {TOO_DEEP}",
    ),
    Case(
        "row-one-level-too-deep-collate",
        collate_cmd(rows=GOOD_ROWS + deep_row(MAX_NESTING + 1)),
        1,
        rf"units\.jsonl:4: {TOO_DEEP}",
    ),
    Case(
        "task-id-object-without-task-input",
        plan_cmd(rows=line(row({"taskset": "units", "task_id": "u1"}))),
        1,
        r"units\.jsonl:1: Benchmark 'units': Expected a flat dataset row, not an already "
        r"materialized task",
    ),
    Case(
        "row-not-utf8",
        plan_cmd(rows=GOOD_ROWS + b'{"task_id": "caf\xe9"}\n'),
        1,
        r"units\.jsonl:4: not valid UTF-8 text",
    ),
    Case(
        "row-binary-garbage",
        collate_cmd(rows=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n"),
        1,
        r"units\.jsonl:1: not valid UTF-8 text",
    ),
    Case(
        "row-is-a-list",
        plan_cmd(rows=GOOD_ROWS + b'["u4", "question"]\n'),
        1,
        r"units\.jsonl:4: expected a JSON object, got list",
    ),
    Case(
        "row-nan",
        plan_cmd(rows=GOOD_ROWS + b'{"task_id": "u4", "score": NaN}\n'),
        1,
        r"units\.jsonl:4: not valid JSON \(NaN is not valid JSON\)",
    ),
    Case(
        "row-integer-with-5000-digits",
        plan_cmd(rows=b'{"task_id": "u4", "n": ' + b"9" * 5000 + b"}\n"),
        1,
        r"units\.jsonl:1: not valid JSON \(Exceeds the limit \(4300 digits\)",
    ),
    Case(
        "row-lone-surrogate",
        collate_cmd(rows=GOOD_ROWS + b'{"task_id": "u4", "text": "\\ud800"}\n'),
        1,
        r"units\.jsonl:4: a string holds a lone surrogate escape",
    ),
    # Said "does not exist" before.
    Case(
        "rows-path-is-a-directory",
        plan_cmd(
            bench=edited("jsonl_fpath: units.jsonl", "jsonl_fpath: data_dir"),
            extra={"bench/data_dir/x": b""},
        ),
        1,
        r"data_dir: is a directory, not a regular file; pass the JSONL file itself",
    ),
    # --- plan files ------------------------------------------------------------------------
    # Accepted before: the loader sorted the tasks and kept one of the twins.
    Case(
        "plan-lists-a-task-twice",
        verify_cmd(json.dumps(plan_document("u1", "u1", "u2")).encode()),
        1,
        r"plan\.json: not a valid eval plan: tasks\.1 \(task 'u1', taskset 'units'\) is listed "
        r"twice; a plan lists each task once, sorted by task id",
    ),
    Case(
        "plan-out-of-order",
        verify_cmd(json.dumps(plan_document("u2", "u1")).encode()),
        1,
        r"tasks\.1 \(task 'u1', taskset 'units'\) is out of order \(it follows 'u2'",
    ),
    # RecursionError traceback before.
    Case(
        "plan-nested-too-deep",
        verify_cmd(b"[" * 100_000 + b"]" * 100_000),
        1,
        rf"plan\.json: not a JSON plan file: {TOO_DEEP}",
    ),
    # IsADirectoryError traceback before.
    Case(
        "plan-is-a-directory",
        verify_cmd(None),
        1,
        r"plan\.json: is a directory, not a regular file; pass the plan file itself",
    ),
    # ValueError traceback before (the integer-digits limit was not caught).
    Case(
        "plan-integer-with-5000-digits",
        verify_cmd(b'{"schema": "nemo-gym.eval-plan.v1", "n": ' + b"9" * 5000 + b"}"),
        1,
        r"plan\.json: not a JSON plan file \(Exceeds the limit \(4300 digits\)",
    ),
    # Accepted before (the plan reader parsed NaN).
    Case(
        "plan-nan",
        verify_cmd(GOOD_PLAN[:-1] + b', "weight": NaN}'),
        1,
        r"plan\.json: not a JSON plan file \(NaN is not valid JSON\)",
    ),
    Case(
        "plan-empty-file",
        verify_cmd(b""),
        1,
        r"plan\.json:1: not a JSON plan file \(Expecting value\)",
    ),
    Case(
        "plan-binary",
        verify_cmd(b"\x1f\x8b\x08\x00\x00\x00\x00\x00"),
        1,
        r"plan\.json: not a JSON plan file: not valid UTF-8 text",
    ),
    Case(
        "plan-is-a-list",
        verify_cmd(b"[]"),
        1,
        r"plan\.json: not an eval plan: expected a JSON object",
    ),
    Case(
        "plan-other-schema",
        verify_cmd(GOOD_PLAN.replace(b"eval-plan.v1", b"eval-plan.v2")),
        1,
        r"not a nemo-gym\.eval-plan\.v1 plan \(its schema label is 'nemo-gym\.eval-plan\.v2'\)",
    ),
    Case(
        "verify-taskset-is-a-directory",
        verify_cmd(GOOD_PLAN, None),
        1,
        r"taskset\.jsonl: is a directory, not a regular file; pass the JSONL file itself",
    ),
    # RecursionError traceback before; collated files get the envelope's headroom.
    Case(
        "verify-taskset-nested-too-deep",
        verify_cmd(GOOD_PLAN, task_line("u1", nested(MAX_PRODUCT_NESTING))),
        1,
        rf"taskset\.jsonl:1: JSON nested deeper than {MAX_PRODUCT_NESTING} levels",
    ),
    # --- flags -----------------------------------------------------------------------------
    # Ran nothing and exited 0 before.
    Case("rollouts-limit-zero", rollouts_cmd("--limit", "0"), 2, r"--limit: must be at least 1"),
    # Accepted before: a billion repeats built a billion-item list.
    Case(
        "rollouts-repeats-over-the-maximum",
        rollouts_cmd("--repeats", "1000000000"),
        2,
        r"--repeats: must be at most 10,000, got 1000000000",
    ),
    Case(
        "rollouts-concurrency-over-the-maximum",
        rollouts_cmd("--concurrency", "100000"),
        2,
        r"--concurrency: must be at most 1,024",
    ),
    Case("rollouts-concurrency-zero", rollouts_cmd("--concurrency", "0"), 2, r"must be at least 1"),
    # Accepted before (an infinite deadline).
    Case(
        "rollouts-timeout-infinite",
        rollouts_cmd("--timeout", "inf"),
        2,
        r"--timeout: must be a positive number of seconds, got inf",
    ),
    Case("rollouts-timeout-nan", rollouts_cmd("--timeout", "nan"), 2, r"got nan"),
    Case(
        "rollouts-max-attempts-over-the-maximum",
        rollouts_cmd("--max-attempts", "1000"),
        2,
        r"--max-attempts: must be at most 100",
    ),
    Case(
        "rollouts-limit-not-an-integer",
        rollouts_cmd("--limit", "1e3"),
        2,
        r"--limit: invalid integer value: '1e3'",
    ),
    Case(
        "rollouts-latency-nan",
        rollouts_cmd("--upstream-latency", "nan"),
        2,
        r"upstream: latency_s: Input should be a finite number",
    ),
    Case(
        "rollouts-latency-spread-without-latency",
        rollouts_cmd("--upstream-latency-spread", "0.5"),
        2,
        r"upstream: a latency spread needs a latency \(--upstream-latency\)",
    ),
    Case(
        "plan-task-ids-empty",
        command(*PLAN, "plan.json", "--task-ids", " , "),
        2,
        r"--task-ids: needs at least one id",
    ),
    Case(
        "plan-task-ids-unknown",
        plan_cmd("--task-ids", "u1,u9"),
        1,
        r"Benchmark 'units' has no tasks with ids \['u9'\]",
    ),
    Case(
        "collate-unknown-validation-mode",
        command(*COLLATE, "out", "--validation", "strict"),
        2,
        r"--validation: invalid choice: 'strict'",
    ),
    # RecursionError traceback before; the script is read before any product is made.
    Case(
        "script-nested-too-deep",
        script_cmd(b"[" * 100_000 + b"]" * 100_000),
        1,
        rf"script\.json: not a JSON script file: {TOO_DEEP}",
    ),
    Case(
        "script-is-a-directory",
        script_cmd(None),
        1,
        r"script\.json: is a directory, not a regular file; pass the script file itself",
    ),
    # Accepted before (NaN parsed, then an unrelated step error).
    Case(
        "script-nan",
        script_cmd(b'[{"text": NaN}]'),
        1,
        r"script\.json: not a JSON script file \(NaN is not valid JSON\)",
    ),
    # --- scripts and other programs' files -------------------------------------------------
    # The process exited with the script's code and no message before.
    Case(
        "prepare-script-calls-sys-exit",
        prepare_cmd("import sys\n\ndef prepare(output_fpath):\n    sys.exit('no network')\n"),
        1,
        r"prep\.py: the prepare script of 'units' failed: SystemExit: no network",
        creates=PREPARED_DIRS,
    ),
    # TypeError traceback before (Path(5)).
    Case(
        "prepare-script-returns-a-number",
        prepare_cmd("def prepare(output_fpath):\n    return 5\n"),
        1,
        r"prep\.py: the prepare script of 'units' returned 5; expected the output_fpath",
        creates=PREPARED_DIRS,
    ),
    Case(
        "conformance-bundle-nested-too-deep",
        bundle_cmd(b"[" * 10_000 + b"]" * 10_000 + b"\n"),
        2,
        rf"checker_error \(InspectionInputError\): .*rollouts\.jsonl:1: JSON nested deeper "
        rf"than {MAX_PRODUCT_NESTING} levels.*; no report published",
    ),
    # Hung before, like the configs loader.
    Case(
        "migration-of-an-alias-bomb",
        migrate_cmd(ALIAS_BOMB),
        2,
        r"could not update .*old\.yaml: .*old\.yaml:5: the aliases of this YAML repeat more",
    ),
    # --- names are names -------------------------------------------------------------------
    # Installed a venv, a cache and a log outside .harnesses/ before.
    Case(
        "harness-name-leaves-the-install-root",
        harnesses_cmd(
            f"  ../evil: {{{CLI_HARNESS}, stream: true}}\n", "harness", "install", "../evil"
        ),
        1,
        r"models\.yaml:\d+: harness '\.\./evil': a name is 1 to 128 letters, digits",
    ),
    # Each accepted before: "yes" became true, "60" became 60 s, the name key was overwritten,
    # a list or a number was an empty registry or the harness '7'.
    Case(
        "harness-stream-a-string",
        harnesses_cmd(f"  h: {{{CLI_HARNESS}, stream: 'yes'}}\n", *LIST_HARNESSES),
        1,
        r"models\.yaml:\d+: harness 'h': stream: Input should be a valid boolean",
    ),
    Case(
        "harness-timeout-a-string",
        harnesses_cmd(
            "  h:\n    kind: command\n    command: [prog]\n    timeout_s: '60'\n",
            *LIST_HARNESSES,
        ),
        1,
        r"models\.yaml:9: harness 'h': timeout_s: Input should be a valid number",
    ),
    Case(
        "harness-entry-with-a-name-key",
        harnesses_cmd(
            "  h: {kind: builtin, agent_implementation: simple_agent, name: g}\n",
            *LIST_HARNESSES,
        ),
        1,
        r"models\.yaml:\d+: harness 'h': name is filled in by the loader; drop it",
    ),
    Case(
        "harness-registry-a-list",
        registry_cmd(MODELS[: MODELS.index("harnesses:")] + "harnesses: []\n", *LIST_HARNESSES),
        1,
        r"models\.yaml:\d+: harnesses must map each harness name to its settings",
    ),
    Case(
        "harness-name-a-number",
        harnesses_cmd(
            "  7: {kind: builtin, agent_implementation: simple_agent}\n", *LIST_HARNESSES
        ),
        1,
        r"models\.yaml:\d+: harness 7: a name is",
    ),
    Case(
        "manifest-flag-a-string",
        manifest_cmd("experimental: 'yes'\n"),
        1,
        r"manifest\.yaml:29: Invalid environment manifest '.*manifest\.yaml': experimental: "
        r"Input should be a valid boolean",
    ),
    Case(
        "manifest-repeats-a-string",
        manifest_cmd("    num_repeats: '1'\n", after="    taskset: units\n"),
        1,
        r"manifest\.yaml:29: Invalid environment manifest '.*manifest\.yaml': "
        r"datasets\.0\.num_repeats: Input should be a valid integer",
    ),
    # Listed before; its products would have gone to <data>/prepared/../evil and beside.
    Case(
        "dataset-name-leaves-the-data-root",
        command(*LIST, bench=edited("- name: units", "- name: ../evil")),
        1,
        r"config\.yaml:7: dataset 0 of 'units_resources' is invalid: field 'name': "
        r"'\.\./evil' is not a name",
    ),
    # Collated before, its metrics sidecar written to <data>/metrics/../evil.train.
    Case(
        "instance-name-leaves-the-data-root",
        command(*LIST, extra={"other.yaml": OUTSIDE_INSTANCE}),
        1,
        r"other\.yaml:1: instance '\.\./evil' declares datasets, whose products are named by "
        r"their instance: a name is",
    ),
    # OSError (ENAMETOOLONG) traceback before.
    Case(
        "benchmark-token-part-over-255-characters",
        token_cmd("units/" + "b" * 300),
        2,
        r"--benchmark 'units/b{34}'\.\.\. \(306 characters\) is not a benchmark token",
    ),
    Case(
        "benchmark-name-over-255-characters",
        token_cmd("b" * 300),
        2,
        r"--benchmark 'b{40}'\.\.\. \(300 characters\) is not a benchmark token",
    ),
    # --- --override values: the config files' loader -------------------------------------
    # Expanded to a million nodes (892 MB for the bundled run) and sent upstream before.
    Case(
        "override-alias-bomb",
        override_cmd(METADATA + OVERRIDE_BOMB),
        2,
        r"--override 'responses_create_params\.metadata': the aliases of this YAML repeat more "
        r"than 10,000 YAML nodes .* \(line 4\)$",
    ),
    # Tracebacks before (a recursive list, bytes, RecursionError).
    Case(
        "override-recursive-alias",
        override_cmd(METADATA + "&x [*x]"),
        2,
        r"--override 'responses_create_params\.metadata': the alias \*x is used inside the value",
    ),
    Case(
        "override-binary-value",
        override_cmd(METADATA + "!!binary /w=="),
        2,
        r"--override 'responses_create_params\.metadata': a YAML binary value has no JSON form",
    ),
    Case(
        "override-nested-5000-levels",
        override_cmd(METADATA + "[" * 5000 + "]" * 5000),
        2,
        rf"--override 'responses_create_params\.metadata': nested deeper than {MAX_NESTING} levels",
    ),
    Case(
        "override-5000-dotted-fields",
        override_cmd("+responses_create_params." + ".".join(["a"] * 5000) + "=1"),
        2,
        r"--override: more than 126 dotted fields in a key",
    ),
    # Became null before, and every rollout failed with a message that named no flag.
    Case(
        "override-nan",
        override_cmd("+responses_create_params.temperature=.nan"),
        2,
        r"--override 'responses_create_params\.temperature': \.nan has no JSON form",
    ),
    # --- the OS's refusals: one line --------------------------------------------------------
    # NotADirectoryError traceback before.
    Case(
        "data-root-is-a-regular-file",
        data_root_a_file,
        1,
        r"datafile/tasksets: Not a directory$",
        creates=("run", "run/*"),
    ),
    # TypeError traceback before ('1.0' >= 0.5).
    Case(
        "compare-a-record-whose-reward-is-a-string",
        compare_with_a_string_reward,
        1,
        r"rollouts\.jsonl: the record of task \d+, rollout 0 has reward '1\.0' \(a str\); a "
        r"reward is a number or null$",
        slow=True,
    ),
    # --- what is not a regular file, or is over its cap -------------------------------------
    # Hung before (a FIFO), or read without end (22 GB before the OOM killer), or was "not
    # found" or skipped in silence. A user's link is followed, to what it leads to.
    *(
        Case(
            f"{name}-is-{kind_id}",
            setup(make),
            code,
            rf"{where}: is {kind}, not a regular file; pass the {what} itself",
            creates=creates,
            child=True,
        )
        for name, setup, code, where, what, kinds, creates in SPECIAL_INPUTS
        for kind_id, make, kind in SPECIAL_FILES
        if kind_id in kinds
    ),
    # Read whole before (a bad-JSON message after reading 256 MiB of NULs).
    Case(
        "plan-over-its-cap",
        verify_cmd(sparse(MAX_PLAN_BYTES + 1)),
        1,
        r"plan\.json: the plan file is larger than 256 MiB, its limit \(docs/operations\.md",
    ),
    Case(
        "script-over-its-cap",
        script_cmd(sparse(MAX_JSON_DOCUMENT_BYTES + 1)),
        1,
        r"script\.json: the script file is larger than 64 MiB, its limit",
    ),
    # The named file is refused as outside the tree (its link is followed); the tree is read.
    Case(
        "migration-beside-a-link-to-dev-zero",
        migrate_cmd(b"{}\n", beside=a_link_to_dev_zero),
        2,
        r"could not read .*beside\.yaml: .*beside\.yaml: is a device, not a regular file",
        child=True,
    ),
    # Parsed before: 16 MiB of NULs, refused as a control character.
    Case(
        "migration-over-its-cap",
        migrate_cmd(sparse(MAX_CONFIG_BYTES + 1)),
        2,
        r"could not update .*old\.yaml: .*old\.yaml: the config file is larger than 16 MiB",
    ),
]


# --- output paths: only what gym-assets wrote is ever replaced --------------------------------


def bundled(tmp: Path) -> list[str]:
    """Copy the bundled configs into ``tmp``; the flags naming them and a data root there."""
    configs = tmp / "configs"
    if not configs.exists():
        shutil.copytree(REPO / "configs", configs)
    return ["--configs", str(configs), "--data-root", str(tmp / "data")]


def out_at(command: list[str], make: Callable[[Path], Path]) -> Setup:
    """``command --out <what make(tmp) made>`` against the bundled configs."""

    def setup(tmp: Path) -> list[str]:
        flags = bundled(tmp)
        return [*command, str(make(tmp)), *flags]

    return setup


def foreign_dir(tmp: Path) -> Path:
    (tmp / "mine").mkdir()
    (tmp / "mine" / "thesis.tex").write_text("years of work\n")
    return tmp / "mine"


def regular_file(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("mine\n")
    return tmp / "notes.txt"


def fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "pipe")
    return tmp / "pipe"


def unix_socket(tmp: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp / "sock"))
    server.close()
    return tmp / "sock"


def char_device(tmp: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return tmp / "null"


def link_outside(tmp: Path) -> Path:
    (tmp / "elsewhere").mkdir()
    (tmp / "out").symlink_to(tmp / "elsewhere")
    return tmp / "out"


def taskset_product(tmp: Path) -> Path:
    assert run([*COLLATE, str(tmp / "taskset"), *bundled(tmp)]) == 0
    return tmp / "taskset"


def changed_plan(tmp: Path) -> Path:
    assert run([*PLAN, str(tmp / "plan.json"), *bundled(tmp)]) == 0
    (tmp / "plan.json").write_text('{"edited": "by hand"}\n')
    return tmp / "plan.json"


def rollouts_run(tmp: Path) -> Path:
    assert run([*ROLLOUTS, "--out", str(tmp / "run"), *bundled(tmp)]) == 0
    return tmp / "run"


def run_with_foreign_file(tmp: Path) -> list[str]:
    out = rollouts_run(tmp)
    (out / "notes.txt").write_text("mine\n")
    return [*ROLLOUTS, "--out", str(out), *bundled(tmp)]


def run_with_a_users_file(where: str, *flags: str) -> Setup:
    """A rollouts run, then a user's file at ``where`` inside it, then ``rollouts *flags``."""

    def setup(tmp: Path) -> list[str]:
        out = rollouts_run(tmp)
        (out / where).write_text("mine\n")
        return [*ROLLOUTS, "--out", str(out), *flags, *bundled(tmp)]

    return setup


def users_file_at_the_lock(tmp: Path) -> Path:
    (tmp / ".out.lock").write_text("my notes\n")
    return tmp / "out"


def rollouts_of(benchmark: str) -> list[str]:
    return ["rollouts", "--benchmark", benchmark, *ROLLOUTS[3:]]


def resumed_as(benchmark: str, *flags: str) -> Setup:
    """A units run, then ``rollouts --resume`` of it as ``benchmark`` with ``flags``."""

    def setup(tmp: Path) -> list[str]:
        out = rollouts_run(tmp)
        return [*rollouts_of(benchmark), "--out", str(out), "--resume", *flags, *bundled(tmp)]

    return setup


def compared(second: str, damage: Callable[[Path], object] = lambda _: None) -> Setup:
    """A units run and a run of ``second``, ``damage`` done to the second, then compare."""

    def setup(tmp: Path) -> list[str]:
        first = rollouts_run(tmp)
        assert run([*rollouts_of(second), "--out", str(tmp / "second"), *bundled(tmp)]) == 0
        damage(tmp / "second")
        return ["rollouts", "compare", str(first), str(tmp / "second")]

    return setup


def reverified(damage: Callable[[Path], object]) -> Setup:
    def setup(tmp: Path) -> list[str]:
        out = rollouts_run(tmp)
        damage(out)
        return ["rollouts", "reverify", "--run", str(out), *bundled(tmp)]

    return setup


def emptied_inventory(out: Path) -> None:
    (out / "rollouts_materialized_inputs.jsonl").write_bytes(b"")


def doubled_records(out: Path) -> None:
    records = out / "rollouts.jsonl"
    records.write_bytes(records.read_bytes() * 2)


def edited_input(out: Path) -> None:
    inventory = out / "rollouts_materialized_inputs.jsonl"
    rows = [json.loads(text) for text in inventory.read_text().splitlines()]
    rows[0]["task_input"]["task_data"]["expected_answer"] = "whatever the model said"
    inventory.write_text("".join(json.dumps(row) + "\n" for row in rows))


def resume_with_corrupt_middle_line(tmp: Path) -> list[str]:
    records = rollouts_run(tmp) / "rollouts.jsonl"
    first, second = records.read_text().splitlines(keepends=True)
    records.write_text(first[: len(first) // 2] + "\n" + second)
    return [*ROLLOUTS, "--out", str(tmp / "run"), "--resume", *bundled(tmp)]


def _mount(tmp: Path, options: str) -> Path:
    mount = tmp / "mnt"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    return mount


def unmount(tmp: Path) -> None:
    subprocess.run(["umount", str(tmp / "mnt")], check=False)


def read_only(tmp: Path) -> Path:
    return _mount(tmp, "ro,size=64k") / "out"


def disk_full(tmp: Path) -> Path:
    mount = _mount(tmp, "size=64k")
    fill(mount, leave=0)
    return mount / "plan.json"


_HOLDERS: dict[Path, subprocess.Popen[str]] = {}
_HOLD = """
import sys
from pathlib import Path
from gym_assets.outputs.lock import held
from gym_assets.outputs.markers import TASKSET
from gym_assets.outputs.targets import Target
with held(Target(Path(sys.argv[1]), TASKSET, Path(sys.argv[1]).parent / "configs")):
    print("held", flush=True)
    sys.stdin.readline()
"""


def locked_elsewhere(tmp: Path) -> Path:
    out = tmp / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    _HOLDERS[tmp] = holder
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return out


def release(tmp: Path) -> None:
    holder = _HOLDERS.pop(tmp)
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=60)


def symlinked_data_root_dir(tmp: Path) -> list[str]:
    flags = bundled(tmp)
    (tmp / "elsewhere").mkdir()
    (tmp / "data").mkdir()
    (tmp / "data" / "prepared").symlink_to(tmp / "elsewhere")
    return ["prepare", "--benchmark", "humaneval", *flags]


def inspect_into_foreign_dir(tmp: Path) -> list[str]:
    (tmp / "bundle.jsonl").write_text("{}\n")
    return ["conformance", "inspect", "--bundle", str(tmp / "bundle.jsonl"), "--output",
            str(foreign_dir(tmp))]  # fmt: skip


def matrix_into_a_rollouts_run(tmp: Path) -> list[str]:
    out = rollouts_run(tmp)
    return ["conformance", "matrix", "--harness", f"simple={out}", "--output", str(out)]


def catalogue_over_a_page_written_by_hand(tmp: Path) -> list[str]:
    return ["conformance", "catalogue", "--out", str(regular_file(tmp))]


def migrate_outside_the_configs(tmp: Path) -> list[str]:
    flags = bundled(tmp)
    outside = tmp / "other.yaml"
    outside.write_text("{}\n")
    return ["config", "add-environment-servers", str(outside), *flags[:2]]


FOREIGN = r"exists and was not written by gym-assets \(no product marker\); choose another --out"
SPECIAL = r"gym-assets writes only regular files and directories; choose another --out$"

OUTPUT_PATH_CASES = [
    Case("out-is-the-configs-root", out_at(COLLATE, lambda t: t / "configs"), 1,
         r"configs: is the configs root; products are never written over configs"),
    Case("out-inside-the-configs-root-even-empty",
         out_at(COLLATE, lambda t: (t / "configs" / "empty").mkdir() or t / "configs" / "empty"),
         1, r"is inside the configs root"),
    Case("out-contains-the-configs-root", out_at(COLLATE, lambda t: t), 1,
         r"contains the configs root"),
    Case("out-is-a-foreign-non-empty-dir", out_at(COLLATE, foreign_dir), 1, FOREIGN),
    Case("out-is-dev-null", out_at(PLAN, lambda t: Path("/dev/null")), 1,
         r"^error: /dev/null: is a character device; " + SPECIAL),
    Case("out-is-a-char-device-made-with-mknod", out_at(PLAN, char_device), 1,
         r"null: is a character device; " + SPECIAL),
    Case("out-is-a-fifo", out_at(COLLATE, fifo), 1, r"pipe: is a FIFO; " + SPECIAL),
    Case("out-is-a-unix-socket", out_at(PLAN, unix_socket), 1, r"sock: is a socket; " + SPECIAL),
    Case("out-is-a-symlink-to-outside", out_at(COLLATE, link_outside), 1,
         r"out: is a symbolic link; " + SPECIAL),
    Case("file-where-a-dir-is-expected", out_at(COLLATE, regular_file), 1,
         r"notes.txt: is a file, not a directory; choose another --out$"),
    Case("dir-where-a-file-is-expected", out_at(PLAN, foreign_dir), 1,
         r"mine: is a directory, not a file; choose another --out$"),
    Case("out-under-a-regular-file", out_at(PLAN, lambda t: regular_file(t) / "sub"), 1,
         r"notes.txt/sub: cannot write: Not a directory$"),
    Case("out-holds-a-product-of-another-kind", out_at(["rollouts", *ROLLOUTS[1:], "--out"],
         taskset_product), 1, r"taskset: holds a taskset, not a rollouts run"),
    Case("plan-file-changed-after-we-wrote-it", out_at(PLAN, changed_plan), 1,
         r"plan.json: was changed after gym-assets wrote it"),
    Case("fresh-run-over-a-foreign-file", run_with_foreign_file, 1,
         r"run: holds .*notes.txt, which a rollouts run does not write", slow=True),
    # Deleted before: report/ was cleared by a fresh run and swapped whole by a resume.
    Case("fresh-run-over-a-users-file-in-report", run_with_a_users_file("report/notes.txt"), 1,
         r"run: holds .*run/report/notes.txt, which a rollouts run does not write .*; move it "
         r"out of the run directory or choose another --out$", slow=True),
    Case("resume-over-a-users-file-in-report",
         run_with_a_users_file("report/notes.txt", "--resume"), 1,
         r"run: holds .*run/report/notes.txt, which a rollouts run does not write", slow=True),
    # Deleted before: a file named like a lock was taken over (truncated) and removed.
    Case("users-file-named-like-a-lock-in-the-run", run_with_a_users_file(".report.lock"), 1,
         r"run: holds .*run/\.report\.lock, which a rollouts run does not write", slow=True),
    Case("users-file-named-like-the-lock-of-out", out_at(COLLATE, users_file_at_the_lock), 1,
         r"out: .*/\.out\.lock is in the place of its lock file and was not written by "
         r"gym-assets \(taking the lock would overwrite it\); move it elsewhere or choose "
         r"another --out$"),
    # Exit 0 before, the units history relabelled as arith.
    Case("resume-as-another-benchmark", resumed_as("arith"), 1,
         r"run: cannot resume: the run differs from what is asked: benchmark 'units' \(the run\) "
         r"vs 'arith' \(now\); .*or start a fresh run \(without --resume, or in another --out\)$",
         slow=True),
    # Ignored silently before.
    Case("resume-with-other-repeats", resumed_as("units", "--repeats", "3"), 1,
         r"run: cannot resume: the run differs from what is asked: repeats unset \(the run\) vs "
         r"3 \(now\); resume with the run's own", slow=True),
    # "30 inputs changed", exit 0 before.
    Case("compare-two-benchmarks", compared("arith"), 1,
         r"run is a run of benchmark 'units' and .*second of 'arith': their task indexes name "
         r"different questions; compare runs of one benchmark, or pass "
         r"--allow-different-benchmarks$", slow=True),
    # Compared as normal before.
    Case("compare-an-emptied-inventory", compared("units", emptied_inventory), 1,
         r"second/rollouts_materialized_inputs.jsonl: sha256 .* is not the .* the run wrote "
         r"\(rollouts_manifest.json\): the inventory was changed after the run", slow=True),
    Case("compare-doubled-records", compared("units", doubled_records), 1,
         r"second/rollouts.jsonl: holds 2 records of rollout \(\d+, 0\); a run writes one "
         r"record per rollout: the file was edited or joined with another", slow=True),
    # Re-graded before, against no plan.
    Case("reverify-an-edited-input", reverified(edited_input), 1,
         r"run/rollouts_materialized_inputs.jsonl: sha256 .* the inventory was changed after "
         r"the run", slow=True),
    # Wrote 4 records with a summary of 2 before.
    Case("reverify-doubled-records", reverified(doubled_records), 1,
         r"run/rollouts.jsonl: holds 2 records of rollout", slow=True),
    Case("resume-with-a-corrupt-middle-line", resume_with_corrupt_middle_line, 1,
         r"rollouts.jsonl:1: damaged line \(not a JSON object\); resume with "
         r"--quarantine-corrupt", slow=True),
    Case("read-only-location", out_at(COLLATE, read_only), 1,
         r"mnt/out: cannot write: Read-only file system$", cleanup=unmount),
    Case("disk-full", out_at(PLAN, disk_full), 1,
         r"mnt/plan.json: cannot write: No space left on device$", cleanup=unmount),
    Case("lock-held-by-another-process", out_at(COLLATE, locked_elsewhere), 1,
         r"out: is in use by pid \d+ \(another gym-assets run\); wait for it or choose another "
         r"--out$", cleanup=release),
    Case("symlink-below-the-data-root", symlinked_data_root_dir, 1,
         r"data/prepared is a symbolic link; products under the data root are written only "
         r"through real directories$"),
    Case("conformance-output-is-foreign", inspect_into_foreign_dir, 2,
         r"^checker_error \(OutputError\): .*mine: exists and was not written by gym-assets .*"
         r"choose another --output or remove it yourself; no report published$"),
    Case("conformance-matrix-output-holds-a-rollouts-run", matrix_into_a_rollouts_run, 2,
         r"run: holds a rollouts run, not a conformance matrix; choose another --output",
         slow=True),
    Case("catalogue-over-a-page-written-by-hand", catalogue_over_a_page_written_by_hand, 1,
         r"notes.txt: exists and was not written by gym-assets"),
    Case("migrate-a-file-outside-the-configs-root", migrate_outside_the_configs, 2,
         r"could not update .*other.yaml: .*other.yaml: not inside the configs root"),
]  # fmt: skip


# --- the test -------------------------------------------------------------------------------

_USAGE_CONTINUATION = re.compile(r"^\s")
# Progress a command prints before its work: collation's per-dataset line, the rollout counter.
_PROGRESS = re.compile(
    r"^(\w+: collating \S+ from \S+|collating \S+ into \S+ \.\.\.|rollouts \d+/\d+ .*)$"
)


def refusal_line(err: str, exit_code: int) -> str:
    """The one line of a refusal, after what the command always prints first."""
    lines = err.splitlines()
    if exit_code == 2 and lines and lines[0].startswith("usage: "):
        lines = lines[1:]
        while lines and _USAGE_CONTINUATION.match(lines[0]):
            lines = lines[1:]
    while lines and _PROGRESS.match(lines[0]):
        lines = lines[1:]
    assert len(lines) == 1, err
    return lines[0]


CASES = [*INPUT_CASES, *OUTPUT_PATH_CASES]


def test_the_corpus_is_large_and_its_ids_unique() -> None:
    assert len(INPUT_CASES) >= 80 and len(OUTPUT_PATH_CASES) >= 12
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, id=case.id, marks=pytest.mark.slow if case.slow else ()) for case in CASES],
)
def test_bad_input_is_refused_in_one_line_and_writes_nothing(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may land in the working directory either
    monkeypatch.delenv("GYM_ASSETS_CONFIGS", raising=False)
    monkeypatch.delenv("GYM_ASSETS_DATA_ROOT", raising=False)
    with contextlib.ExitStack() as undo:
        if case.cleanup is not None:
            undo.callback(case.cleanup, tmp_path)
        argv = case.setup(tmp_path)
        before = snapshot(tmp_path)
        capsys.readouterr()

        if case.child:
            code, err = run_child(argv, tmp_path)
        else:
            code = run(argv)
            err = capsys.readouterr().err
        after = snapshot(tmp_path)
    assert "Traceback" not in err
    assert code == case.exit_code, err
    assert re.search(case.message, refusal_line(err, case.exit_code)), err
    allowed = lambda path: any(fnmatch.fnmatch(path, glob) for glob in case.creates)  # noqa: E731
    assert {p: v for p, v in after.items() if not allowed(p)} == {
        p: v for p, v in before.items() if not allowed(p)
    }


# --- the limit itself is no refusal ---------------------------------------------------------


def test_a_row_nested_exactly_at_the_limit_collates_plans_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    configs = tree(tmp_path, rows=GOOD_ROWS + deep_row(MAX_NESTING))
    flags = roots(tmp_path, configs)
    assert main([*COLLATE, str(tmp_path / "out"), *flags]) == 0
    assert main([*PLAN, str(tmp_path / "plan.json"), *flags]) == 0
    taskset = tmp_path / "out" / "benchmark.jsonl"
    verify = ["plan", "verify", "--plan", str(tmp_path / "plan.json")]
    assert main([*verify, "--taskset", str(taskset), *flags]) == 0
    assert main([*verify, "--benchmark", "units", *flags]) == 0
    out = capsys.readouterr().out
    assert out.count("plan matches") == 2 and "4 tasks, every digest equal" in out
    collated = [json.loads(text) for text in taskset.read_text("utf-8").splitlines()]
    assert collated[-1]["task_input"]["task_data"]["extra"] == nested(MAX_NESTING - 2)


# --- text from data is printed, never obeyed --------------------------------------------------

FORGED = "u9\nchanged: u1 (taskset units)"
ESCAPE = "\x1b]0;owned\x07\x1b[2J"


def test_plan_verify_prints_task_ids_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A task id holding a newline printed a forged ``changed:`` line, and an escape sequence
    reached the terminal; each is shown as its escape, on its own report line."""
    monkeypatch.chdir(tmp_path)
    taskset = task_line("u1", {"q": 1}) + task_line(FORGED, {"q": 2}) + task_line(ESCAPE, {})
    argv = verify_cmd(json.dumps(plan_document("u1")).encode(), taskset)(tmp_path)
    capsys.readouterr()

    assert run(argv) == 1

    lines = capsys.readouterr().out.splitlines()
    sections = [text.split(":")[0] for text in lines]
    assert sections == ["added", "added", "changed", "plan does not match " + argv[5]]
    assert "\x1b" not in "".join(lines) and "\x07" not in "".join(lines)
    assert r"added: u9\nchanged: u1 (taskset units) (taskset units)" in lines
    assert r"added: \x1b]0;owned\x07\x1b[2J (taskset units)" in lines


# --- doctor: a data root that cannot hold products ---------------------------------------------


def doctor_of_data_root(
    tmp: Path, data_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> list[tuple[str, str]]:
    """``doctor --json`` with ``data_root``: the status and detail of its data root item (the
    sandbox's probe, which starts a guest, is left out: it is not about the data root)."""
    from gym_assets import doctor

    monkeypatch.setattr(doctor, "sandbox", lambda: doctor.Finding("ok", "sandbox", "skipped"))
    configs = tree(tmp)
    capsys.readouterr()
    code = run(["doctor", "--json", "--configs", str(configs), "--data-root", str(data_root)])
    findings = json.loads(capsys.readouterr().out)
    assert code == (1 if any(f["status"] == "FAIL" for f in findings) else 0)
    return [(f["status"], f["detail"]) for f in findings if f["item"] == "data root"]


def test_doctor_fails_a_data_root_that_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """It said "ok" (free disk under the file) before."""
    (tmp_path / "data").write_text("mine\n")
    found = doctor_of_data_root(tmp_path, tmp_path / "data", monkeypatch, capsys)
    assert found == [("FAIL", f"{tmp_path / 'data'} is not a directory")]
    assert (tmp_path / "data").read_text() == "mine\n"


def test_doctor_fails_a_data_root_under_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "notes").write_text("mine\n")
    data_root = tmp_path / "notes" / "data"
    found = doctor_of_data_root(tmp_path, data_root, monkeypatch, capsys)
    detail = f"{tmp_path / 'notes'} is on the way to {data_root} and is not a directory"
    assert found == [("FAIL", detail)]


def test_doctor_fails_a_read_only_data_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """It said "ok" before; a run then failed at its first write."""
    with contextlib.ExitStack() as undo:
        undo.callback(unmount, tmp_path)
        mount = _mount(tmp_path, "ro,size=64k")
        found = doctor_of_data_root(tmp_path, mount, monkeypatch, capsys)
    assert found == [("FAIL", f"{mount} cannot be written here (read-only, or not this user's)")]


def test_doctor_passes_a_data_root_still_to_be_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    found = doctor_of_data_root(tmp_path, tmp_path / "data", monkeypatch, capsys)
    assert [status for status, _ in found] == ["ok"]


# --- what a refusal case cannot show: a closed pipe, server logs, a disk filling mid-run -----


def _cli(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "gym_assets.cli", *argv]


_CHILD_ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """BrokenPipeError traceback before (``gym-assets list benchmarks | head``)."""
    argv = _cli([*LIST, *roots(tmp_path, tree(tmp_path))])
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(argv, cwd=tmp_path, env=_CHILD_ENV, **pipes) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # the reader is gone before the first line
        err = child.stderr.read()
        code = child.wait(timeout=120)
    assert (code, err) == (1, b"")


@pytest.mark.slow  # a whole run, and the gateway's grace period at its end
def test_a_rollout_past_its_timeout_leaves_a_log_line_not_a_traceback(tmp_path: Path) -> None:
    """One CancelledError traceback per timed-out rollout before, when the gateway stopped with
    their model calls still waiting upstream."""
    slow = ["--limit", "2", "--upstream-latency", "30", "--timeout", "0.5", "--max-attempts", "1"]
    argv = _cli([*RUN, str(tmp_path / "run"), *slow, *roots(tmp_path, tree(tmp_path))])
    done = subprocess.run(
        argv, cwd=tmp_path, env=_CHILD_ENV, capture_output=True, text=True, timeout=300
    )
    assert "Traceback" not in done.stderr
    cancelled = [
        text
        for text in done.stderr.splitlines()
        if text.startswith("model gateway: ERROR Exception in ASGI application: CancelledError")
    ]
    assert len(cancelled) == 2, done.stderr


@pytest.mark.slow  # two whole runs
def test_a_full_disk_mid_run_cuts_no_ledger_line_and_resume_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """An ExceptionGroup traceback before, and the ledger's last line cut at the disk's end."""
    monkeypatch.chdir(tmp_path)
    rows = b"".join(line(row(f"u{n}")) for n in range(40))
    flags = roots(tmp_path, tree(tmp_path, rows=rows))
    with tmpfs(tmp_path / "mnt", "size=4m") as mount:
        fill(mount, leave=48 * 1024)
        out = mount / "run"
        code = run([*RUN, str(out), *flags])
        err = capsys.readouterr().err
        assert "Traceback" not in err and code == 1, err
        assert re.fullmatch(
            r"error: \S+: cannot write: No space left on device", err.splitlines()[-1]
        )
        ledgers = [out / "rollouts.jsonl", out / "rollouts_failures.jsonl"]
        for ledger in ledgers:
            data = ledger.read_bytes()
            assert data == b"" or data.endswith(b"\n")  # whole rows or none
            assert all(isinstance(json.loads(text), dict) for text in data.splitlines())
        (mount / "filler").unlink()
        assert run([*RUN, str(out), "--resume", *flags]) == 0, capsys.readouterr().err
        done = {tuple(json.loads(text)[k] for k in ("_ng_task_index", "_ng_rollout_index"))
                for text in ledgers[0].read_text("utf-8").splitlines()}  # fmt: skip
    assert len(done) == 40
