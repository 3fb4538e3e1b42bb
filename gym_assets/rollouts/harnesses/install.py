"""Installing ``cli`` harnesses at their pinned version into their project-local folder, and
telling whether one is installed.

    <root>/<name>/            the install: an npm prefix or a venv, marked as ours
    <root>/<name>.partial/    an install under way; renamed to <name>/ once verified
    <root>/.cache/            npm's and pip's caches, and the HOME and XDG dirs the tools see

``<root>`` is ``$GYM_ASSETS_HARNESSES_DIR`` or ``.harnesses`` beside the configs folder
(``harnesses.harnesses_dir``). Nothing is installed globally or under the user's HOME: the
tools get a HOME of their own under ``<root>/.cache``. An install is verified before it takes
the harness's name (the package's ``package.json`` or the distribution's ``METADATA`` says the
pinned version, and the adapter's executable exists), so a failed or interrupted install never
leaves a folder that could pass for installed. npm downloads without running any package's
scripts; those run afterwards in the harness sandbox, offline (``_run_scripts``). pip takes
wheels only (``WHEELS_ONLY``): installing a wheel copies files, while building a source
distribution runs the package's own code on the host. The
project removes or replaces only folders it made itself (they hold the product marker of
``gym_assets/outputs``); a foreign folder at the install path is refused unless it already
holds the pinned version, which is then used as it is, read-only.

Only the standard library is imported here at import time (the CLI's ``--help`` stays
instant); the project's registry, adapters and output helpers are imported when used.
"""

from __future__ import annotations

import glob
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gym_assets.errors import UserError

if TYPE_CHECKING:
    from gym_assets.rollouts.harnesses.registry import Harness

PARTIAL_SUFFIX = ".partial"
CACHE_DIR = ".cache"
INSTALL_TIMEOUT_S = 30 * 60.0  # a registry that stops answering must not hang CI
NPM_ERROR = "npm error"
NPM_ERROR_FIELDS = ("", "code", "errno", "syscall")  # npm's error lines before the cause
NPM_LOG_HINT = "A complete log of this run can be found in"  # npm's last line, never the cause
WHEELS_ONLY = "--only-binary=:all:"  # the harness and every dependency, as wheels
PIP_NO_MATCH = "ERROR: No matching distribution found for"


@dataclass(frozen=True)
class InstallState:
    """What the install folder of one ``cli`` harness holds now."""

    name: str
    pinned: str
    folder: Path
    executable: Path
    version: str | None  # what the folder's package or distribution says; None: nothing

    @property
    def installed(self) -> bool:
        return self.version == self.pinned and self.executable.exists()

    def problem(self) -> str | None:
        """Why the harness cannot run, ending with the command that fixes it; None if it can."""
        if self.installed:
            return None
        if self.version is None or not self.executable.exists():
            what = f"is not installed ({self.executable} is missing)"
        else:
            what = f"has version {self.version} in {self.folder}, not the pinned {self.pinned}"
        return f"harness '{self.name}' {what}; run `{install_command(self.name)}`"


def install_command(name: str) -> str:
    return shlex.join(["gym-assets", "harness", "install", name])


def _package(harness: Harness) -> tuple[str, str]:
    """``("npm" | "pip", package)`` of a ``cli`` harness."""
    recipe = harness.install
    if harness.kind != "cli" or recipe is None:
        raise UserError(
            f"harness '{harness.name}' is a {harness.kind} harness; only cli harnesses are "
            "installed (`gym-assets list harnesses` shows each harness's kind)"
        )
    return ("npm", recipe.npm) if recipe.npm is not None else ("pip", str(recipe.pip))


def _site_packages(folder: Path) -> list[Path]:
    return sorted(folder.glob("lib/python*/site-packages"))


def installed_version(harness: Harness, folder: Path | None = None) -> str | None:
    """The version the install folder (default the harness's own) holds: npm's
    ``node_modules/<package>/package.json``, or the venv's ``<dist>.dist-info/METADATA``."""
    tool, package = _package(harness)
    folder = folder or _folder(harness)
    if tool == "npm":
        try:
            manifest = json.loads((folder / "node_modules" / package / "package.json").read_bytes())
        except (OSError, ValueError):
            return None
        version = manifest.get("version") if isinstance(manifest, dict) else None
        return version if isinstance(version, str) else None
    found = importlib.metadata.distributions(
        name=package, path=list(map(str, _site_packages(folder)))
    )
    return next((dist.version for dist in found), None)


