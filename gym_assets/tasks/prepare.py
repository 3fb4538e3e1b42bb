"""Prepare a benchmark's rows: run its prepare script, or check its bundled JSONL.

A prepare script is a Python file with ``prepare(output_fpath: Path, **kwargs) -> Path``. It
writes flat JSONL rows to ``output_fpath`` and returns that path. We hand it a temporary path
beside the final one and publish the result only after every line parsed as a JSON object, so a
failed or interrupted prepare never leaves a half-written dataset behind. The rows live in the
benchmark's prepared product directory under the data root (``gym_assets.outputs``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import tempfile
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from gym_assets.errors import UserError, reported
from gym_assets.fileio import PUBLISHED_FILE_MODE, iter_jsonl
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import PREPARED
from gym_assets.outputs.targets import Target, is_within
from gym_assets.tasks.catalog import Benchmark
from gym_assets.tasks.fingerprint import Inputs, forget_inputs, record_inputs
from gym_assets.user_files import open_input


@dataclass(frozen=True)
class PreparedRows:
    """What a prepare step produced: where, how many rows, and the file's digest."""

    benchmark: str
    path: Path
    rows: int
    sha256: str
    ran_prepare: bool


def _scan(path: Path) -> tuple[int, str]:
    """Count the rows of a JSONL file (checking each is an object) and hash its bytes."""
    rows = sum(1 for _ in iter_jsonl(path))
    digest = hashlib.sha256()
    with open_input(path, "JSONL file") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return rows, digest.hexdigest()


def _load_script(benchmark: Benchmark) -> Callable[..., Any]:
    script = benchmark.prepare_script
    assert script is not None
    if not script.exists():
        raise UserError(
            f"benchmark '{benchmark.name}' is missing a valid prepare script: {script} does "
            "not exist; fix `prepare_script` in its config"
        )
    open_input(script, "prepare script").close()  # a FIFO, a device, a directory: refused
    spec = importlib.util.spec_from_file_location(f"gym_assets_prepare_{benchmark.name}", script)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a script written as a command may call sys.exit
        raise UserError(
            f"could not import the prepare script of '{benchmark.name}': "
            f"{type(exc).__name__}: {exc}",
            path=script,
        ) from None
    prepare = getattr(module, "prepare", None)
    if not callable(prepare):
        raise UserError(
            f"benchmark '{benchmark.name}' has a prepare script but it defines no "
            "`prepare(output_fpath, **kwargs)` function",
            path=script,
        )
    return prepare


def prepare_benchmark(
    benchmark: Benchmark,
    *,
    use_cached: bool = False,
    script_args: Mapping[str, Any] | None = None,
    inputs: Inputs | None = None,
) -> PreparedRows:
    """Produce (or check) the benchmark's flat rows and describe them.

    Bundled datasets are only checked: every line must be a JSON object. Datasets with a
    prepare script are regenerated unless ``use_cached`` and the output already exists; the
    rows' product then records ``inputs`` (``InputsOf(...).product("prepared")``), what they
    were built from.
    """
    target = benchmark.rows_path
    if benchmark.prepare_script is None or (use_cached and target.is_file()):
        rows, sha = _scan(benchmark.require_rows())
        return PreparedRows(benchmark.name, target, rows, sha, ran_prepare=False)

    prepare = _load_script(benchmark)
    product = benchmark.prepared_dir
    assert product is not None
    if not is_within(target, product) or target == product:
        raise UserError(
            f"benchmark '{benchmark.name}': the rows of a prepare script are a product under "
            f"the data root, but jsonl_fpath points at {target}; make it a relative path",
            path=benchmark.config_paths[0] if benchmark.config_paths else None,
        )
    with claimed_dir(Target.of(product, PREPARED, benchmark.workspace)):
        forget_inputs(product)
        rows, sha = _run_script(benchmark, prepare, target, script_args)
        if inputs is not None:
            record_inputs(product, inputs)
    return PreparedRows(benchmark.name, target, rows, sha, ran_prepare=True)


def _run_script(
    benchmark: Benchmark,
    prepare: Callable[..., Any],
    target: Path,
    script_args: Mapping[str, Any] | None,
) -> tuple[int, str]:
    """Run the script into a temp file beside ``target``; rename it over ``target`` if valid."""
    with reported(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
    tmp = Path(tmp_name)
    try:
        with reported(target):
            tmp.chmod(PUBLISHED_FILE_MODE)  # mkstemp is owner-only; prepared rows are readable
        try:
            returned = prepare(output_fpath=tmp, **dict(script_args or {}))
        except (Exception, SystemExit) as exc:
            last = traceback.extract_tb(exc.__traceback__)[-1]
            raise UserError(
                f"the prepare script of '{benchmark.name}' failed: {type(exc).__name__}: "
                f"{exc} (at {last.filename}:{last.lineno})",
                path=benchmark.prepare_script,
            ) from None
        if (
            not isinstance(returned, str | os.PathLike)
            or Path(cast("str | os.PathLike[str]", returned)).resolve() != tmp.resolve()
        ):
            raise UserError(
                f"the prepare script of '{benchmark.name}' returned {returned!r}; expected the "
                "output_fpath it was given (write the rows there and return it)",
                path=benchmark.prepare_script,
            )
        try:
            rows, sha = _scan(tmp)
        except UserError as exc:
            # Cite the line against the file the user knows: the temp file is deleted below.
            raise UserError(
                f"the prepare script of '{benchmark.name}' wrote a bad row at "
                f"{target}:{exc.line}: {exc.message}; nothing was published (fix the script)",
                path=benchmark.prepare_script,
            ) from None
        with reported(target):
            os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return rows, sha
