"""Keep a benchmark's products (prepared rows, collated taskset, plan) matching their inputs.

A product is built when it is missing and rebuilt when what it was built from changed since
(``gym_assets.tasks.fingerprint``): an edited row, config or prepare script, a new code
version, or another configs root, so products of two configs trees never mix under one data
root. Each rebuild is said in one line; when a flag forbids rebuilding (``refuse``), a stale
product is refused instead, in one line naming what changed and the flag. The check reads
one small record per product and digests each file involved once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from gym_assets.errors import UserError
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.publish import publish_plan
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.fingerprint import LABELS, Inputs, InputsOf, stale_reason
from gym_assets.tasks.pipeline import collate_benchmark, collated_path
from gym_assets.tasks.prepare import PreparedRows, prepare_benchmark

Say = Callable[[str], None]
T = TypeVar("T")


@dataclass(frozen=True)
class _Product(Generic[T]):
    inputs: Inputs  # what it must be built from now
    path: Path  # its file: missing means never built
    directory: Path  # where its record says what it was built from
    building: str  # what is said when it is built for the first time
    build: Callable[[], T]


def _ensure(benchmark: Benchmark, product: _Product[T], say: Say, refuse: str | None) -> T | None:
    """Build the product when it is missing, rebuild it (saying why) when its record no longer
    matches its inputs, or refuse that, naming the flag ``refuse``; the build's result, or None
    when the product was current."""
    if not product.path.is_file():
        say(product.building)
        return product.build()
    reason = stale_reason(product.directory, product.inputs)
    if reason is None:
        return None
    label = LABELS[product.inputs.product]
    if refuse is not None:
        raise UserError(
            f"{benchmark.name}: stale {label} in {product.directory} ({reason}); run without "
            f"{refuse} to rebuild"
        )
    built = product.build()
    say(f"{benchmark.name}: {label} rebuilt: {reason}")
    return built


def ensure_prepared(
    catalog: Catalog,
    benchmark: Benchmark,
    say: Say,
    *,
    refuse: str | None = None,
    prepare: bool = True,
) -> PreparedRows | None:
    """Run the benchmark's prepare script when its rows are missing or stale (bundled rows are
    not a product); what it prepared, or None. A stale product is refused, naming it, when the
    flag ``refuse`` is given; without ``prepare`` missing rows are refused with the command
    that prepares them."""
    directory = benchmark.prepared_dir
    if directory is None:
        return None
    if not prepare:
        benchmark.require_rows()
    inputs = InputsOf(catalog, benchmark).product("prepared")
    product = _Product(
        inputs,
        benchmark.rows_path,
        directory,
        f"preparing {benchmark.name} first ...",
        lambda: prepare_benchmark(benchmark, inputs=inputs),
    )
    return _ensure(benchmark, product, say, refuse)


def ensure_products(catalog: Catalog, name: str, say: Say, *, refuse: str | None = None) -> None:
    """Prepare, collate and plan ``name`` where those products are missing or stale."""
    benchmark = catalog.get(name)
    workspace = catalog.workspace
    ensure_prepared(catalog, benchmark, say, refuse=refuse)
    now = InputsOf(catalog, benchmark)  # after preparing: the rows may be new
    taskset_dir, taskset = workspace.taskset_dir(name), now.product("taskset")
    plan_path, plan = workspace.plan_path(name), now.product("plan")
    collated = _Product(
        taskset,
        collated_path(taskset_dir, benchmark),
        taskset_dir,
        f"collating {name} into {taskset_dir} ...",
        lambda: collate_benchmark(catalog, name, taskset_dir, inputs=taskset),
    )
    _ensure(benchmark, collated, say, refuse)
    planned = _Product(
        plan,
        plan_path,
        workspace.plan_dir(name),
        f"planning {name} into {plan_path} ...",
        lambda: publish_plan(plan_benchmark(benchmark), benchmark, plan),
    )
    _ensure(benchmark, planned, say, refuse)
