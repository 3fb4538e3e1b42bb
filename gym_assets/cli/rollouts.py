"""``gym-assets rollouts``: collect one benchmark with one harness through the model gateway,
re-score a finished run with the current verifiers, or compare two runs.

    gym-assets rollouts --benchmark B --harness H --out DIR
        [--upstream reference|scripted|openai] [--base-url URL --api-key-env VAR] [--model NAME]
        [--upstream-api auto|responses|chat]
        [--script FILE] [--repeats N] [--concurrency C] [--workers N] [--limit N] [--timeout S]
        [--resume [--quarantine-corrupt]] [--allow-plan-drift] [--corrupt-fraction F --seed S]
        [--max-unmeasured-share F] [--no-rebuild]
        [--override +responses_create_params.FIELD=V | num_repeats_add_seed=true | skills=DIR]
        [--shard I/N]
    gym-assets rollouts merge --benchmark B --harness H --shards DIR --out DIR
    gym-assets rollouts reverify --run DIR [--out DIR] [--concurrency C]
    gym-assets rollouts compare RUN_A RUN_B [--json]

With ``--shard I/N`` the run is shard I of N (``gym_assets.rollouts.shards``), written to
``<out>/I-of-N`` from the partition's inventory in ``<out>/inventory`` (made by the first
shard); ``rollouts merge`` merges the N finished shards into one run.

Missing or stale products (prepared rows, collated taskset, plan) are made first (a rebuild
is said on stderr; ``--no-rebuild`` refuses a stale one instead). Exit 0 when the run
finished, 1 on a refusal (or when no dispatched rollout produced a result, or more than
--max-unmeasured-share of the planned rollouts went unmeasured), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict
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
from gym_assets.display import shown
from gym_assets.errors import UserError
from gym_assets.limits import (
    DEFAULT_CONCURRENCY,
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_REPEATS,
)
from gym_assets.modes import UPSTREAM_APIS, UPSTREAM_MODES
from gym_assets.rollouts.options import OPTIONS

if TYPE_CHECKING:
    from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig
    from gym_assets.rollouts.harnesses.registry import Harness
    from gym_assets.rollouts.options import RunOptions
    from gym_assets.rollouts.reverify import ReverifyResult
    from gym_assets.rollouts.run import RunResult
    from gym_assets.rollouts.shards import Shard
    from gym_assets.tasks.catalog import Catalog

RUN_FLAGS = ("--benchmark", "--harness", "--out")  # required unless a subcommand is given
KEPT_REASONS = {  # reverify's reasons for keeping a record as it was
    "scored_by_failure": "a model call failed for good (masked), or the model's output failed "
    "the rollout (0)",
    "grades_session_state": "the verifier grades what the episode did in its session",
}
KIND_HINTS = {  # what to look at when rollouts failed with a kind; {option} is the run's value
    "agent_request_failed": "the model endpoint failed calls the agents could not get past (a "
    "refused request, errors that outlasted the retries, or no answer in time)",
    "agent_answer_too_large": "the model endpoint answered more than --max-answer-bytes "
    "({max_answer_bytes:,}) allows: raise it if its answers are that long, else check the "
    "endpoint",
    "agent_request_too_large": "agent_request_too_large rollouts scored 0 as the model's doing: "
    "their conversations grew past --max-request-bytes ({max_request_bytes:,}); raise it if "
    "the benchmark's conversations are that long",
}


def _count(maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to ``maximum`` (see ``gym_assets.limits``)."""

    def parse(value: str) -> int:
        number = int(value)
        if number < 1:
            raise argparse.ArgumentTypeError(
                f"must be at least 1, got {number}; leave the flag out for the default"
            )
        if maximum is not None and number > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {number}")
        return number

    parse.__name__ = "integer"  # argparse names the type in "invalid integer value"
    return parse


def _positive_float(value: str) -> float:
    number = float(value)
    if not 0 < number < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {value}")
    return number


def _fraction(value: str) -> float:
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value}")
    return number


