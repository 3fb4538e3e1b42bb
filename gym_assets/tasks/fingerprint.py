"""Content fingerprints of benchmarks, so a change to what produces a taskset is noticed.

A benchmark's fingerprint covers everything its prepared rows and collated taskset depend on:
the config blocks of the servers involved, its route, the bundled data file or the prepare
script, and the prompt template. Editing any of them changes the fingerprint; touching a file
without changing it does not.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Protocol

from gym_assets.json_shapes import is_mapping
from gym_assets.tasks.catalog import Benchmark, Catalog

FINGERPRINT_LENGTH = 16


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def _hash_file(digest: _Digest, path: Path) -> None:
    digest.update(str(path.name).encode())
    if not path.is_file():
        digest.update(b"<missing>")
        return
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)


def benchmark_fingerprint(catalog: Catalog, benchmark: Benchmark) -> str:
    """A short, stable hex digest of the benchmark's config blocks, code and source data."""
    config = catalog.loaded.data
    names = [benchmark.instance, benchmark.environment_server, *benchmark.agents]
    blocks = {name: config.get(name) for name in names if name}
    routes = config.get("environment_server_routes")
    taskset = benchmark.dataset.taskset
    blocks["route"] = routes.get(taskset) if taskset and is_mapping(routes) else None
    digest = hashlib.sha256(json.dumps(blocks, sort_keys=True, default=str).encode())
    sources = [benchmark.prepare_script or benchmark.rows_path, benchmark.prompt_config_path]
    for path in sources:
        if path is not None:
            _hash_file(digest, path)
    return digest.hexdigest()[:FINGERPRINT_LENGTH]


def catalog_fingerprints(catalog: Catalog) -> dict[str, str]:
    """``{benchmark: fingerprint}`` for every benchmark in the catalogue."""
    return {benchmark.name: benchmark_fingerprint(catalog, benchmark) for benchmark in catalog}