def _folder(harness: Harness) -> Path:
    assert harness.install_dir is not None  # filled by the registry loader for every cli entry
    return harness.install_dir


def _executable(harness: Harness, folder: Path) -> Path:
    from gym_assets.rollouts.harnesses.adapters import adapter_named

    assert harness.adapter is not None
    return adapter_named(harness.adapter).executable(folder)


def state_of(harness: Harness) -> InstallState:
    folder = _folder(harness)
    assert harness.version is not None
    return InstallState(
        harness.name,
        harness.version,
        folder,
        _executable(harness, folder),
        installed_version(harness, folder),
    )


def unavailable_reason(harness: Harness) -> str | None:
    """Why a ``cli`` harness cannot run here (with the install command), or None when it can;
    other kinds are always available."""
    return state_of(harness).problem() if harness.kind == "cli" else None


@dataclass(frozen=True)
class Installed:
    name: str
    version: str
    folder: Path
    seconds: float | None  # None: it was already installed, nothing was done


def _tool_env(root: Path) -> dict[str, str]:
    """The parent environment (proxies, registry settings) with HOME, XDG dirs and the npm and
    pip caches moved under ``<root>/.cache``: nothing is written in the user's HOME."""
    cache = root / CACHE_DIR
    home = cache / "home"
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        npm_config_cache=str(cache / "npm"),
        npm_config_update_notifier="false",
        PIP_CACHE_DIR=str(cache / "pip"),
        PIP_NO_INPUT="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.pop("VIRTUAL_ENV", None)  # pip must install into the harness's venv, not ours
    return env


