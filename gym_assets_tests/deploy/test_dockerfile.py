"""deploy/k8s/Dockerfile parsed with BuildKit's own parser, and its build rendered as a dry run.

No Docker here: each COPY is carried out into a scratch build root with docker-py's reading of
.dockerignore, and the image's `pip install` runs against that root as `pip install --dry-run
--no-index --no-build-isolation`, so the requirement set must resolve from the versions this
checkout was tested with, offline.
"""

from __future__ import annotations

import importlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import dagster as dg
import dockerfile
import pytest
from docker.utils.build import exclude_paths

from gym_assets_tests.deploy import chart

SECRET_LOOKING = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def _instructions(text: str | None = None) -> list[dockerfile.Command]:
    if text is None:
        return list(dockerfile.parse_file(str(chart.DOCKERFILE)))
    return list(dockerfile.parse_string(text))


def _ignore_patterns() -> list[str]:
    lines = (chart.ROOT / ".dockerignore").read_text("utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _context(root: Path) -> set[str]:
    """Every path of the build context below ``root`` that .dockerignore lets in."""
    return set(exclude_paths(str(root), _ignore_patterns()))


def render_copies(instructions: list[dockerfile.Command], build_root: Path) -> Path:
    """Each COPY's sources into ``build_root`` (the image's filesystem); the last WORKDIR."""
    context = _context(chart.ROOT)
    workdir = PurePosixPath("/")
    for step in instructions:
        if step.cmd == "WORKDIR":
            workdir = workdir / step.value[0]
        if step.cmd not in {"COPY", "ADD"}:
            continue
        assert step.cmd == "COPY" and not step.flags, f"line {step.start_line}: plain COPY only"
        *sources, target = step.value
        destination = build_root / (workdir / target).relative_to("/")
        for source in sources:
            assert (chart.ROOT / source).exists(), f"line {step.start_line}: no {source}"
            assert source in context, f"line {step.start_line}: .dockerignore leaves {source} out"
            if (chart.ROOT / source).is_dir():
                for path in sorted(context):
                    if path.startswith(f"{source}/") and (chart.ROOT / path).is_file():
                        into = destination / Path(path).relative_to(source)
                        into.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(chart.ROOT / path, into)
            else:
                into = destination / source if target.endswith("/") else destination
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(chart.ROOT / source, into)
    return build_root / workdir.relative_to("/")


def test_one_stage_on_python_311_slim():
    froms = [step.value[0] for step in _instructions() if step.cmd == "FROM"]
    assert froms == ["python:3.11-slim"]


def test_the_sandbox_tool_comes_from_debian():
    runs = " ".join(step.value[0] for step in _instructions() if step.cmd == "RUN")
    assert re.search(r"apt-get install [^&]*\bbubblewrap\b", runs)
    assert "rm -rf /var/lib/apt/lists/*" in runs


def test_the_image_runs_as_a_user_that_is_not_root():
    instructions = _instructions()
    users = [i for i, step in enumerate(instructions) if step.cmd == "USER"]
    assert users, "no USER: the image would run as root"
    user = instructions[users[-1]].value[0].split(":")[0]
    assert user not in {"root", "0"}
    last_run = max(i for i, step in enumerate(instructions) if step.cmd == "RUN")
    assert users[-1] > last_run


def test_the_build_context_keeps_secrets_and_local_state_out(tmp_path):
    for name in (".env", "sub/.env.local", "id.pem", ".git/config", ".venv/bin/python",
                 ".gym_assets/plans/x/plan.json", "gym_assets/__init__.py"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    files = {p for p in _context(tmp_path) if (tmp_path / p).is_file()}
    assert files == {"gym_assets/__init__.py"}


def test_every_copy_source_is_in_the_context_and_pip_resolves_offline(tmp_path):
    workdir = render_copies(_instructions(), tmp_path)
    installs = [
        shlex.split(step.value[0])
        for step in _instructions()
        if step.cmd == "RUN" and step.value[0].startswith("pip install")
    ]
    assert len(installs) == 1, "one pip install: the project with its pinned requirements"
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index",
         "--no-build-isolation", "--quiet", "--report", str(report), *installs[0][2:]],
        cwd=workdir, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    would_install = [item["metadata"]["name"] for item in json.loads(report.read_text())["install"]]
    assert would_install == ["gym-assets"], "the image would need packages this checkout lacks"
    assert (workdir / "configs" / "harnesses.yaml").is_file()


def test_a_copy_of_something_ignored_or_missing_is_refused(tmp_path):
    for line in ("COPY docs ./docs", "COPY .env ./", "COPY nowhere ./"):
        broken = chart.DOCKERFILE.read_text("utf-8") + f"\n{line}\n"
        with pytest.raises(AssertionError):
            render_copies(_instructions(broken), tmp_path / line.split()[1])


def test_the_command_serves_the_code_location_the_values_name():
    (cmd,) = [step for step in _instructions() if step.cmd == "CMD"]
    assert cmd.json and list(cmd.value[:3]) == ["dagster", "api", "grpc"]
    module = cmd.value[cmd.value.index("-m") + 1]
    assert ["-m", module] == chart.user_deployment(chart.values())["dagsterApiGrpcArgs"]
    assert isinstance(importlib.import_module(module).defs, dg.Definitions)


def test_no_secret_looking_setting_is_baked_in():
    for step in _instructions():
        if step.cmd in {"ENV", "ARG"}:
            names = step.value[0::2] if step.cmd == "ENV" else [v.split("=")[0] for v in step.value]
            assert not [n for n in names if SECRET_LOOKING.search(n)], step.original


def test_the_image_locations_are_the_deployments():
    env = {}
    for step in _instructions():
        if step.cmd == "ENV":
            env.update(zip(step.value[0::2], step.value[1::2], strict=True))
    deployment_env = {e["name"]: e["value"] for e in chart.user_deployment(chart.values())["env"]}
    for name in ("GYM_ASSETS_CONFIGS", "GYM_ASSETS_DATA_ROOT"):
        assert env[name] == deployment_env[name]
