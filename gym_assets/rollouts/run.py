"""``run_rollouts``: collect one benchmark with one harness — the path the CLI and asset share.

    inventory ──► ledger (what is done) ──► gateway + environment servers ──► dispatch
        └──────────────────────── aggregate metrics (from the files) ◄─────────┘

A fresh run deletes the previous outputs of the directory and writes the inventory (one
materialized input per rollout) before dispatching anything. A resume reads that inventory
back (so repeats, limits and rollout ids stay those of the first run), skips what is done,
and appends. Either way the aggregate metrics are recomputed over everything on disk.

The directory is a product (``gym_assets.outputs``), locked for the whole run: it must be
missing, empty or a run gym-assets wrote, and a run (fresh or resumed) refuses to start while
anything a run does not write is anywhere in it. A resume refuses a damaged line in the run's
files, or moves the file aside with ``quarantine_corrupt``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sys
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gym_assets.config.model import (
    MODELS,
    ServerInstance,
    attributed_agent,
    bound_resources_server,
)
from gym_assets.config.model import server_instances as instances_of
from gym_assets.errors import OutputError, UserError, reported
from gym_assets.fileio import atomic_link, atomic_write_text, atomic_writer
from gym_assets.outputs.claims import State, claim_dir, claimed_dir, preflight_dir
from gym_assets.outputs.markers import CAPTURES, ROLLOUTS_INVENTORY, ROLLOUTS_RUN
from gym_assets.outputs.targets import Roots, Target
from gym_assets.plans.model import Plan, load_plan
from gym_assets.records.contracts import EnvironmentServer, ResourcesServer, Step
from gym_assets.redaction import Redactor
from gym_assets.rollouts.collection.corruption import corrupt, corrupted_keys
from gym_assets.rollouts.collection.dispatch import (
    AttemptFn,
    Attempts,
    Keeper,
    ScriptFor,
    dispatch,
)
from gym_assets.rollouts.collection.files import (
    AppendLog,
    CorruptRunFile,
    RunFiles,
    read_jsonl,
)
from gym_assets.rollouts.collection.gateway_process import GatewayProcess
from gym_assets.rollouts.collection.inputs import RolloutInput, materialize_inputs
from gym_assets.rollouts.collection.ledger import Key, Ledger, order_logs
from gym_assets.rollouts.collection.manifest import (
    Manifest,
    check_inventory,
    check_inventory_digest,
    check_rows,
    overrides_json,
    planned_keys,
    publish_inventory,
    read_manifest,
)
from gym_assets.rollouts.collection.metrics import RunTotals, summarize, summary_rows
from gym_assets.rollouts.collection.model_gateway import require_ready
from gym_assets.rollouts.collection.overrides import RunOverrides
from gym_assets.rollouts.collection.plan_gate import PlanGate
from gym_assets.rollouts.collection.planned import Planned
from gym_assets.rollouts.collection.progress import Progress
from gym_assets.rollouts.collection.verification import reference_task_data
from gym_assets.rollouts.collection.workers import run_in_workers, worker_count
from gym_assets.rollouts.episodes.legacy import LEGACY_RELAY
from gym_assets.rollouts.episodes.registry import build_environment, build_resources
from gym_assets.rollouts.gateway.bodies import BodyLimits
from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig
from gym_assets.rollouts.harnesses.adapters import adapter_named
from gym_assets.rollouts.harnesses.registry import Harness, resolve, with_harness
from gym_assets.rollouts.options import RunOptions
from gym_assets.sandbox import SandboxPolicy
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.fingerprint import benchmark_fingerprint
from gym_assets.tasks.pipeline import collated_path

if TYPE_CHECKING:
    from gym_assets.rollouts.analysis.publish import Analysis
    from gym_assets.rollouts.analysis.results import Model

DEFAULT_MODEL = ("policy", "policy_model")  # (model id, model server) when the config names none
# How long a shard waits for another to finish writing the partition's inventory (a million
# rollouts take about a minute to materialize here).
INVENTORY_WAIT_S = 30 * 60.0


@dataclass
class RunResult:
    """What a run did and where it left it."""

    files: RunFiles
    rollouts: int  # planned (the inventory; a shard's span of it)
    dispatched: int  # in this invocation
    seconds: float
    totals: RunTotals  # the metrics over every rollout
    metrics: list[dict[str, Any]]  # one entry per environment server
    analysis: Analysis  # statistics, comparison with the previous run, the report
    manifest: Manifest  # what the run is (a resume continues it with its own settings)
    model: Model  # the model it ran (name, upstream, base URL without credentials)
    drifted: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    harness: dict[str, str] = field(default_factory=dict)  # name, kind, interface, version

    @property
    def rollouts_per_second(self) -> float:
        return self.dispatched / self.seconds if self.seconds > 0 else 0.0


def _check_logs(files: RunFiles, quarantine: bool, notes: list[str]) -> None:
    """Read every file a resume relies on; a damaged one is refused, or moved aside."""
    for path in files.logs():
        try:
            for _ in read_jsonl(path):
                pass
        except CorruptRunFile as exc:
            if not quarantine:
                raise
            moved = files.quarantine(path)
            notes.append(
                f"{exc.path}:{exc.line}: damaged line; moved the file to {moved.name} (its "
                "rollouts run again)"
            )


def refuse_foreign(files: RunFiles, target: Target) -> None:
    """Refuse a run directory holding anything a run does not write (a run, or a merge of
    shards, replaces the run's own files there)."""
    foreign = files.foreign()
    if foreign is not None:
        raise OutputError(
            f"holds {foreign}, which a rollouts run does not write (a run, fresh or resumed, "
            "replaces its own files there and rebuilds report/ whole); move it out of the run "
            f"directory or {target.elsewhere_hint()}",
            path=files.out_dir,
        )


def check_run_dir(
    catalog: Catalog, benchmark_name: str, harness: Harness, out_dir: Path, options: RunOptions
) -> None:
    """Refuse an output directory a run may not use, and a resume of another run, before any
    product is made for it (``run_rollouts`` checks again under the directory's lock, and then
    also the plan)."""
    files = RunFiles(Path(out_dir))
    target = Target.of(files.out_dir, ROLLOUTS_RUN, catalog.workspace)
    if preflight_dir(target) is State.OURS:
        refuse_foreign(files, target)
        if options.resume and files.materialized_inputs.is_file():
            identity = _identity(catalog, catalog.get(benchmark_name), harness, None, options)
            _resumed(files, identity, options)


def _identity(
    catalog: Catalog,
    benchmark: Benchmark,
    harness: Harness,
    plan: Plan | None,
    options: RunOptions,
) -> dict[str, Any]:
    """What this invocation asks the run to be: the manifest's fields but the inventory's (and
    the plan's, before the plan is made)."""
    return {
        "benchmark": benchmark.name,
        "harness": harness.name,
        "taskset": benchmark.taskset,
        "plan_digest": None if plan is None else plan.pins_digest,
        "config_fingerprint": benchmark_fingerprint(catalog, benchmark),
        "repeats": options.repeats,
        "limit": options.limit,
        "overrides": overrides_json(options.overrides),
        "allow_plan_drift": options.allow_plan_drift,
    }


def _resumed(files: RunFiles, identity: dict[str, Any], options: RunOptions) -> Manifest:
    """The manifest of the run to continue, refused when the run is another one than asked
    (a setting left out takes the run's own) or its files are not the run's own any more."""
    manifest = read_manifest(files)
    asked = {
        **identity,
        "overrides": identity["overrides"] if options.overrides != RunOverrides() else None,
        "allow_plan_drift": True if options.allow_plan_drift else None,
    }
    manifest.refuse_other(files, asked)
    return manifest


@dataclass(frozen=True)
class _Planned:
    """What a run dispatches and analyses, and the inventory it comes from."""

    inputs: list[RolloutInput]  # the planned rollouts, or a shard's span of them
    source: RunFiles  # where the inventory is: the run's own, or the partition's (a shard)
    manifest: Manifest | None  # the inventory's; None: just made, published as the run starts
    resumed: bool = False

    @property
    def total(self) -> int:
        """Planned rollouts in the whole inventory."""
        return len(self.inputs) if self.manifest is None else self.manifest.rollouts

    def keys(self) -> Iterable[Key]:
        """The key of every planned rollout, the span's or not (streamed for a span)."""
        if len(self.inputs) == self.total:
            return (item.key for item in self.inputs)
        return planned_keys(self.source)


def _planned(
    files: RunFiles,
    benchmark: Benchmark,
    catalog: Catalog,
    options: RunOptions,
    identity: dict[str, Any],
    notes: list[str],
    inventory: RunFiles | None,
) -> _Planned:
    """The run's planned rollouts (a shard's span of them): read back on resume, read from
    ``inventory`` when given (a shard's partition, written once), else made here; reads only."""
    if options.resume and files.materialized_inputs.is_file():
        manifest = _resumed(files, identity, options)
        inputs = check_inventory(files, manifest, _span(options, manifest))
        check_rows(files, inputs)
        return _Planned(inputs, files, manifest, resumed=True)
    if options.resume:
        notes.append(f"nothing to resume in {files.out_dir} (no inventory); starting fresh")
    if inventory is not None:
        manifest = _same_run(inventory, identity)
        inputs = check_inventory(inventory, manifest, _span(options, manifest))
        return _Planned(inputs, inventory, manifest)
    return _Planned(_materialized(benchmark, catalog, options), files, None)


def _span(options: RunOptions, manifest: Manifest) -> range | None:
    return None if options.span is None else options.span(manifest.rollouts)


def _materialized(
    benchmark: Benchmark, catalog: Catalog, options: RunOptions
) -> list[RolloutInput]:
    """A fresh inventory of the benchmark's collated taskset."""
    taskset = collated_path(catalog.workspace.taskset_dir(benchmark.name), benchmark)
    if not taskset.is_file():
        raise UserError(
            f"benchmark '{benchmark.name}' has no collated taskset at {taskset}; run "
            f"`gym-assets collate --benchmark {benchmark.selector}` (or "
            "materialize collated_taskset)"
        )
    inputs = materialize_inputs(
        taskset,
        benchmark,
        catalog.loaded.data,
        repeats=options.repeats,
        limit=options.limit,
        overrides=options.overrides,
    )
    if options.overrides.changes_input and not options.allow_plan_drift:
        raise UserError(
            "run-level responses_create_params overrides and num_repeats_add_seed change each "
            f"task's input, which the plan of '{benchmark.name}' pins by digest; pass "
            "--allow-plan-drift to run them anyway"
        )
    return inputs


def _same_run(inventory: RunFiles, identity: dict[str, Any]) -> Manifest:
    """The manifest of a partition's inventory, refused unless it is the run asked."""
    manifest = read_manifest(inventory)
    if not manifest.describes(identity):
        raise _rewritten(inventory)
    return manifest


def _rewritten(inventory: RunFiles) -> UserError:
    return UserError(
        "was written again for other settings while this shard started; run the shard again",
        path=inventory.out_dir,
    )


def _publish(
    planned: _Planned, files: RunFiles, plan_path: Path, identity: dict[str, Any]
) -> Manifest:
    """The run's manifest once its inventory is in place: a resumed run's own; a fresh run's
    made here, or linked from the partition's (a shard: the same bytes, one copy on disk)."""
    if planned.resumed:
        assert planned.manifest is not None
        return planned.manifest
    if planned.manifest is None:
        return _publish_inventory(files, planned.inputs, plan_path, identity)
    files.clear()
    source = planned.source
    for name in ("plan", "manifest", "materialized_inputs"):  # the inventory last, as ever
        atomic_link(getattr(source, name), getattr(files, name))
    # What was linked is what the shard read, unless another shard made the partition's
    # inventory again for other settings in between.
    if read_manifest(files) != planned.manifest:
        raise _rewritten(source)
    try:
        check_inventory_digest(files, planned.manifest)
    except UserError:
        raise _rewritten(source) from None
    return planned.manifest


def prepare_inventory(
    catalog: Catalog,
    benchmark_name: str,
    harness: Harness,
    out_dir: Path,
    options: RunOptions | None = None,
    *,
    progress_stream: TextIO | None = None,
) -> RunFiles:
    """``out_dir`` holding the inventory, manifest and plan copy a run of these settings
    starts from, written unless it holds them already: the shards of a partition run from one,
    made once (``shards.py``), so no shard holds more than its span. Another process writing it
    is waited for (at most ``INVENTORY_WAIT_S``), saying so on ``progress_stream`` (stderr)."""
    options = options or RunOptions()
    benchmark = catalog.get(benchmark_name)
    plan_path = catalog.workspace.plan_path(benchmark.name)
    identity = _identity(catalog, benchmark, harness, load_plan(plan_path), options)
    files = RunFiles(Path(out_dir))
    target = Target.of(files.out_dir, ROLLOUTS_INVENTORY, catalog.workspace)

    def waiting(holder: str) -> None:
        stream = progress_stream if progress_stream is not None else sys.stderr
        print(f"waiting for {holder}, which is making the inventory in {out_dir}", file=stream)

    with claimed_dir(target, wait_s=INVENTORY_WAIT_S, waiting=waiting):
        refuse_foreign(files, target)
        if not _holds(files, identity):
            _publish_inventory(
                files, _materialized(benchmark, catalog, options), plan_path, identity
            )
    return files


def _holds(files: RunFiles, identity: dict[str, Any]) -> bool:
    """Whether ``files`` hold, intact, the inventory of the run ``identity`` asks for."""
    if not files.materialized_inputs.is_file():
        return False
    try:
        manifest = read_manifest(files)
        check_inventory_digest(files, manifest)
    except UserError:
        return False
    return manifest.describes(identity)


def _publish_inventory(
    files: RunFiles, inputs: list[RolloutInput], plan_path: Path, identity: dict[str, Any]
) -> Manifest:
    """A fresh run: replace the run's own files (only those) with a copy of the plan it is
    pinned to, the new inventory and the manifest that says what the run is."""
    files.clear()
    with (
        plan_path.open("rb") as plan,
        reported(files.plan),
        atomic_writer(files.plan, "wb") as copy,
    ):
        shutil.copyfileobj(plan, copy)
    return publish_inventory(files, inputs, identity)


def _model_names(config: Mapping[str, Any], agents: Sequence[str | None]) -> tuple[str, str]:
    """The model id and model server the benchmark's agents are configured to use."""
    instances = instances_of(config)
    for agent in agents:
        ref = instances[agent].config.get("model_server") if agent in instances else None
        name = ref.get("name") if isinstance(ref, Mapping) else None
        if name in instances and instances[name].kind == MODELS:
            return str(instances[name].config.get("model") or DEFAULT_MODEL[0]), name
    return DEFAULT_MODEL


def resources_by_server(
    config: Mapping[str, Any], servers: Sequence[str], sandbox: SandboxPolicy
) -> dict[str, ResourcesServer]:
    """The resources server each environment server's episodes use (servers using none are
    left out), built on their own: for reference scripts and for verification outside an
    episode. That is the one the server binds; a ``legacy_agent`` relay binding none runs
    episodes on its agent's own resources server."""
    instances = instances_of(config)
    return {
        server: build_resources(config, name, sandbox)
        for server in servers
        if server in instances
        if (name := _episode_resources(instances, server)) is not None
    }


def _episode_resources(instances: Mapping[str, ServerInstance], server: str) -> str | None:
    settings = instances[server].config
    bound = bound_resources_server(settings)
    agent = attributed_agent(settings)
    if bound is not None or instances[server].implementation != LEGACY_RELAY or agent is None:
        return bound
    return bound_resources_server(instances[agent].config) if agent in instances else None


def _reference_scripts(
    resources: Mapping[str, ResourcesServer],
    served: _Served,
    finish_command: str | None,
) -> ScriptFor:
    unbound = [server for server in served.servers if server not in resources]
    if unbound:  # refused before any rollout runs, not as each rollout's script is built
        raise UserError(
            f"environment server(s) {', '.join(unbound)} bind no resources server, so the "
            "reference model has no answers to script for their tasks; bind one "
            "(resources_server) or run them against another upstream (--upstream)"
        )

    def script_for(item: RolloutInput) -> list[Step]:
        steps = resources[item.server].reference_script(reference_task_data(item.task_input()))
        steps = corrupt(steps) if item.key in served.corrupted else list(steps)
        return finishing(steps, finish_command)

    return script_for


def finishing(steps: Sequence[Step], finish_command: str | None) -> list[Step]:
    """The script as a harness that ends its episode only through a shell command needs it
    played: each final answer (a text step making no call) also runs that command."""
    if finish_command is None:
        return list(steps)
    return [
        {**step, "tool": finish_command}
        if "text" in step and "call" not in step and "tool" not in step
        else step
        for step in steps
    ]


def _finish_command(harness: Harness) -> str | None:
    return adapter_named(harness.adapter).finish_command if harness.adapter else None


@dataclass(frozen=True)
class _Served:
    """What building a run's servers takes from its inventory: its environment servers, in
    the order the inventory first names them, and the rollouts the reference model answers
    wrongly (``corrupt_fraction``; chosen over the whole inventory). A worker is sent this,
    not the inventory: each rollout comes with its own command."""

    servers: tuple[str, ...]
    corrupted: frozenset[Key]

    @classmethod
    def of(cls, planned: _Planned, upstream: UpstreamConfig) -> _Served:
        servers = tuple(dict.fromkeys(item.server for item in planned.inputs))
        if upstream.mode != "reference":
            return cls(servers, frozenset())
        fraction, seed = upstream.corrupt_fraction, upstream.seed
        return cls(servers, corrupted_keys(planned.keys(), fraction, seed, total=planned.total))


@dataclass
class _Servers:
    """What a run dispatches to, built (and so validated) before the run writes anything."""

    gateway: GatewayProcess
    environments: dict[str, EnvironmentServer]
    agents: dict[str, str | None]
    verifiers: dict[str, ResourcesServer]
    script_for: ScriptFor | None


def _build_servers(
    catalog: Catalog,
    harness: Harness,
    upstream: UpstreamConfig,
    options: RunOptions,
    files: RunFiles,
    served: _Served,
    notes: list[str],
    sandbox: SandboxPolicy,
) -> _Servers:
    """The gateway (not started) and the environment servers running ``harness``: a bad
    server setting, or no sandbox for model-written code, is refused here."""
    servers = list(served.servers)
    config, unchanged = with_harness(catalog.loaded.data, harness, servers)
    notes += [
        f"environment server '{server}' credits no single agent, so harness '{harness.name}' "
        "does not replace its agents; they run as configured"
        for server in unchanged
    ]
    instances = instances_of(config)
    agents = {s: attributed_agent(instances[s].config) if s in instances else None for s in servers}
    model_name, model_server = _model_names(config, list(agents.values()))
    gateway = GatewayProcess(
        upstream,
        files.capture_dir,
        model_name=model_name,
        model_server_name=model_server,
        script=options.script,
        limits=BodyLimits(options.max_request_bytes, options.max_answer_bytes),
    )
    verifiers = resources_by_server(config, servers, sandbox)
    return _Servers(
        gateway=gateway,
        environments={s: build_environment(config, s, gateway, sandbox) for s in servers},
        agents=agents,
        verifiers=verifiers,
        script_for=(
            _reference_scripts(verifiers, served, _finish_command(harness))
            if upstream.mode == "reference"
            else None
        ),
    )


def _attempts(servers: _Servers, options: RunOptions, gate: PlanGate | None) -> Attempts:
    return Attempts(
        servers=servers.environments,
        agents=servers.agents,
        gateway=servers.gateway,
        gate=gate,
        verifiers=servers.verifiers,
        script_for=servers.script_for,
        timeout_s=options.timeout_s,
    )


@dataclass(frozen=True)
class _WorkerSide:
    """What a worker process builds its servers from (``workers.WorkerSetup``), pickled to
    it: the run's own catalog, harness and settings, so each worker runs what the run's
    process has already built and checked. The plan gate stays with the run's process."""

    catalog: Catalog
    harness: Harness
    upstream: UpstreamConfig
    options: RunOptions
    files: RunFiles
    served: _Served

    @contextlib.asynccontextmanager
    async def attempts(self) -> AsyncIterator[AttemptFn]:
        with SandboxPolicy(allow_unsandboxed=self.options.allow_unsandboxed) as sandbox:
            servers = _build_servers(
                self.catalog,
                self.harness,
                self.upstream,
                self.options,
                self.files,
                self.served,
                [],
                sandbox,
            )
            async with servers.gateway:
                yield _attempts(servers, self.options, None).attempt


async def _in_workers(
    attempts: Attempts,
    keeper: Keeper,
    setup: _WorkerSide,
    todo: list[tuple[RolloutInput, int]],
    workers: int,
) -> None:
    """The plan gate here (its drift report is the run's), every other rollout on workers."""
    sent = []
    for item, attempt in todo:
        refused = attempts.refused(item, attempt)
        if refused is None:
            sent.append((item, attempt))
        else:
            keeper.keep(refused)
    await run_in_workers(
        sent,
        setup,
        workers=workers,
        concurrency=setup.options.concurrency,
        keep=keeper.keep,
        lost=attempts.lost_row,
    )


def _dispatch(
    servers: _Servers,
    setup: _WorkerSide,
    todo: list[tuple[RolloutInput, int]],
    ledger: Ledger,
    gate: PlanGate,
    progress_stream: TextIO | None,
    redactor: Redactor,
) -> None:
    """Run ``todo`` and keep each attempt's rows: in this process on one event loop, with the
    gateway started for it (Ctrl-C cancels the dispatch, and the gateway still stops cleanly),
    or on worker processes (``workers.py``). Rows reach their files through ``redactor`` (the
    reports are made from those files); this process is their only writer either way."""
    options, files = setup.options, setup.files
    progress = Progress(len(todo), progress_stream)
    records, failures = AppendLog(files.records, redactor), AppendLog(files.failures, redactor)
    keeper = Keeper(ledger=ledger, records=records, failures=failures, progress=progress)
    attempts = _attempts(servers, options, gate)
    workers = worker_count(options.workers, options.concurrency, len(todo))

    async def serve_and_dispatch() -> None:
        async with servers.gateway:
            await dispatch(attempts.attempt, todo, options.concurrency, keeper.keep)

    try:
        if workers > 1:
            asyncio.run(_in_workers(attempts, keeper, setup, todo, workers))
        else:
            asyncio.run(serve_and_dispatch())
    finally:
        for log in (records, failures):
            with contextlib.suppress(OSError):
                log.close()
        progress.finish()


def run_rollouts(
    catalog: Catalog,
    benchmark_name: str,
    harness: Harness,
    out_dir: Path,
    upstream: UpstreamConfig,
    options: RunOptions | None = None,
    *,
    progress_stream: TextIO | None = None,
    inventory: RunFiles | None = None,
) -> RunResult:
    """Collect ``benchmark_name`` with ``harness`` into ``out_dir`` (see the module docstring).

    The benchmark's collated taskset and plan must exist (``data_root/tasksets``,
    ``data_root/plans``); refusals are ``UserError``s and leave ``out_dir`` untouched.
    ``inventory``: a fresh run starts from this one (``prepare_inventory``), linked into
    ``out_dir``, rather than making its own.
    """
    options = options or RunOptions()
    if options.concurrency < 1:
        raise UserError(f"concurrency must be at least 1, got {options.concurrency}")
    if options.workers is not None and options.workers < 1:
        raise UserError(f"workers must be at least 1, got {options.workers}")
    if options.timeout_s is not None and options.timeout_s <= 0:
        raise UserError(f"timeout must be positive, got {options.timeout_s}")
    require_ready(upstream, options.script)
    sandbox = SandboxPolicy(allow_unsandboxed=options.allow_unsandboxed)
    resolved = resolve(harness, sandbox)
    benchmark = catalog.get(benchmark_name)
    plan_path = catalog.workspace.plan_path(benchmark.name)
    plan = load_plan(plan_path)
    identity = _identity(catalog, benchmark, harness, plan, options)
    files = RunFiles(Path(out_dir))
    target = Target.of(files.out_dir, ROLLOUTS_RUN, catalog.workspace)
    notes: list[str] = []
    with claimed_dir(target), sandbox:
        refuse_foreign(files, target)
        if options.resume:
            _check_logs(files, options.quarantine_corrupt, notes)
        planned = _planned(files, benchmark, catalog, options, identity, notes, inventory)
        served = _Served.of(planned, upstream)
        servers = _build_servers(catalog, harness, upstream, options, files, served, notes, sandbox)
        manifest = _publish(planned, files, plan_path, identity)
        claim_dir(Target.of(files.capture_dir, CAPTURES, catalog.workspace))
        ledger = Ledger.read(files, options.max_attempts)
        # A shard's own rollouts: what it dispatches and what its metrics and report cover
        # (a shard of a huge partition pays for its span, not the partition; the merge
        # analyses the whole run).
        own = Planned.of(planned.inputs)
        todo = ledger.pending(planned.inputs)
        # The inventory's rows are what the dispatch sends; the end of the run reads the
        # view, so they are let go before it (the largest thing a long run holds).
        del planned
        dispatched = len(todo)
        gate = PlanGate(plan, allow_drift=manifest.allow_plan_drift)
        started = time.monotonic()
        if todo:
            setup = _WorkerSide(catalog, harness, upstream, options, files, served)
            redactor = upstream.redactor()
            _dispatch(servers, setup, todo, ledger, gate, progress_stream, redactor)
            order_logs(files)
        del todo
        seconds = time.monotonic() - started
        from gym_assets.rollouts.analysis.results import Model

        model = Model.of(servers.gateway.model_name, upstream.mode, upstream.base_url)
        result = publish_results(
            files, own, manifest, catalog.workspace, notes, model=model, seconds=seconds
        )
    return replace(
        result,
        dispatched=dispatched,
        seconds=seconds,
        drifted=gate.drifted(),
        harness=resolved.metadata(),
    )


def publish_results(
    files: RunFiles,
    planned: Planned,
    manifest: Manifest,
    roots: Roots,
    notes: list[str],
    *,
    model: Model,
    seconds: float,
) -> RunResult:
    """The run's aggregate metrics, statistics, snapshot, report and result (for the
    scoreboard: ``model`` ran it in ``seconds``), made from its files (a run ends with these,
    and so does a merge of shards); ``notes`` gain the analysis's. The result dispatched
    nothing; its caller says what it did."""
    done = summary_rows(read_jsonl(files.records))
    failed = summary_rows(read_jsonl(files.failures))
    totals = summarize((rollout.key for rollout in planned.rollouts), done, failed)
    # Imported here: pandas and matplotlib cost a second, which loading the Dagster
    # definitions or a command that runs nothing should not pay.
    from gym_assets.rollouts.analysis.publish import aggregate_entries, analyse
    from gym_assets.rollouts.analysis.results import run_result, write_result

    finished_at = datetime.now(UTC)
    analysis = analyse(
        files,
        planned,
        done,
        failed,
        benchmark=manifest.benchmark,
        harness=manifest.harness,
        totals=totals,
        roots=roots,
        now=finished_at,
    )
    metrics = aggregate_entries(planned, done, failed, analysis.table)
    atomic_write_text(
        files.aggregate_metrics, json.dumps(metrics, indent=2, ensure_ascii=False) + "\n"
    )
    result = run_result(
        benchmark=manifest.benchmark,
        harness=manifest.harness,
        model=model,
        outcomes=totals.outcomes,
        statistics=analysis.statistics,
        seconds=seconds,
        plan_digest=manifest.plan_digest,
        finished_at=finished_at,
    )
    write_result(files.result, result)
    return RunResult(
        files=files,
        rollouts=len(planned.rollouts),
        dispatched=0,
        seconds=0.0,
        totals=totals,
        metrics=metrics,
        analysis=analysis,
        manifest=manifest,
        model=model,
        notes=[*notes, *analysis.notes],
    )