def _run(argv: Sequence[str], env: Mapping[str, str], log: Path, name: str) -> None:
    """Run one install step, appending its output to ``log``; a failure is a UserError with
    the tool's last stderr line."""
    shown = shlex.join(argv)
    with log.open("ab") as out:
        out.write(f"$ {shown}\n".encode())
        out.flush()
        try:
            done = subprocess.run(
                argv,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.PIPE,
                timeout=INSTALL_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            raise UserError(
                f"harness '{name}': {argv[0]} is not on PATH; install it (Node.js for npm "
                "packages) and run the install again"
            ) from None
        except subprocess.TimeoutExpired:
            raise UserError(
                f"harness '{name}': `{shown}` took over {INSTALL_TIMEOUT_S:.0f} s and was "
                f"stopped; see {log}"
            ) from None
        out.write(done.stderr)
    if done.returncode != 0:
        cause = (
            failure_cause(done.stderr.decode(errors="replace")) or f"exit code {done.returncode}"
        )
        raise UserError(f"harness '{name}': `{shown}` failed: {cause} (full output: {log})")


def _run_scripts(partial: Path, log: Path, name: str) -> None:
    """The packages' own install scripts (``preinstall``, ``install``, ``postinstall``), which
    the download skipped: run by ``npm rebuild`` in the harness sandbox, where only the install
    folder is writable and nothing is reachable (``offline_run``), never on the host."""
    import asyncio

    from gym_assets.rollouts.episodes.offline_run import ProgramTimedOut, run_offline
    from gym_assets.sandbox import SandboxPolicy

    argv = ["npm", "rebuild", "--prefix", str(partial), "--no-audit", "--no-fund"]
    shown = shlex.join(argv)
    offline = {"npm_config_offline": "true", "npm_config_update_notifier": "false"}
    isolation = SandboxPolicy().isolation()
    try:
        done = asyncio.run(
            run_offline(
                argv, isolation, timeout_s=INSTALL_TIMEOUT_S, env=offline, writable=[partial]
            )
        )
    except ProgramTimedOut:
        raise UserError(
            f"harness '{name}': `{shown}` took over {INSTALL_TIMEOUT_S:.0f} s and was stopped"
        ) from None
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ {shown}  (in the harness sandbox)\n{done.stdout}{done.stderr}")
    if done.exit_code != 0:
        cause = failure_cause(done.stderr) or f"exit code {done.exit_code}"
        raise UserError(f"harness '{name}': `{shown}` failed: {cause} (full output: {log})")


def failure_cause(stderr: str) -> str | None:
    """The line of a failed tool's stderr that says why: its last line (pip), or npm's first
    error line after the error code (npm ends with boilerplate: advice and where its log is).
    pip's "no matching distribution" also says that only wheels were looked for, and why: the
    package (or a dependency) may exist as a source distribution only."""
    said = [line.strip() for line in stderr.splitlines() if line.strip()]
    npm = [line for line in said if line.startswith(NPM_ERROR) and NPM_LOG_HINT not in line]
    for line in npm:
        if line.removeprefix(NPM_ERROR).strip().split(" ")[0] not in NPM_ERROR_FIELDS:
            return line
    if not said:
        return None
    if said[-1].startswith(PIP_NO_MATCH):
        return (
            f"{said[-1]} as a wheel: harness installs take wheels only ({WHEELS_ONLY}), since "
            "building a source distribution runs the package's own code on the host, outside "
            "the harness sandbox; a version published only as an sdist cannot be installed"
        )
    return said[-1]


def _relocate_venv(venv: Path, final: Path) -> None:
    """A venv's scripts name its interpreter by absolute path: point the ones pip wrote in
    ``<name>.partial`` at the folder they are about to be renamed to."""
    old, new = str(venv).encode(), str(final).encode()
    for path in [*(venv / "bin").iterdir(), venv / "pyvenv.cfg"]:
        if path.is_symlink() or not path.is_file():
            continue
        content = path.read_bytes()
        if old in content and b"\0" not in content[:1024]:
            path.write_bytes(content.replace(old, new))


def _requirement(harness: Harness) -> str:
    """The pinned package as its tool writes it: ``pkg@1.2.3`` (npm), ``dist==1.2.3`` (pip)."""
    tool, package = _package(harness)
    return f"{package}@{harness.version}" if tool == "npm" else f"{package}=={harness.version}"


def _install_into(harness: Harness, partial: Path, env: Mapping[str, str], log: Path) -> None:
    pinned = _requirement(harness)
    if _package(harness)[0] == "npm":
        argv = ["npm", "install", "--prefix", str(partial), "--no-audit", "--no-fund"]
        _run([*argv, "--ignore-scripts", pinned], env, log, harness.name)
        _run_scripts(partial, log, harness.name)
        return
    _run([sys.executable, "-m", "venv", str(partial)], env, log, harness.name)
    pip = [str(partial / "bin" / "python"), "-m", "pip", "install", WHEELS_ONLY, pinned]
    _run(pip, env, log, harness.name)
    _relocate_venv(partial, _folder(harness))


def _verify(harness: Harness, partial: Path) -> None:
    found = installed_version(harness, partial)
    if found != harness.version:
        raise UserError(
            f"harness '{harness.name}': the install holds version {found or 'none'} of "
            f"{_package(harness)[1]}, not the pinned {harness.version}"
        )
    program = _executable(harness, partial)
    if not program.exists():
        raise UserError(
            f"harness '{harness.name}': the install has no {program.relative_to(partial)}, the "
            f"program adapter '{harness.adapter}' starts"
        )


def _ours(folder: Path) -> bool:
    from gym_assets.outputs.markers import HARNESS_INSTALL, dir_marker

    return dir_marker(folder) == HARNESS_INSTALL.id


def _retired_prefix(folder: Path) -> str:
    return f".{folder.name}.retired-"


def _claim_partial(harness: Harness, partial: Path) -> None:
    """A fresh, marked ``<name>.partial``; the leftovers of an interrupted install of ours (a
    partial or a retired install) are removed first, anything else there is refused."""
    from gym_assets.outputs.markers import HARNESS_INSTALL, write_dir_marker

    folder = _folder(harness)
    for retired in folder.parent.glob(glob.escape(_retired_prefix(folder)) + "*"):
        if _ours(retired):
            shutil.rmtree(retired)
    if os.path.lexists(partial):
        if not _ours(partial):
            raise UserError(
                "exists and was not made by gym-assets; remove it yourself to install "
                f"harness '{harness.name}'",
                path=partial,
            )
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    write_dir_marker(partial, HARNESS_INSTALL)


def _swap_in(partial: Path, folder: Path) -> None:
    """Put the verified install at ``folder``; an old install of ours there is retired."""
    if not os.path.lexists(folder):
        os.rename(partial, folder)
        return
    retired = Path(tempfile.mkdtemp(prefix=_retired_prefix(folder), dir=folder.parent))
    os.rename(folder, retired)  # onto the empty directory just made: ours alone
    try:
        os.rename(partial, folder)
    except OSError:
        os.rename(retired, folder)  # the old install stays rather than none
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _refuse_foreign(harness: Harness, state: InstallState) -> None:
    """A folder at the install path that we did not make is never replaced."""
    folder = state.folder
    if not os.path.lexists(folder) or _ours(folder):
        return
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()  # an empty directory holds nothing to lose
        return
    held = f"version {state.version}" if state.version else "something else"
    raise UserError(
        f"holds {held}, not an install gym-assets made of {harness.name} "
        f"{harness.version}; remove it yourself, or point GYM_ASSETS_HARNESSES_DIR elsewhere",
        path=folder,
    )


def install(harness: Harness, say: Callable[[str], None] = lambda line: None) -> Installed:
    """Install ``harness`` at its pinned version (see the module docstring); an install already
    at that version is left as it is. A filesystem failure is one line naming the folder."""
    from gym_assets.errors import reported
    from gym_assets.outputs.lock import held
    from gym_assets.outputs.markers import HARNESS_INSTALL
    from gym_assets.outputs.targets import Target

    tool = _package(harness)[0]
    assert harness.version is not None
    folder = _folder(harness)
    if state_of(harness).installed:
        return Installed(harness.name, harness.version, folder, None)
    root = folder.parent
    with reported(folder):
        (root / CACHE_DIR).mkdir(parents=True, exist_ok=True)
        with held(Target(folder, HARNESS_INSTALL, configs_root=root, flag=None)):
            state = state_of(harness)  # another install may have finished meanwhile
            if state.installed:
                return Installed(harness.name, harness.version, folder, None)
            _refuse_foreign(harness, state)
            say(f"installing {_requirement(harness)} ({tool}) into {folder} ...")
            started = time.monotonic()
            partial = folder.with_name(folder.name + PARTIAL_SUFFIX)
            _claim_partial(harness, partial)
            try:
                log = root / CACHE_DIR / f"{harness.name}.log"
                _install_into(harness, partial, _tool_env(root), log)
                _verify(harness, partial)
                _swap_in(partial, folder)
            finally:
                if partial.exists():
                    shutil.rmtree(partial, ignore_errors=True)
    return Installed(harness.name, harness.version, folder, time.monotonic() - started)


def install_all(
    harnesses: Sequence[Harness], say: Callable[[str], None] = lambda line: None
) -> list[Installed]:
    """Install each harness in turn, going on after a failure; the failures are one UserError
    at the end, naming each harness and its cause."""
    for harness in harnesses:  # refuse a builtin or command harness before installing any
        _package(harness)
    done, failed = [], []
    for index, harness in enumerate(harnesses, start=1):
        tag = f"[{index}/{len(harnesses)}] {harness.name}:"
        try:
            result = install(harness, lambda line, tag=tag: say(f"{tag} {line}"))
        except UserError as exc:
            if len(harnesses) == 1:
                raise
            say(f"{tag} failed")
            failed.append(exc.render())
            continue
        if result.seconds is None:
            say(f"{tag} already installed ({result.version} in {result.folder})")
        else:
            say(f"{tag} ... done in {result.seconds:.1f} s")
        done.append(result)
    if failed:
        raise UserError(
            f"{len(failed)} of {len(harnesses)} harness installs failed: " + "; ".join(failed)
        )
    return done
