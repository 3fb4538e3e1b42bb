"""Bad input, one case a row: each refusal is one clear line with the documented exit code, and
nothing on disk is written or damaged.

Every case builds what it needs in a temp directory (a copy of the bundled configs tree, the
bad file or path it is about) and returns the command line. The test runs it in-process and
checks:

* the exit code: 1 for a refusal, 2 for a usage error or an unjudgeable conformance input;
* stderr: exactly one line matching the case's pattern, and no traceback;
* the temp tree, snapshotted before and after (relative path -> kind, mode, sha256), is
  unchanged except for the paths the case says the command may create (``creates`` globs).

To add a case, write a ``setup(tmp) -> argv`` function and append a ``Case``; a case that
mounts or starts something undoes it in ``cleanup(tmp)``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets_tests.filesystems import fill, snapshot

REPO = Path(__file__).resolve().parents[1]

Setup = Callable[[Path], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    setup: Setup
    exit_code: int
    message: str  # a regex the one stderr line must contain
    creates: tuple[str, ...] = ()  # globs of relative paths the command may create
    cleanup: Callable[[Path], None] | None = None


def run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code or 0)


# --- output paths: only what gym-assets wrote is ever replaced --------------------------------

COLLATE = ["collate", "--benchmark", "units", "--out"]
PLAN = ["plan", "--benchmark", "units", "--out"]
ROLLOUTS = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--limit", "2"]


def bundled(tmp: Path) -> list[str]:
    """Copy the bundled configs into ``tmp``; the flags naming them and a data root there."""
    configs = tmp / "configs"
    if not configs.exists():
        shutil.copytree(REPO / "configs", configs)
    return ["--configs", str(configs), "--data-root", str(tmp / "data")]


def out_at(command: list[str], make: Callable[[Path], Path]) -> Setup:
    """``command --out <what make(tmp) made>`` against the bundled configs."""

    def setup(tmp: Path) -> list[str]:
        flags = bundled(tmp)
        return [*command, str(make(tmp)), *flags]

    return setup


def foreign_dir(tmp: Path) -> Path:
    (tmp / "mine").mkdir()
    (tmp / "mine" / "thesis.tex").write_text("years of work\n")
    return tmp / "mine"


def regular_file(tmp: Path) -> Path:
    (tmp / "notes.txt").write_text("mine\n")
    return tmp / "notes.txt"


def fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "pipe")
    return tmp / "pipe"


def unix_socket(tmp: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp / "sock"))
    server.close()
    return tmp / "sock"


def char_device(tmp: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    os.mknod(tmp / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return tmp / "null"


def link_outside(tmp: Path) -> Path:
    (tmp / "elsewhere").mkdir()
    (tmp / "out").symlink_to(tmp / "elsewhere")
    return tmp / "out"


def taskset_product(tmp: Path) -> Path:
    assert run([*COLLATE, str(tmp / "taskset"), *bundled(tmp)]) == 0
    return tmp / "taskset"


def changed_plan(tmp: Path) -> Path:
    assert run([*PLAN, str(tmp / "plan.json"), *bundled(tmp)]) == 0
    (tmp / "plan.json").write_text('{"edited": "by hand"}\n')
    return tmp / "plan.json"


def rollouts_run(tmp: Path) -> Path:
    assert run([*ROLLOUTS, "--out", str(tmp / "run"), *bundled(tmp)]) == 0
    return tmp / "run"


def run_with_foreign_file(tmp: Path) -> list[str]:
    out = rollouts_run(tmp)
    (out / "notes.txt").write_text("mine\n")
    return [*ROLLOUTS, "--out", str(out), *bundled(tmp)]


def resume_with_corrupt_middle_line(tmp: Path) -> list[str]:
    records = rollouts_run(tmp) / "rollouts.jsonl"
    first, second = records.read_text().splitlines(keepends=True)
    records.write_text(first[: len(first) // 2] + "\n" + second)
    return [*ROLLOUTS, "--out", str(tmp / "run"), "--resume", *bundled(tmp)]


def _mount(tmp: Path, options: str) -> Path:
    mount = tmp / "mnt"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    return mount


def unmount(tmp: Path) -> None:
    subprocess.run(["umount", str(tmp / "mnt")], check=False)


def read_only(tmp: Path) -> Path:
    return _mount(tmp, "ro,size=64k") / "out"


def disk_full(tmp: Path) -> Path:
    mount = _mount(tmp, "size=64k")
    fill(mount, leave=0)
    return mount / "plan.json"


_HOLDERS: dict[Path, subprocess.Popen[str]] = {}
_HOLD = """
import sys
from pathlib import Path
from gym_assets.outputs.lock import held
from gym_assets.outputs.markers import TASKSET
from gym_assets.outputs.targets import Target
with held(Target(Path(sys.argv[1]), TASKSET, Path(sys.argv[1]).parent / "configs")):
    print("held", flush=True)
    sys.stdin.readline()
