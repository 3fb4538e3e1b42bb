"""Throwaway Dagster instances for the benches, on sqlite or on the project's own Postgres.

``local_instance`` makes a home under a scratch directory with the repo's instance settings for
the storage asked for (``deploy/instance/dagster.yaml`` or ``dagster.postgres.yaml``), a copy of
the configs and of the example harnesses (``minimal_agent`` is found beside the configs), starts
the Postgres cluster the instance needs, and points this process (``os.environ``, which the code
server, the daemon and the CLI inherit) at it for the duration of the block; the cluster is
stopped and the variables restored on the way out. ``bench/dagster_runs.py`` and
``bench/fanout.py`` share it, and so does the run queue test."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from unittest import mock

from gym_assets.local_dagster import LocalHome
from gym_assets.local_services.postgres import URL_VARIABLE, LocalPostgres

ROOT = Path(__file__).resolve().parents[1]
INSTANCE_FILES = {"sqlite": "dagster.yaml", "postgres": "dagster.postgres.yaml"}
STORAGES = tuple(INSTANCE_FILES)
SENSORS = ("config_change_sensor", "plan_automation_sensor")
"""The sensors that launch runs of their own (a benchmark never collated, a taskset
re-collated); a bench stops them so that it alone decides what runs."""
TEMPLATE = "units"
"""The bundled benchmark that ``copy_benchmark`` copies: 30 one-call tasks, an exact match."""


@contextmanager
def local_instance(root: Path, storage: str, **environ: str) -> Iterator[LocalHome]:
    """A fresh instance under ``root`` (which the server's user must be able to reach for
    Postgres: see ``gym_assets.local_services.roots.scratch_root``) whose storage is ``storage``,
    with ``environ`` set beside its own variables while the block runs."""
    local = LocalHome.create(root, ROOT, INSTANCE_FILES[storage])
    shutil.copytree(ROOT / "examples" / "harnesses", root / "examples" / "harnesses")
    with ExitStack() as stack:
        variables = {**local.environ(), **environ}
        if storage == "postgres":
            cluster = LocalPostgres(root / "pg")
            variables[URL_VARIABLE] = cluster.start()
            stack.callback(cluster.stop)
        stack.enter_context(mock.patch.dict(os.environ, variables))
        yield local


ROUTES = "environment_server_routes:\n"


def copy_benchmark(configs: Path, name: str) -> None:
    """A benchmark ``name`` in ``configs``: the bundled ``units`` one under another name (its
    config blocks, dataset, taskset and files renamed, its taskset routed to its own
    environment server; its rows as they are)."""
    routes = configs / "routes.yaml"
    text = routes.read_text("utf-8")
    assert ROUTES in text, f"{routes} has no {ROUTES.strip()} block"
    route = f"  {name}: {name}_environment\n"
    routes.write_text(text.replace(ROUTES, ROUTES + route, 1), "utf-8")
    source, target = configs / "benchmarks" / TEMPLATE, configs / "benchmarks" / name
    target.mkdir()
    word = re.compile(rf"\b{TEMPLATE}(?![A-Za-z0-9])")  # units, units_resources, units.jsonl
    for path in source.iterdir():
        renamed = target / path.name.replace(TEMPLATE, name, 1)
        if path.suffix == ".jsonl":
            shutil.copy(path, renamed)
        else:
            renamed.write_text(word.sub(name, path.read_text("utf-8")), "utf-8")
