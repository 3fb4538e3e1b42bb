"""``gym-assets list benchmarks``, ``gym-assets prepare`` and ``gym-assets collate``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from gym_assets.cli.listing import print_listing
from gym_assets.display import shown
from gym_assets.errors import UserError
from gym_assets.modes import COLLATION_MODES, VALIDATION_MODES

if TYPE_CHECKING:
    from gym_assets.tasks.catalog import Benchmark, Catalog
    from gym_assets.tasks.collation_model import CollationReport


def _catalog(args: argparse.Namespace) -> Catalog:
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.tasks.catalog import load_catalog

    catalog = load_catalog(workspace_of(args))
    say_config_warnings(catalog.loaded)
    return catalog


def _listing(benchmark: Benchmark, token: str) -> dict[str, Any]:
    from gym_assets.config.manifests import manifest_fields

    agent = benchmark.agents[0] if len(benchmark.agents) == 1 else None
    return {
        "name": token,
        "dataset": benchmark.name,
        "agent_name": agent,
        "domain": benchmark.domain,
        "num_repeats": benchmark.dataset.num_repeats,
        "description": benchmark.description,
        "taskset": benchmark.dataset.taskset,
        "environment_server": benchmark.environment_server,
        "environment_servers": list(benchmark.fronting.candidates),
        "agents": list(benchmark.agents),
        "prepared": benchmark.rows_path.is_file(),
        **manifest_fields(benchmark.manifest, benchmark.manifest_refusal is not None),
    }


def _cells(row: dict[str, Any]) -> list[str]:
    return [
        row["name"],
        row["taskset"] or "-",
        _server_cell(row),
        ",".join(row["agents"]) or "-",
        str(row["num_repeats"]),
        row["domain"] or "-",
        "yes" if row["prepared"] else "no",
        row["status"],
    ]


def _server_cell(row: dict[str, Any]) -> str:
    """The server, or the several that front the benchmark's agent, marked as a choice to make."""
    if row["environment_server"] is not None:
        return str(row["environment_server"])
    several = row["environment_servers"]
    return f"ambiguous: {','.join(several)}" if several else "-"