"""


def locked_elsewhere(tmp: Path) -> Path:
    out = tmp / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    _HOLDERS[tmp] = holder
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return out


def release(tmp: Path) -> None:
    holder = _HOLDERS.pop(tmp)
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=60)


def symlinked_data_root_dir(tmp: Path) -> list[str]:
    flags = bundled(tmp)
    (tmp / "elsewhere").mkdir()
    (tmp / "data").mkdir()
    (tmp / "data" / "prepared").symlink_to(tmp / "elsewhere")
    return ["prepare", "--benchmark", "humaneval", *flags]


def inspect_into_foreign_dir(tmp: Path) -> list[str]:
    (tmp / "bundle.jsonl").write_text("{}\n")
    return ["conformance", "inspect", "--bundle", str(tmp / "bundle.jsonl"), "--output",
            str(foreign_dir(tmp))]  # fmt: skip


def matrix_into_a_rollouts_run(tmp: Path) -> list[str]:
    out = rollouts_run(tmp)
    return ["conformance", "matrix", "--harness", f"simple={out}", "--output", str(out)]


def catalogue_over_a_page_written_by_hand(tmp: Path) -> list[str]:
    return ["conformance", "catalogue", "--out", str(regular_file(tmp))]


def migrate_outside_the_configs(tmp: Path) -> list[str]:
    flags = bundled(tmp)
    outside = tmp / "other.yaml"
    outside.write_text("{}\n")
    return ["config", "add-environment-servers", str(outside), *flags[:2]]


FOREIGN = r"exists and was not written by gym-assets \(no product marker\); choose another --out"
SPECIAL = r"gym-assets writes only regular files and directories; choose another --out$"

CASES = [
    Case("out-is-the-configs-root", out_at(COLLATE, lambda t: t / "configs"), 1,
         r"configs: is the configs root; products are never written over configs"),
    Case("out-inside-the-configs-root-even-empty",
         out_at(COLLATE, lambda t: (t / "configs" / "empty").mkdir() or t / "configs" / "empty"),
         1, r"is inside the configs root"),
    Case("out-contains-the-configs-root", out_at(COLLATE, lambda t: t), 1,
         r"contains the configs root"),
    Case("out-is-a-foreign-non-empty-dir", out_at(COLLATE, foreign_dir), 1, FOREIGN),
    Case("out-is-dev-null", out_at(PLAN, lambda t: Path("/dev/null")), 1,
         r"^error: /dev/null: is a character device; " + SPECIAL),
    Case("out-is-a-char-device-made-with-mknod", out_at(PLAN, char_device), 1,
         r"null: is a character device; " + SPECIAL),
    Case("out-is-a-fifo", out_at(COLLATE, fifo), 1, r"pipe: is a FIFO; " + SPECIAL),
    Case("out-is-a-unix-socket", out_at(PLAN, unix_socket), 1, r"sock: is a socket; " + SPECIAL),
    Case("out-is-a-symlink-to-outside", out_at(COLLATE, link_outside), 1,
         r"out: is a symbolic link; " + SPECIAL),
    Case("file-where-a-dir-is-expected", out_at(COLLATE, regular_file), 1,
         r"notes.txt: is a file, not a directory; choose another --out$"),
    Case("dir-where-a-file-is-expected", out_at(PLAN, foreign_dir), 1,
         r"mine: is a directory, not a file; choose another --out$"),
    Case("out-under-a-regular-file", out_at(PLAN, lambda t: regular_file(t) / "sub"), 1,
         r"notes.txt/sub: cannot write: Not a directory$"),
    Case("out-holds-a-product-of-another-kind", out_at(["rollouts", *ROLLOUTS[1:], "--out"],
         taskset_product), 1, r"taskset: holds a taskset, not a rollouts run"),
    Case("plan-file-changed-after-we-wrote-it", out_at(PLAN, changed_plan), 1,
         r"plan.json: was changed after gym-assets wrote it"),
    Case("fresh-run-over-a-foreign-file", run_with_foreign_file, 1,
         r"run: holds .*notes.txt, which a rollouts run does not write"),
    Case("resume-with-a-corrupt-middle-line", resume_with_corrupt_middle_line, 1,
         r"rollouts.jsonl:1: damaged line \(not a JSON object\); resume with "
         r"--quarantine-corrupt"),
    Case("read-only-location", out_at(COLLATE, read_only), 1,
         r"mnt/out: cannot write: Read-only file system$", cleanup=unmount),
    Case("disk-full", out_at(PLAN, disk_full), 1,
         r"mnt/plan.json: cannot write: No space left on device$", cleanup=unmount),
    Case("lock-held-by-another-process", out_at(COLLATE, locked_elsewhere), 1,
         r"out: is in use by pid \d+ \(another gym-assets run\); wait for it or choose another "
         r"--out$", cleanup=release),
    Case("symlink-below-the-data-root", symlinked_data_root_dir, 1,
         r"data/prepared is a symbolic link; products under the data root are written only "
         r"through real directories$"),
    Case("conformance-output-is-foreign", inspect_into_foreign_dir, 2,
         r"^checker_error \(OutputError\): .*mine: exists and was not written by gym-assets .*"
         r"choose another --output or remove it yourself; no report published$"),
    Case("conformance-matrix-output-holds-a-rollouts-run", matrix_into_a_rollouts_run, 2,
         r"run: holds a rollouts run, not a conformance matrix; choose another --output"),
    Case("catalogue-over-a-page-written-by-hand", catalogue_over_a_page_written_by_hand, 1,
         r"notes.txt: exists and was not written by gym-assets"),
    Case("migrate-a-file-outside-the-configs-root", migrate_outside_the_configs, 2,
         r"could not update .*other.yaml: .*other.yaml: not inside the configs root"),
]  # fmt: skip


def test_the_corpus_ids_are_unique() -> None:
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_refused_in_one_line_and_writes_nothing(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may land in the working directory either
    monkeypatch.delenv("GYM_ASSETS_CONFIGS", raising=False)
    monkeypatch.delenv("GYM_ASSETS_DATA_ROOT", raising=False)
    with contextlib.ExitStack() as undo:
        if case.cleanup is not None:
            undo.callback(case.cleanup, tmp_path)
        argv = case.setup(tmp_path)
        before = snapshot(tmp_path)
        capsys.readouterr()

        code = run(argv)

        err = capsys.readouterr().err
        after = snapshot(tmp_path)
    assert "Traceback" not in err
    assert code == case.exit_code, err
    lines = err.splitlines()
    assert len(lines) == 1 and re.search(case.message, lines[0]), err
    allowed = lambda path: any(fnmatch.fnmatch(path, glob) for glob in case.creates)  # noqa: E731
    assert {p: v for p, v in after.items() if not allowed(p)} == {
        p: v for p, v in before.items() if not allowed(p)
    }
