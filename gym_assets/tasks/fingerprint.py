"""Content fingerprints: what a benchmark's products are built from, so a change is noticed.

One definition serves both faces. ``benchmark_fingerprint`` digests everything a benchmark's
taskset depends on as the configs say it now: the config blocks of the servers involved, its
route, the bundled data file or the prepare script, the prompt template and the code version.
``config_change_sensor`` compares it with the one the latest ``collated_taskset`` recorded; it
does not depend on where the configs tree lives. ``InputsOf(...).product(kind)`` is what one
product (prepared rows, taskset, plan) is built from, part by part, plus the configs root it
came from: each builder records it inside the product (``record_inputs``) and
``stale_reason`` names what changed since, so a run never uses a product its inputs outgrew.
Editing any input changes its digest; touching a file without changing it does not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, get_args

from gym_assets.fileio import atomic_write_text
from gym_assets.json_shapes import is_mapping
from gym_assets.outputs.markers import read_small_json
from gym_assets.tasks.catalog import Benchmark, Catalog

FINGERPRINT_LENGTH = 16
Product = Literal["prepared", "taskset", "plan"]
PRODUCTS: tuple[Product, ...] = get_args(Product)
CODE_VERSIONS: Mapping[Product, str] = {"prepared": "1", "taskset": "1", "plan": "1"}
"""Bump a product's version when the same inputs would now give other bytes: products built
before are then rebuilt, and the Dagster asset of the same name takes it as its code version."""
LABELS: Mapping[Product, str] = {"prepared": "prepared rows", "taskset": "taskset", "plan": "plan"}
RECORD_NAME = ".gym-assets-inputs.json"
"""Inside a product's directory: the inputs it was built from (never part of the product's
own bytes, so a plan stays byte-identical to NeMo Gym's)."""


def _short(document: Any) -> str:
    text = json.dumps(document, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:FINGERPRINT_LENGTH]


def _file_digest(path: Path | None) -> str:
    """The file's name and bytes, digested ("none" when there is no such input)."""
    if path is None:
        return "none"
    digest = hashlib.sha256(path.name.encode())
    if not path.is_file():
        return "missing"
    with path.open("rb") as handle:
        digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()[:FINGERPRINT_LENGTH]


@dataclass(frozen=True)
class Inputs:
    """What one product is (or was) built from: a digest per named input, and the configs root."""

    product: Product
    configs_root: str
    parts: Mapping[str, str]

    @property
    def fingerprint(self) -> str:
        return _short(dict(self.parts))

    def to_json(self) -> dict[str, Any]:
        return {
            "product": self.product,
            "configs_root": self.configs_root,
            "fingerprint": self.fingerprint,
            "parts": dict(self.parts),
        }


class InputsOf:
    """The inputs of one benchmark's products as they are now; each file is read once, so
    make a new one after a step that rewrites the rows (preparing them)."""

    def __init__(self, catalog: Catalog, benchmark: Benchmark):
        self.catalog = catalog
        self.benchmark = benchmark

    @cached_property
    def config(self) -> str:
        """The config blocks of the benchmark's instance, environment server and agents, and
        its route: what collation reads besides the rows."""
        config = self.catalog.loaded.data
        benchmark = self.benchmark
        names = [benchmark.instance, benchmark.environment_server, *benchmark.agents]
        blocks = {name: config.get(name) for name in names if name}
        routes = config.get("environment_server_routes")
        taskset = benchmark.dataset.taskset
        blocks["route"] = routes.get(taskset) if taskset and is_mapping(routes) else None
        return _short(blocks)

    @cached_property
    def rows(self) -> str:
        return _file_digest(self.benchmark.rows_path)

    @cached_property
    def prompt_template(self) -> str:
        return _file_digest(self.benchmark.prompt_config_path)

    def _parts(self, product: Product, rows: str | None = None) -> dict[str, str]:
        benchmark = self.benchmark
        code = {"code version": CODE_VERSIONS[product]}
        if product == "prepared":  # only what the script sees: re-running one may be costly
            return {
                "declaration": _short(benchmark.dataset.model_dump()),
                "prepare script": _file_digest(benchmark.prepare_script),
                **code,
            }
        parts = {"config": self.config, "rows": rows or self.rows}
        if product == "taskset":
            parts["prompt template"] = self.prompt_template
        return {**parts, **code}

    def product(self, product: Product) -> Inputs:
        root = str(self.catalog.workspace.configs.resolve())
        return Inputs(product, root, self._parts(product))

    @property
    def fingerprint(self) -> str:
        """The benchmark's fingerprint: its taskset's inputs, with the prepare script standing
        for rows it writes (known before they are prepared), wherever the tree lives."""
        script = self.benchmark.prepare_script
        return _short(self._parts("taskset", rows=_file_digest(script) if script else None))


def benchmark_fingerprint(catalog: Catalog, benchmark: Benchmark) -> str:
    """A short, stable hex digest of the benchmark's config blocks, code and source data."""
    return InputsOf(catalog, benchmark).fingerprint


def catalog_fingerprints(catalog: Catalog) -> dict[str, str]:
    """``{benchmark: fingerprint}`` for every benchmark in the catalogue."""
    return {benchmark.name: benchmark_fingerprint(catalog, benchmark) for benchmark in catalog}


def sidecar_digests(catalog: Catalog) -> dict[str, str]:
    """``{benchmark: digest of its stored metrics sidecar}`` ("missing" without one).

    Not part of the fingerprint: a sidecar is written by the first collation, which would make
    every new benchmark stale once. It decides only whether a collation refused on a metrics
    conflict can succeed now, so a sensor retries a failed partition when it changes.
    """
    return {benchmark.name: _file_digest(benchmark.sidecar_path) for benchmark in catalog}


def record_inputs(directory: Path, inputs: Inputs) -> None:
    """Say inside the product's directory what it was built from (written atomically)."""
    atomic_write_text(directory / RECORD_NAME, json.dumps(inputs.to_json(), sort_keys=True) + "\n")


def forget_inputs(directory: Path) -> None:
    """Drop the record before the product is rewritten: a rewrite that stops halfway then
    leaves a product that is rebuilt, never one that claims inputs it does not match."""
    with contextlib.suppress(FileNotFoundError):
        (directory / RECORD_NAME).unlink()


def recorded_inputs(directory: Path) -> Inputs | None:
    """What the product in ``directory`` was built from, or None without a readable record."""
    value = read_small_json(directory / RECORD_NAME)
    try:
        product, root, parts = value["product"], value["configs_root"], value["parts"]
    except (TypeError, KeyError):
        return None
    if (
        product not in PRODUCTS
        or not isinstance(root, str)
        or not is_mapping(parts)
        or not all(isinstance(v, str) for v in parts.values())
    ):
        return None
    return Inputs(product, root, {str(k): v for k, v in parts.items()})


def stale_reason(directory: Path, now: Inputs) -> str | None:
    """Why the product in ``directory`` no longer matches ``now``; None when it does."""
    recorded = recorded_inputs(directory)
    if recorded is None or recorded.product != now.product:
        return "its inputs were never recorded"
    if recorded.configs_root != now.configs_root:
        return f"built from configs root {recorded.configs_root}, not {now.configs_root}"
    names = [*now.parts, *(name for name in recorded.parts if name not in now.parts)]
    changed = [name for name in names if recorded.parts.get(name) != now.parts.get(name)]
    return f"{', '.join(changed)} changed" if changed else None
