"""What a run needs from this machine, item by item, each with the fix when it is missing.

``gym-assets doctor`` prints these findings. Each check is a function returning findings, so a
test can point it at a prepared environment. Nothing here imports Dagster (its version is read
from the installed distribution's metadata) or starts more than one sandbox guest, so the doctor
answers in about a second.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from gym_assets.errors import UserError
from gym_assets.workspace import Workspace

Status = Literal["ok", "warn", "FAIL"]
DISTRIBUTION = "gym-assets"
PINNED = ("dagster", "dagster-webserver")  # pinned together: one version for all
MINIMUM_PYTHON = (3, 11)
GiB = 1024**3
DISK_WARN_BYTES = 2 * GiB
DISK_FAIL_BYTES = GiB // 4
HTTP_TIMEOUT_S = 3.0
SETUP_FIX = "run `make setup`, then use .venv/bin/gym-assets"


@dataclass(frozen=True)
class Finding:
    status: Status
    item: str
    detail: str
    fix: str | None = None

    def line(self, item_width: int = 0) -> str:
        text = f"{self.status:<4}  {self.item:<{item_width}}  {self.detail}"
        return f"{text}  [fix: {self.fix}]" if self.fix else text

    def as_json(self) -> dict[str, str | None]:
        return asdict(self)


def python_version(version: Sequence[int] = tuple(sys.version_info[:3])) -> Finding:
    """The interpreter against the project's ``Requires-Python`` (3.11 when not installed)."""
    from packaging.specifiers import SpecifierSet

    found = ".".join(map(str, version[:3]))
    try:
        required = importlib.metadata.metadata(DISTRIBUTION)["Requires-Python"]
    except importlib.metadata.PackageNotFoundError:
        required = ">=" + ".".join(map(str, MINIMUM_PYTHON))
    if SpecifierSet(required).contains(found):
        return Finding("ok", "python", f"{found} ({required})")
    return Finding("FAIL", "python", f"{found}, the project needs {required}",
                   "install Python 3.11 and run `make setup` with PYTHON=python3.11")  # fmt: skip


def project_environment(prefix: str = sys.prefix, base_prefix: str = sys.base_prefix) -> Finding:
    """The project installed here, with the Dagster family at the versions it pins."""
    from packaging.requirements import Requirement

    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return Finding("FAIL", "environment", f"{DISTRIBUTION} is not installed in {prefix}",
                       SETUP_FIX)  # fmt: skip
    pins = {r.name: r for r in map(Requirement, requires) if r.name in PINNED and not r.marker}
    wrong = []
    for name, requirement in sorted(pins.items()):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = None
        if version is None or not requirement.specifier.contains(version):
            wrong.append(f"{name} {version or 'missing'} (pinned {requirement.specifier})")
    if wrong:
        return Finding("FAIL", "environment", "; ".join(wrong), SETUP_FIX)
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in sorted(pins))
    if prefix == base_prefix:
        return Finding("warn", "environment", f"not a virtual environment ({prefix}); {versions}",
                       "run `make setup` and use .venv/bin/gym-assets")  # fmt: skip
    return Finding("ok", "environment", f"venv {prefix}; {versions} as pinned")


def dagster_home(environ: Mapping[str, str] = os.environ) -> Finding:
    """Where Dagster keeps runs, event logs and sensor state."""
    fix = (
        "run `make demo` (it makes .dagster_home), or copy deploy/instance/dagster.yaml into "
        "$DAGSTER_HOME"
    )
    value = environ.get("DAGSTER_HOME")
    if not value:
        return Finding("warn", "dagster home",
                       "DAGSTER_HOME is not set: Dagster would keep nothing between runs",
                       "`make demo` and `make ui` set it to .dagster_home; elsewhere export "
                       "DAGSTER_HOME=<absolute folder> holding a copy of "
                       "deploy/instance/dagster.yaml")  # fmt: skip
    home = Path(value)
    if not home.is_absolute():
        return Finding("FAIL", "dagster home", f"DAGSTER_HOME={value} is not an absolute path",
                       f"export DAGSTER_HOME={home.resolve()}")  # fmt: skip
    if not (home / "dagster.yaml").is_file():
        return Finding("FAIL", "dagster home", f"{home} holds no dagster.yaml", fix)
    return Finding("ok", "dagster home", str(home / "dagster.yaml"))


def sandbox() -> Finding:
    """Bubblewrap installed and able to make its namespaces here: the sandbox's own probe (the
    first guest a run starts) is run once."""
    from gym_assets.sandbox import SandboxPolicy, SandboxUnavailable

    try:
        with SandboxPolicy() as policy:
            isolation = policy.isolation()
    except SandboxUnavailable as exc:
        message = exc.render()
        detail, _, fix = message.partition("; ")
        return Finding("FAIL", "sandbox", detail, fix or None)
    return Finding("ok", "sandbox", f"bubblewrap {isolation.bwrap}: a guest started in its own "
                   "namespaces")  # fmt: skip


def configs(workspace: Workspace) -> tuple[Finding, Mapping[str, Any] | None]:
    """The configs tree loads and resolves; the loaded configs, for the harness registry."""
    from gym_assets.tasks.catalog import load_catalog

    try:
        catalog = load_catalog(workspace)
    except UserError as exc:
        return Finding("FAIL", "configs", exc.render(),
                       "fix the file it names; `gym-assets config show` shows how configs "
                       "resolve"), None  # fmt: skip
    names = catalog.names()
    detail = f"{workspace.configs.resolve()}: {len(names)} benchmarks"
    problems = catalog.manifest_problems
    if problems:  # each blocks only its own folder's benchmarks, so the tree still loads
        detail += f"; {len(problems)} manifest(s) refused, the first: {problems[0].render()}"
        fix = "fix the manifest it names (only the benchmarks of its folder are blocked)"
        return Finding("warn", "configs", detail, fix), catalog.loaded
    if catalog.loaded.warnings:  # a generated relay: loads now, refused by a future release
        first = catalog.loaded.warnings[0].splitlines()[0]
        fix = "run `gym-assets config add-environment-servers`"
        return Finding("warn", "configs", f"{detail}; {first}", fix), catalog.loaded
    return Finding("ok", "configs", detail), catalog.loaded


