"""``gym-assets plan``: write a benchmark's eval plan, print its schema, or verify it.

    gym-assets plan --benchmark NAME[/FLAVOR] --out FILE [--task-ids A,B]
        [--no-prepare | --no-rebuild]
    gym-assets plan --schema
    gym-assets plan verify --plan FILE (--benchmark NAME | --taskset FILE)

The benchmark's rows are prepared first when they are missing or stale, as the reference's
``gym eval plan`` prepares. Refusals exit 1 with one message and write nothing; flag mistakes
are usage errors (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from gym_assets.cli.flags import (
    BENCHMARK_HELP,
    BENCHMARK_METAVAR,
    add_configs_flag,
    add_data_root_flag,
    add_no_rebuild_flag,
    refused_by,
    select,
    workspace_of,
)
from gym_assets.display import shown
from gym_assets.errors import UserError

if TYPE_CHECKING:
    from gym_assets.plans.model import TaskKey
    from gym_assets.plans.verify import PlanDiff
    from gym_assets.tasks.catalog import Benchmark, Catalog


def task_ids_flag(value: str) -> list[str]:
    """``A, B,,C`` -> ``["A", "B", "C"]``; a list with no id at all is a usage error."""
    ids = [item.strip() for item in value.split(",") if item.strip()]
    if not ids:
        raise argparse.ArgumentTypeError(
            "needs at least one id (A,B,...); leave the flag out to plan every task"
        )
    return ids


def _selected(args: argparse.Namespace, value: str) -> tuple[Catalog, Benchmark]:
    from gym_assets.plans.build import refuse_prompt_template, require_one_benchmark

    selection = select(args, value)
    require_one_benchmark([benchmark.name for benchmark in selection.benchmarks])
    benchmark = selection.benchmarks[0]
    refuse_prompt_template(benchmark.name, benchmark.dataset.prompt_config)
    return selection.catalog, benchmark


def _warn(message: str) -> None:
    print(f"warning: {shown(message)}", file=sys.stderr)


def _say(message: str) -> None:
    print(shown(message), file=sys.stderr)


def _plan(args: argparse.Namespace) -> int:
    from gym_assets.outputs.markers import PLAN_FILE
    from gym_assets.outputs.targets import Target
    from gym_assets.plans.build import require_one_benchmark
    from gym_assets.plans.model import plan_json_schema
    from gym_assets.plans.pipeline import plan_benchmark
    from gym_assets.plans.products import ensure_prepared
    from gym_assets.plans.render import render_json, write_plan_file

    parser: argparse.ArgumentParser = args.plan_parser
    if args.schema:
        preparing = args.prepare or args.no_prepare or args.no_rebuild
        if args.benchmark or args.out or args.task_ids is not None or preparing:
            parser.error(
                "--schema only prints the schema; drop --benchmark, --out, --task-ids and "
                "--prepare, --no-prepare, --no-rebuild"
            )
        sys.stdout.write(render_json(plan_json_schema()))
        return 0
    if not args.out:
        parser.error("--out FILE is required (where to write the plan), or pass --schema")
    if not args.benchmark:
        parser.error(f"--benchmark {BENCHMARK_METAVAR} is required")
    catalog, benchmark = _selected(args, require_one_benchmark(args.benchmark))
    refuse = "--no-prepare" if args.no_prepare else refused_by(args)
    prepared = ensure_prepared(catalog, benchmark, _say, refuse=refuse, prepare=not args.no_prepare)
    if prepared is not None:
        print(
            f"prepared {prepared.rows} rows of '{benchmark.name}' at {prepared.path}",
            file=sys.stderr,
        )
    plan = plan_benchmark(benchmark, args.task_ids, _warn)
    if not plan.tasks and plan.selected_task_ids is None:
        _warn(
            f"benchmark '{benchmark.name}' has no rows in {benchmark.rows_path}; the plan "
            "lists no tasks"
        )
    write_plan_file(Target.of(args.out, PLAN_FILE, workspace_of(args)), plan)
    print(
        f"planned {len(plan.tasks)} tasks of '{benchmark.name}' (taskset '{benchmark.taskset}')",
        file=sys.stderr,
    )
    print(args.out)
    return 0


def _label(key: TaskKey) -> str:
    """A task as the report names it: ids from the data, shown escaped (an id holding a
    newline would forge a line of the report)."""
    return f"{shown(key.task_id)} (taskset {shown(key.taskset)})"


def _report(diff: PlanDiff) -> None:
    for section, keys in (
        ("added", diff.added),
        ("removed", diff.removed),
        ("changed", diff.changed),
        ("inconsistent", diff.inconsistent),
    ):
        for key in keys:
            print(f"{section}: {_label(key)}")
    if diff.unchecked_rows:
        print(
            f"unchecked: {diff.unchecked_rows} flat rows have no task id (task_id, problem_id, "
            "instance_id), so they cannot be matched to a planned task"
        )


def _verify(args: argparse.Namespace) -> int:
    from gym_assets.plans.build import file_tasks
    from gym_assets.plans.model import load_plan
    from gym_assets.plans.pipeline import collated_tasks
    from gym_assets.plans.verify import verify_plan

    plan = load_plan(args.plan)
    if args.taskset is not None:
        source = args.taskset
        diff = verify_plan(plan, collated_tasks(plan, args.taskset))
    else:
        _, benchmark = _selected(args, args.verify_benchmark)
        if benchmark.name != plan.benchmark:
            raise UserError(
                f"the plan is for benchmark '{shown(plan.benchmark)}', not '{benchmark.name}'",
                path=args.plan,
            )
        source = f"benchmark '{benchmark.name}'"
        rows = benchmark.require_rows()
        diff = verify_plan(plan, file_tasks(rows, benchmark.name, benchmark.taskset))
    _report(diff)
    if diff.matches:
        print(shown(f"plan matches {source}: {len(plan.tasks)} tasks, every digest equal"))
        return 0
    counts = f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed"
    print(shown(f"plan does not match {source}: {counts}"))
    return 1


def register(subparsers: argparse._SubParsersAction) -> None:
    plan = subparsers.add_parser(
        "plan",
        help="write a benchmark's eval plan (task ids + input digests), or verify one",
        description="Write the nemo-gym.eval-plan.v1 file of one benchmark: each task once, "
        "sorted by id, with the sha256 of its canonical task input.",
    )
    plan.add_argument(
        "--benchmark",
        action="append",
        metavar=BENCHMARK_METAVAR,
        help=f"the benchmark to plan (one): {BENCHMARK_HELP}",
    )
    preparing = plan.add_mutually_exclusive_group()
    preparing.add_argument(
        "--no-prepare",
        action="store_true",
        help="never run the benchmark's prepare script: rows not prepared yet are refused with "
        "the command that prepares them, and so are stale ones (prepared before their script "
        "or declaration changed)",
    )
    preparing.add_argument(
        "--prepare",
        action="store_true",
        help="does nothing: preparing first is the default now; accepted so that scripts "
        "written before keep working",
    )
    add_no_rebuild_flag(plan)
    plan.add_argument("--out", metavar="FILE", help="where to write the plan (atomically)")
    plan.add_argument(
        "--task-ids",
        type=task_ids_flag,
        metavar="ID[,ID...]",
        help="plan only these tasks (comma separated)",
    )
    plan.add_argument("--schema", action="store_true", help="print the plan JSON Schema and exit")
    add_configs_flag(plan)
    add_data_root_flag(plan)
    plan.set_defaults(handler=_plan, plan_parser=plan)

    actions = plan.add_subparsers(dest="plan_action", metavar="verify")
    verify = actions.add_parser(
        "verify",
        help="compare a plan with a benchmark's rows or a collated taskset",
        description="Print the added, removed and changed task ids; exit 0 when the plan "
        "matches, 1 when it does not.",
    )
    verify.add_argument("--plan", required=True, metavar="FILE", help="the plan file")
    source = verify.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--benchmark",
        dest="verify_benchmark",
        metavar=BENCHMARK_METAVAR,
        help="the benchmark's rows",
    )
    source.add_argument("--taskset", metavar="FILE", help="a collated taskset JSONL file")
    add_configs_flag(verify)
    add_data_root_flag(verify)
    verify.set_defaults(handler=_verify)