def _listings(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every benchmark of the tree, then every flavor's, each named by its selector token.

    A benchmark declared outside ``benchmarks/`` (or beside others in one file) is named by its
    dataset name, which selects it as well. A flavor that does not resolve is skipped with a
    warning, so one broken flavor does not hide the others.
    """
    from gym_assets.config.flavors import benchmark_configs, token_of
    from gym_assets.tasks.selection import select_benchmark

    catalog = _catalog(args)
    for problem in catalog.manifest_problems:  # each blocks only its own folder's commands
        print(f"warning: {shown(problem.render())}", file=sys.stderr)
    root = catalog.loaded.root
    rows: list[dict[str, Any]] = []
    for benchmark in catalog:
        file = catalog.loaded.file_of(benchmark.instance)
        alone = sum(catalog.loaded.file_of(b.instance) == file for b in catalog) == 1
        rows.append(_listing(benchmark, (alone and token_of(root, file)) or benchmark.name))
    for config in benchmark_configs(root):
        if not config.flavor:
            continue
        try:
            # the flavor shares the tree's warnings, said once by _catalog above
            selection = select_benchmark(workspace_of(args), config.token)
        except UserError as exc:
            print(
                f"warning: skipping benchmark config '{config.path}': could not resolve it "
                f"({exc.message.splitlines()[0]})",
                file=sys.stderr,
            )
            continue
        for benchmark in selection.benchmarks:
            token = config.token if len(selection.benchmarks) == 1 else benchmark.name
            rows.append(_listing(benchmark, token))
    return rows


def _list(args: argparse.Namespace) -> int:
    print_listing(
        "Benchmarks",
        _listings(args),
        as_json=args.json,
        headers=[
            "name",
            "taskset",
            "environment_server",
            "agents",
            "repeats",
            "domain",
            "prepared",
            "status",
        ],
        cells=_cells,
    )
    return 0


def _prepare(args: argparse.Namespace) -> int:
    from gym_assets.tasks.fingerprint import InputsOf
    from gym_assets.tasks.prepare import prepare_benchmark

    selection = select(args, args.benchmark)
    benchmark = selection.one()
    inputs = InputsOf(selection.catalog, benchmark).product("prepared")
    result = prepare_benchmark(benchmark, use_cached=args.use_cached, inputs=inputs)
    verb = "prepared" if result.ran_prepare else "checked"
    print(f"{verb} {result.rows} rows of '{result.benchmark}' at {result.path}", file=sys.stderr)
    print(result.path)
    return 0


def _progress(message: str) -> None:
    print(shown(message), file=sys.stderr, flush=True)


def _collate(args: argparse.Namespace) -> int:
    if args.mode is not None:
        return _collate_datasets(args)
    if args.config:
        args.parser.error("--config goes with --mode; --benchmark reads --configs DIR")
    from gym_assets.plans.products import ensure_prepared
    from gym_assets.tasks.fingerprint import InputsOf
    from gym_assets.tasks.pipeline import collate_benchmark

    selection = select(args, args.benchmark)
    catalog, benchmark = selection.catalog, selection.one()
    ensure_prepared(catalog, benchmark, _progress, refuse=refused_by(args))
    inputs = InputsOf(catalog, benchmark).product("taskset")
    options = _options(args)
    report = collate_benchmark(catalog, benchmark.name, Path(args.out), inputs=inputs, **options)
    return _reported(report, f"'{benchmark.name}'", args.out)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "validation": args.validation,
        "overwrite_metrics_conflicts": args.overwrite_metrics_conflicts,
        "progress": _progress,
    }


def _reported(report: CollationReport, what: str, out: str) -> int:
    """Say what a collation did on stderr; print the files it wrote, one a line."""
    if report.validation_summary:
        _progress("[task_data validation]\n" + report.validation_summary)
    where = ", ".join(report.tasksets) if report.tasksets else "flat rows"
    tasks = f"{report.tasks} tasks in {where}"
    _progress(f"collated {report.rows} rows ({tasks}) of {what} into {out}")
    for output in report.outputs:
        print(output.path)
    return 0


def _collate_datasets(args: argparse.Namespace) -> int:
    """``collate --mode``: every dataset of the config that the mode takes, one file per type."""
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.config.loader import load_configs
    from gym_assets.tasks.catalog import Catalog
    from gym_assets.tasks.pipeline import collate_datasets

    workspace = workspace_of(args)
    paths = [Path(p) for p in args.config] or [workspace.configs]
    # the first config given is the root ``load_configs`` keeps products out of
    loaded = say_config_warnings(load_configs(*paths))
    catalog = Catalog(loaded, replace(workspace, configs=paths[0]))
    report = collate_datasets(catalog, args.mode, Path(args.out), **_options(args))
    types = ", ".join(sorted(report.metrics)) or "no type"
    return _reported(report, f"{len(report.datasets)} datasets ({types}, {args.mode})", args.out)


def register_listing(what: argparse._SubParsersAction) -> None:
    benchmarks = what.add_parser("benchmarks", help="list the benchmarks of the configs tree")
    benchmarks.add_argument("--json", action="store_true", help="print one JSON array")
    add_configs_flag(benchmarks)
    add_data_root_flag(benchmarks)
    benchmarks.set_defaults(handler=_list)


def register(subparsers: argparse._SubParsersAction) -> None:
    prepare = subparsers.add_parser("prepare", help="prepare (or check) a benchmark's rows")
    prepare.add_argument(
        "--benchmark", required=True, metavar=BENCHMARK_METAVAR, help=BENCHMARK_HELP
    )
    prepare.add_argument(
        "--use-cached", action="store_true", help="keep already prepared rows instead of redoing"
    )
    add_configs_flag(prepare)
    add_data_root_flag(prepare)
    prepare.set_defaults(handler=_prepare)

    collate = subparsers.add_parser(
        "collate",
        help="collate one benchmark into a taskset directory, or every dataset of a config",
    )
    what = collate.add_mutually_exclusive_group(required=True)
    what.add_argument("--benchmark", metavar=BENCHMARK_METAVAR, help=BENCHMARK_HELP)
    what.add_argument(
        "--mode",
        choices=COLLATION_MODES,
        help="collate every dataset this mode takes: train_preparation (train, validation, "
        "benchmark) or example_validation (example), one {type}.jsonl per type",
    )
    collate.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="PATH",
        help="with --mode: a config file or directory to merge (repeatable; default: --configs)",
    )
    collate.add_argument("--out", required=True, metavar="DIR", help="directory to write")
    collate.add_argument(
        "--validation",
        choices=VALIDATION_MODES,
        default="auto",
        help="task-data validation: off, warn, error, or auto (= warn for a benchmark and "
        "train_preparation, error for example_validation)",
    )
    collate.add_argument(
        "--overwrite-metrics-conflicts",
        action="store_true",
        help="accept changed dataset metrics and rewrite the metrics sidecar",
    )
    add_no_rebuild_flag(collate)
    add_configs_flag(collate)
    add_data_root_flag(collate)
    collate.set_defaults(handler=_collate, parser=collate)