def harnesses(loaded: Mapping[str, Any]) -> list[Finding]:
    """Each cli harness of the registry against its pinned version. One that is not installed
    only warns (a run needs only the harnesses it uses); one at another version fails: a run
    of it is refused until it is installed again."""
    from gym_assets.rollouts.harnesses.install import install_command, state_of
    from gym_assets.rollouts.harnesses.registry import load_harnesses

    try:
        registry = load_harnesses(loaded)
    except UserError as exc:
        return [Finding("FAIL", "harnesses", exc.render(), "fix the harness entry it names")]
    findings = []
    for harness in registry.values():
        if harness.kind != "cli":
            continue
        item = f"harness {harness.name}"
        state = state_of(harness)
        fix = install_command(harness.name)
        if state.installed:
            findings.append(Finding("ok", item, f"{state.version} in {state.folder}"))
        elif state.version is None or not state.executable.exists():
            findings.append(Finding("warn", item, f"not installed (pinned {state.pinned})", fix))
        else:
            detail = f"{state.version} in {state.folder}, not the pinned {state.pinned}"
            findings.append(Finding("FAIL", item, detail, fix))
    return findings


def _nearest_existing(path: Path) -> Path:
    """``path`` made absolute, or the nearest folder on its way that exists."""
    where = path.resolve()
    while not where.exists():
        where = where.parent
    return where


def data_root(root: Path) -> Finding:
    """Products can be written under the data root: it is a directory this user may write,
    or it will be made (on first use) in one. A file there, or a read-only one, would fail
    the first run only after its products were made."""
    item = "data root"
    fix = "point --data-root / GYM_ASSETS_DATA_ROOT at a folder you can write"
    where = _nearest_existing(root)
    if not where.is_dir():
        what = "is" if where == root.resolve() else f"is on the way to {root} and is"
        return Finding("FAIL", item, f"{where} {what} not a directory", fix)
    if not os.access(where, os.W_OK | os.X_OK):
        return Finding("FAIL", item, f"{where} cannot be written here (read-only, or not "
                       "this user's)", fix)  # fmt: skip
    if where != root.resolve():
        return Finding("ok", item, f"{root} will be made in {where}, which can be written")
    return Finding("ok", item, f"{where}: a directory that can be written")


def disk_space(
    data_root: Path, warn_bytes: int = DISK_WARN_BYTES, fail_bytes: int = DISK_FAIL_BYTES
) -> Finding:
    """Free space where products go (the nearest existing folder of the data root)."""
    where = _nearest_existing(data_root)
    free = shutil.disk_usage(where).free
    detail = f"{free / GiB:.1f} GiB free under {where}"
    fix = "free space there, or point --data-root / GYM_ASSETS_DATA_ROOT elsewhere"
    if free < fail_bytes:
        return Finding("FAIL", "disk", f"{detail} (less than {fail_bytes / GiB:.2f} GiB)", fix)
    if free < warn_bytes:
        return Finding("warn", "disk", f"{detail} (less than {warn_bytes / GiB:.2f} GiB)", fix)
    return Finding("ok", "disk", detail)


def base_url(url: str, api_key_env: str | None, environ: Mapping[str, str] = os.environ) -> Finding:
    """``GET <url>/models`` answers, with the key from ``api_key_env`` when named (never shown)."""
    item = "base url"
    target = url.rstrip("/") + "/models"
    headers = {}
    if api_key_env:
        key = environ.get(api_key_env)
        if not key:
            return Finding("FAIL", item, f"${api_key_env} is not set",
                           f"export {api_key_env}=<the server's API key>")  # fmt: skip
        headers["Authorization"] = f"Bearer {key}"
    try:
        with urllib.request.urlopen(
            urllib.request.Request(target, headers=headers), timeout=HTTP_TIMEOUT_S
        ) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Finding("FAIL", item, f"GET {target}: {reason}",
                       "start the model server, or pass the URL it serves (…/v1)")  # fmt: skip
    if status in (401, 403):
        fix = f"set ${api_key_env} to a key the server accepts" if api_key_env else (
            "pass --api-key-env VAR naming the variable that holds the key")  # fmt: skip
        return Finding("FAIL", item, f"GET {target}: HTTP {status} (the key is refused)", fix)
    if status >= 400:
        return Finding("warn", item, f"GET {target}: HTTP {status}",
                       "check that the URL ends at the API's /v1")  # fmt: skip
    return Finding("ok", item, f"GET {target}: HTTP {status}")


def examine(
    workspace: Workspace, url: str | None = None, api_key_env: str | None = None
) -> list[Finding]:
    """Every item, in the order a user fixes them."""
    findings = [python_version(), project_environment(), dagster_home(), sandbox()]
    configs_finding, loaded = configs(workspace)
    findings.append(configs_finding)
    if loaded is not None:
        findings += harnesses(loaded)
    findings += [data_root(workspace.data), disk_space(workspace.data)]
    if url is not None:
        findings.append(base_url(url, api_key_env))
    return findings