def _shard(value: str) -> Shard:
    from gym_assets.rollouts.shards import Shard

    try:
        return Shard.parse(value)
    except UserError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _say(message: str) -> None:
    print(shown(message), file=sys.stderr, flush=True)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _summary(result: RunResult) -> None:
    totals = result.totals
    outcomes = asdict(totals.outcomes)
    headers = ["rollouts", *outcomes, "reward mean", "pass@1"]
    row = [str(result.rollouts), *(str(count) for count in outcomes.values())]
    row += [_number(totals.reward_mean), _number(totals.pass_at_1)]
    widths = [max(len(h), len(c)) for h, c in zip(headers, row, strict=True)]
    for cells in (headers, row):
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    print(shown(totals.headline))
    for label, kinds in (
        ("failures by kind", totals.failure_kinds),
        ("masked by kind  ", totals.masked_kinds),
        ("0 by model fault", totals.model_failure_kinds),
    ):
        if kinds:
            listed = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
            print(shown(f"{label}: {listed}"))
    analysis = result.analysis
    print()
    for line in analysis.statistics.lines():
        print(shown(line))
    if analysis.comparison is None:
        print("compared with the previous run: no previous run to compare")
    else:
        delta = analysis.comparison
        print(
            f"compared with the previous run: reward {delta.reward_delta.describe()}; "
            f"flipped pass → fail {delta.flipped_to_fail.count}, fail → pass "
            f"{delta.flipped_to_pass.count}, inputs changed {delta.inputs_changed.count}"
        )
    files = result.files
    print()
    harness = result.harness
    print(
        shown(
            f"harness            : {harness['harness']} ({harness['kind']}, interface "
            f"{harness['interface']}, runtime {harness['runtime_version']})"
        )
    )
    print(f"records            : {files.records}")
    print(f"failures           : {files.failures}")
    print(f"materialized inputs: {files.materialized_inputs}")
    print(f"aggregate metrics  : {files.aggregate_metrics}")
    print(f"result             : {files.result}")
    print(f"model-call captures: {files.capture_dir}/")
    print(f"report             : {analysis.report}")


def _rollouts(args: argparse.Namespace) -> int:
    from gym_assets.plans.products import ensure_products
    from gym_assets.rollouts.collection.model_gateway import load_script
    from gym_assets.rollouts.collection.overrides import parse_overrides
    from gym_assets.rollouts.gateway.upstream_config import upstream_config
    from gym_assets.rollouts.harnesses.registry import (
        get_harness,
        load_harnesses,
        require_installed,
    )
    from gym_assets.rollouts.options import RunOptions
    from gym_assets.rollouts.run import check_run_dir, run_rollouts

    parser: argparse.ArgumentParser = args.rollouts_parser
    missing = [flag for flag in RUN_FLAGS if getattr(args, flag[2:]) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")
    try:
        upstream = upstream_config(
            mode=args.upstream,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            model=args.model,
            api=args.upstream_api,
            corrupt_fraction=args.corrupt_fraction,
            seed=args.seed,
            latency_s=args.upstream_latency,
            latency_spread=args.upstream_latency_spread,
        )
    except UserError as exc:
        parser.error(exc.message)
    if args.quarantine_corrupt and not args.resume:
        parser.error("--quarantine-corrupt goes with --resume (a fresh run reads no old files)")
    if (args.upstream == "scripted") != (args.script is not None):
        parser.error("--script FILE goes with --upstream scripted (and is required by it)")
    overrides = parse_overrides(args.override or [])
    script = None if args.script is None else load_script(args.script)  # before products
    selection = select(args, args.benchmark)
    catalog, benchmark = selection.catalog, selection.one()
    harness = get_harness(load_harnesses(catalog.loaded), args.harness)
    require_installed(harness)  # before any product is made for the run
    options = RunOptions.of(args, script=script, overrides=overrides)
    out = Path(args.out) if args.shard is None else Path(args.out) / args.shard.name
    check_run_dir(catalog, benchmark.name, harness, out, options)
    if benchmark.dataset.taskset is not None:  # its rows are converted: refuse before products
        overrides.refuse_materialized(catalog.loaded.file_of(benchmark.instance))
    ensure_products(catalog, benchmark.name, _say, refuse=refused_by(args))
    if args.shard is not None:
        return _run_shard(args, catalog, benchmark.name, harness, upstream, options)
    result = run_rollouts(catalog, benchmark.name, harness, out, upstream, options)
    return _finished(result, benchmark.taskset, args)


def _run_shard(
    args: argparse.Namespace,
    catalog: Catalog,
    benchmark: str,
    harness: Harness,
    upstream: UpstreamConfig,
    options: RunOptions,
) -> int:
    """Shard I of N into ``--out``/I-of-N. What it measured is judged when the shards are
    merged: a shard alone leaves the rest of the run unmeasured."""
    from gym_assets.rollouts.shards import run_shard

    shard = args.shard
    run = run_shard(catalog, benchmark, harness, Path(args.out), shard, upstream, options)
    for note in run.notes:
        _say(f"note: {note}")
    print(
        f"shard {shard}: {run.rollouts} rollouts, {run.dispatched} dispatched in "
        f"{run.seconds:.1f}s -> {run.directory}"
    )
    print(
        f"once all {shard.count} shards have finished: gym-assets rollouts merge --benchmark "
        f"{benchmark} --harness {harness.name} --shards {args.out} --out RUN"
    )
    return 0


def _finished(result: RunResult, taskset: str, args: argparse.Namespace) -> int:
    """Report a run (or a merge of shards), and refuse one that measured too little."""
    from gym_assets.rollouts.collection.checks import unmeasured_share

    for note in result.notes:
        _say(f"note: {note}")
    if result.drifted:
        allowed = result.manifest.allow_plan_drift
        verb = "dispatched anyway (--allow-plan-drift)" if allowed else "refused"
        _say(f"{len(result.drifted)} tasks differ from the plan; {verb}")
    _summary(result)
    for hint in _hints(result.totals.model_failure_kinds, args):  # measured: never over budget
        _say(f"note: {hint}")
    if result.dispatched and not result.totals.outcomes.produced:
        hints = "".join(f"; {hint}" for hint in _hints(result.totals.failure_kinds, args))
        raise UserError(
            f"none of the {result.dispatched} dispatched rollouts produced a result{hints}; see "
            f"{result.files.failures}"
        )
    budget = unmeasured_share(result.files, taskset, args.max_unmeasured_share)
    if not budget.passed:
        kinds = budget.metadata["unmeasured_kinds"]
        raise UserError(_over_budget(budget.description, result, _hints(kinds, args)))
    return 0


def _over_budget(description: str, result: RunResult, hints: list[str]) -> str:
    """Why a run past its budget of unmeasured rollouts fails, worded for what cost them."""
    cause = "; ".join(hints) or "a mean that leaves them out does not measure the benchmark"
    return (
        f"{description}; {cause}: see failure_kind and failure_reason in {result.files.records} "
        f"and {result.files.failures}"
    )


def _hints(kinds: Mapping[str, int], args: argparse.Namespace) -> list[str]:
    """What to look at for each kind of failure in ``kinds`` that has a hint (``KIND_HINTS``),
    with the run's own limits filled in."""
    return [KIND_HINTS[kind].format_map(vars(args)) for kind in kinds if kind in KIND_HINTS]


def _merge(args: argparse.Namespace) -> int:
    from gym_assets.rollouts.harnesses.registry import get_harness, load_harnesses
    from gym_assets.rollouts.options import RunOptions
    from gym_assets.rollouts.shards import merge_shards

    selection = select(args, args.benchmark)
    catalog, benchmark = selection.catalog, selection.one()
    harness = get_harness(load_harnesses(catalog.loaded), args.harness)
    options = RunOptions.of(args)
    result = merge_shards(catalog, benchmark.name, harness, args.shards, args.out, options)
    return _finished(result, benchmark.taskset, args)


def _reverify(args: argparse.Namespace) -> int:
    from gym_assets.cli.config_warnings import say_config_warnings
    from gym_assets.rollouts.reverify import reverify_run
    from gym_assets.tasks.catalog import load_catalog

    catalog = load_catalog(workspace_of(args))
    say_config_warnings(catalog.loaded)
    result = reverify_run(
        catalog,
        args.run,
        args.out,
        allow_unsandboxed=args.allow_unsandboxed,
        concurrency=args.concurrency,
    )
    _reverify_summary(result)
    return 0


def _reverify_summary(result: ReverifyResult) -> None:
    from gym_assets.rollouts.reverify import describe_change

    print(
        f"re-scored {result.rescored} of {result.records} records with the current verifiers; "
        f"{result.changed} rewards changed in {result.tasks_changed} tasks "
        f"({result.seconds:.1f}s)"
    )
    for reason, count in result.kept.items():
        print(shown(f"kept as they were: {count} ({KEPT_REASONS.get(reason, reason)})"))
    for name, before, after in (
        ("reward mean", result.before.reward_mean, result.after.reward_mean),
        ("pass@1", result.before.pass_at_1, result.after.pass_at_1),
    ):
        print(f"{name:<11}: {_number(before)} -> {_number(after)}")
    for change in result.shown:
        print(f"  {shown(describe_change(change))}")
    if result.changed > len(result.shown):
        print(f"  ... {result.changed - len(result.shown)} more in the diff")
    print()
    print(f"records: {result.out_dir / 'rollouts.jsonl'}")
    print(f"diff   : {result.diff_path}")
    print(f"summary: {result.summary_path}")


def _compare(args: argparse.Namespace) -> int:
    import json

    from gym_assets.rollouts.analysis.compare import compare_runs
    from gym_assets.rollouts.collection.manifest import read_run

    comparison = compare_runs(
        read_run(args.run_a),
        read_run(args.run_b),
        allow_different_benchmarks=args.allow_different_benchmarks,
    )
    if args.json:
        document = {"a": str(args.run_a), "b": str(args.run_b), **comparison.to_json()}
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    print(f"A: {args.run_a}")
    print(f"B: {args.run_b}")
    for line in comparison.lines():
        print(shown(line))
    return 0


def _add_option(parser: argparse.ArgumentParser, name: str, **how: Any) -> None:
    """The flag of a run option: its name, default and help are the option's own (``OPTIONS``);
    the parsed value lands under the option's name, where ``RunOptions.of`` reads it."""
    option = OPTIONS[name]
    parser.add_argument(option.flag, dest=name, default=option.default, help=option.help, **how)


def _register_compare(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare",
        help="compare two runs task by task (paired difference, flips, changed inputs)",
        description="Pair the tasks of two runs by task index and input digest; print the "
        "paired difference of mean reward (B − A) with its seeded 95% bootstrap interval, "
        "the tasks that flipped pass → fail and fail → pass, tasks whose input changed (not "
        "comparable) and tasks only in one run. A task passes when at least half its measured "
        "rollouts pass. Both runs are checked first against their manifests (inventory "
        "unchanged, one record per rollout) and must be runs of one benchmark. Exit 0 whatever "
        "the difference; 1 when a directory is not a run, a run's files fail the checks, or the "
        "benchmarks differ.",
    )
    compare.add_argument("run_a", type=Path, metavar="RUN_A", help="a run's --out (before)")
    compare.add_argument("run_b", type=Path, metavar="RUN_B", help="a run's --out (after)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--allow-different-benchmarks",
        action="store_true",
        help="compare runs of two benchmarks anyway (tasks still pair by index and digest)",
    )
    compare.set_defaults(handler=_compare)


def _register_merge(commands: argparse._SubParsersAction) -> None:
    merge = commands.add_parser(
        "merge",
        help="merge the finished shards of a run (--shard I/N) into one run",
        description="Check the shards under --shards (every I-of-N present and finished, all "
        "of one run of this benchmark and harness, each row in its own shard's span) and write "
        "the run into --out as one process would: the same inventory, manifest and plan copy, "
        "every shard's records and failures, their captures, metrics and report. Exit 0 when "
        "merged, 1 when a shard is refused or the run measured too little.",
    )
    merge.add_argument("--benchmark", required=True, metavar=BENCHMARK_METAVAR)
    merge.add_argument("--harness", required=True, metavar="NAME")
    merge.add_argument(
        "--shards", required=True, type=Path, metavar="DIR", help="the shards' --out"
    )
    merge.add_argument("--out", required=True, type=Path, metavar="DIR", help="the merged run")
    _add_option(merge, "max_attempts", type=_count(MAX_ATTEMPTS), metavar="N")
    _add_option(merge, "max_unmeasured_share", type=_fraction, metavar="F")
    _add_option(merge, "allow_unsandboxed", action="store_true")
    _add_option(merge, "max_request_bytes", type=_count(), metavar="N")
    _add_option(merge, "max_answer_bytes", type=_count(), metavar="N")
    add_configs_flag(merge)
    add_data_root_flag(merge)
    merge.set_defaults(handler=_merge)


def _register_reverify(commands: argparse._SubParsersAction) -> None:
    reverify = commands.add_parser(
        "reverify",
        help="re-score a finished run with the current verifiers (no model is called)",
        description="Verify every record of a finished run again, with the current verifiers "
        "and the run's own task inputs; write the new records, a reward diff against the "
        "original and a summary into --out (default <run>-reverified beside it). The run "
        "itself is never written.",
    )
    reverify.add_argument("--run", required=True, type=Path, metavar="DIR", help="a run's --out")
    reverify.add_argument("--out", type=Path, metavar="DIR", help="default: <run>-reverified")
    reverify.add_argument(
        "--concurrency",
        type=_count(MAX_CONCURRENCY),
        default=DEFAULT_CONCURRENCY,
        metavar="C",
        help="verifications at once",
    )
    _add_option(reverify, "allow_unsandboxed", action="store_true")
    add_configs_flag(reverify)
    add_data_root_flag(reverify)
    reverify.set_defaults(handler=_reverify)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rollouts",
        help="run a benchmark's tasks with a harness and collect records",
        description="Run every planned task of a benchmark through its environment server "
        "with the given harness; write records, a failure sidecar, the materialized inputs "
        "and aggregate metrics into --out. `rollouts reverify` re-scores a finished run.",
    )
    parser.add_argument(
        "--benchmark", metavar=BENCHMARK_METAVAR, help=f"required to run: {BENCHMARK_HELP}"
    )
    parser.add_argument("--harness", metavar="NAME", help="required to run; see configs harnesses:")
    parser.add_argument("--out", metavar="DIR", help="required to run: where the run's files go")
    parser.add_argument("--upstream", choices=UPSTREAM_MODES, default="reference")
    parser.add_argument("--base-url", metavar="URL", help="openai upstream: the server's /v1 URL")
    parser.add_argument(
        "--api-key-env", metavar="VAR", help="openai upstream: the variable holding the API key"
    )
    parser.add_argument("--model", metavar="NAME", help="model id to request (default: config)")
    parser.add_argument(
        "--upstream-api",
        choices=UPSTREAM_APIS,
        default="auto",
        help="openai upstream: the API the server speaks; calls in the other are translated "
        "(auto: ask the server once at start)",
    )
    parser.add_argument("--script", type=Path, metavar="FILE", help="scripted upstream: steps")
    _add_option(parser, "repeats", type=_count(MAX_REPEATS), metavar="N")
    _add_option(parser, "concurrency", type=_count(MAX_CONCURRENCY), metavar="C")
    _add_option(parser, "workers", type=_count(), metavar="N")
    _add_option(parser, "limit", type=_count(), metavar="N")
    _add_option(parser, "timeout_s", type=_positive_float, metavar="S")
    _add_option(parser, "max_attempts", type=_count(MAX_ATTEMPTS), metavar="N")
    parser.add_argument(
        "--override",
        action="append",
        metavar="KEY=VALUE",
        help="run-level override, repeatable: +responses_create_params.<field>=VALUE, "
        "num_repeats_add_seed=true or skills=DIR (a directory of Agent Skills). Flat rows only: "
        "refused for a benchmark of converted (materialized) rows, whose task input is the task "
        "as planned; the first two change a flat row's input, so they need --allow-plan-drift",
    )
    _add_option(parser, "resume", action="store_true")
    _add_option(parser, "quarantine_corrupt", action="store_true")
    _add_option(parser, "allow_plan_drift", action="store_true")
    _add_option(parser, "max_unmeasured_share", type=_fraction, metavar="F")
    _add_option(parser, "allow_unsandboxed", action="store_true")
    _add_option(parser, "max_request_bytes", type=_count(), metavar="N")
    _add_option(parser, "max_answer_bytes", type=_count(), metavar="N")
    parser.add_argument("--corrupt-fraction", type=_fraction, default=0.0, metavar="F")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument(
        "--upstream-latency",
        type=float,
        default=0.0,
        metavar="S",
        help="offline upstreams: seconds each answer takes (tests, benches)",
    )
    parser.add_argument(
        "--upstream-latency-spread",
        type=_fraction,
        default=0.0,
        metavar="F",
        help="draw each answer's latency uniformly from S × (1 ± F), as a real model's vary",
    )
    parser.add_argument(
        "--shard",
        type=_shard,
        metavar="I/N",
        help="run only shard I of N of the planned rollouts, into --out/I-of-N (with --resume: "
        "a finished shard is not run again); `rollouts merge` joins the N shards",
    )
    add_no_rebuild_flag(parser)
    add_configs_flag(parser)
    add_data_root_flag(parser)
    parser.set_defaults(handler=_rollouts, rollouts_parser=parser)
    commands = parser.add_subparsers(dest="rollouts_command", metavar="SUBCOMMAND")
    _register_merge(commands)
    _register_reverify(commands)
    _register_compare(commands)
