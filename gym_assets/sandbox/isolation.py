"""How a guest interpreter is isolated: bubblewrap when it works here, nothing only when asked.

Under bubblewrap the guest gets its own PID, network, IPC, UTS and mount namespaces (it sees
and signals no process outside, reaches no network, and every descendant dies with the
sandbox's PID 1), a read-only view of only the system libraries and the Python installation,
one private size-capped tmpfs as its working directory, an empty environment, and a non-root
user whose process count is capped by ``RLIMIT_NPROC``:

* run as root, bubblewrap sets up the namespaces and ``setpriv`` then drops to a fresh
  unprivileged uid for this sandbox alone (the kernel never applies ``RLIMIT_NPROC`` to uid 0);
* run as another user, bubblewrap adds a user namespace, so the count is the sandbox's own.

``keyctl session -`` gives the guest a new, empty session keyring: the kernel keyring of the
session that started the run (a login's, say) is not handed down to it.

The guest caps its own CPU time, memory, file size and open files, and installs its seccomp
filter (``syscall_filter.py``: no kernel keys, no memory outside an address space), before
reading any code; ``/dev`` is read-only, so no tmpfs there can hold memory either.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from gym_assets.errors import UserError

GUEST_DIR = Path(__file__).parent
GUEST_FILES = ("guest.py", "plain_data.py", "syscall_filter.py", "zygote.py")
GUEST_MOUNT = "/guest"
SandboxKind = Literal["bwrap", "none"]
_MiB = 1024 * 1024
_SANDBOX_UIDS = (1_000_000_000, 1_100_000_000)  # far from any real account's uid
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
# possessor may view, read and search the inherited session keyring; nobody may write it
_READ_ONLY_KEYRING = "0x0b000000"
_RESIDENT_CAPS = "+setuid,+setgid,+chown,+kill,+dac_override,+fowner"
INSTALL_HINT = "install them (Debian/Ubuntu: apt-get install bubblewrap keyutils)"


@dataclass(frozen=True)
class Limits:
    """What one guest may use. Memory and file size are per process; CPU is per process too,
    while the caller's wall-clock deadline bounds the whole sandbox."""

    cpu_seconds: int = 10
    memory_bytes: int = 512 * _MiB
    file_bytes: int = 16 * _MiB
    processes: int = 4
    open_files: int = 64
    tmp_bytes: int = 16 * _MiB

    def guest_argument(self) -> str:
        fields = asdict(self)
        fields.pop("tmp_bytes")  # enforced by the tmpfs, not by an rlimit
        return json.dumps(fields, sort_keys=True)


class SandboxUnavailable(UserError):
    """No isolation can be made here and running without it was not allowed."""


def guest_python() -> Path:
    """The base interpreter (not the venv's wrapper): the guest needs only the stdlib."""
    executable = Path(os.path.realpath(sys.executable))
    if executable.is_relative_to(os.path.realpath(sys.base_prefix)):
        return executable
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


@dataclass(frozen=True)
class Isolation:
    """A way to start a guest: ``command`` is a single-use sandbox's argv, ``worker_command``
    a warm worker's (bubblewrap as root only: see ``zygote.py``)."""

    kind: SandboxKind
    bwrap: str | None = None
    keyctl: str | None = None
    setpriv: str | None = None  # only when running as root

    @property
    def warm_workers(self) -> bool:
        """Workers need a fresh uid per task, which only a root-started sandbox can grant."""
        return self.kind == "bwrap" and self.setpriv is not None

    def command(self, limits: Limits, workdir: Path | None = None) -> list[str]:
        """The argv of a sandbox serving one candidate and exiting. ``workdir``: a host
        directory the guest may write, bound at the same path (a tool's working directory
        whose files the trusted side reads afterwards); nothing else of the host is writable."""
        python = guest_python()
        guest = [str(python), "-I", "-S"]
        if self.kind == "none":
            return [*guest, str(GUEST_DIR / "guest.py"), limits.guest_argument()]
        argv = self._sandbox(python, limits, tmp_mode="1777")
        if workdir is not None:
            argv += [*parents(str(workdir.parent)), "--bind", str(workdir), str(workdir)]
        argv.append("--")
        argv += [str(self.keyctl), "session", "-"]
        if self.setpriv is not None:
            argv += self.unprivileged(sandbox_uid())
        return [*argv, *guest, f"{GUEST_MOUNT}/guest.py", limits.guest_argument()]

    def unprivileged(self, uid: int) -> list[str]:
        """The prefix that runs a command as ``uid`` without any capability (root only)."""
        assert self.setpriv is not None
        argv = [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        return [*argv, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]

    def worker_command(self, limits: Limits, control_fd: int) -> list[str]:
        """The argv of a warm worker: its resident keeps root with only the capabilities it
        needs to hand each task a fresh uid and clean up after it, in a session keyring that
        no task can write to; ``/tmp`` is writable for tasks only in their own directory."""
        assert self.warm_workers and self.setpriv is not None
        python = guest_python()
        argv = [*self._sandbox(python, limits, tmp_mode="0755", mqueue=True), "--"]
        argv += [str(self.keyctl), "session", "-", "/bin/sh", "-c"]
        argv += [f'{self.keyctl} setperm @s {_READ_ONLY_KEYRING} && exec "$@"', "sh"]
        argv += [self.setpriv, f"--bounding-set=-all,{_RESIDENT_CAPS}", "--inh-caps=-all"]
        argv += ["--no-new-privs", str(python), "-I", "-S", f"{GUEST_MOUNT}/zygote.py"]
        return [*argv, limits.guest_argument(), str(control_fd)]

    def _sandbox(
        self, python: Path, limits: Limits, *, tmp_mode: str, mqueue: bool = False
    ) -> list[str]:
        """The shared part of both argvs. ``/dev`` is made read-only (after any mount under
        it): in a user namespace the guest owns it, and an unsized tmpfs there (``/dev/shm``
        included) would hold memory no rlimit counts."""
        assert self.bwrap is not None
        argv = [self.bwrap, *namespaces(as_root=self.setpriv is not None)]
        argv += ["--mqueue", "/dev/mqueue"] if mqueue else []
        argv += ["--remount-ro", "/dev"]
        argv += system_view(python)
        argv += parents(GUEST_MOUNT)
        for name in GUEST_FILES:
            argv += ["--ro-bind", str(GUEST_DIR / name), f"{GUEST_MOUNT}/{name}"]
        argv += ["--perms", tmp_mode, "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
        return [*argv, "--chdir", "/tmp"]


def sandbox_uid() -> int:
    """A fresh uid no account and no other sandbox is likely to have."""
    return secrets.randbelow(_SANDBOX_UIDS[1] - _SANDBOX_UIDS[0]) + _SANDBOX_UIDS[0]


def namespaces(*, as_root: bool) -> list[str]:
    shared = ["--die-with-parent", "--new-session", "--clearenv"]
    shared += ["--proc", "/proc", "--dev", "/dev"]
    if as_root:  # no user namespace: setpriv must reach an unmapped, unprivileged uid
        spaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
        return [*spaces, "--unshare-cgroup-try", *shared]
    return ["--unshare-all", *shared]


def system_view(python: Path) -> list[str]:
    """Read-only binds of the system libraries and the interpreter's installation, no more."""
    argv: list[str] = []
    for directory in SYSTEM_DIRS:
        if os.path.islink(directory):
            argv += ["--symlink", os.readlink(directory), directory]
        elif os.path.isdir(directory):
            argv += ["--ro-bind", directory, directory]
    prefix = os.path.realpath(sys.base_prefix)
    for tree in (prefix, str(python.parent)):
        if not any(Path(tree).is_relative_to(d) for d in (*SYSTEM_DIRS, prefix) if d != tree):
            argv += [*parents(os.path.dirname(tree)), "--ro-bind", tree, tree]
    return argv


def parents(directory: str) -> list[str]:
    """World-traversable directories down to ``directory`` (bwrap makes missing ones 0700)."""
    argv: list[str] = []
    path = Path(directory)
    for ancestor in [*reversed(path.parents), path][1:]:
        argv += ["--perms", "0755", "--dir", str(ancestor)]
    return argv


def find_isolation(*, allow_unsandboxed: bool) -> Isolation:
    """Bubblewrap and its helpers if installed (checked by the caller's first guest), else
    ``none`` if allowed."""
    tools = {name: shutil.which(name) for name in ("bwrap", "keyctl", "setpriv")}
    needed = ("bwrap", "keyctl", "setpriv") if os.geteuid() == 0 else ("bwrap", "keyctl")
    missing = [name for name in needed if tools[name] is None]
    if not missing:
        setpriv = tools["setpriv"] if os.geteuid() == 0 else None
        return Isolation("bwrap", tools["bwrap"], tools["keyctl"], setpriv)
    if allow_unsandboxed:
        return Isolation("none")
    raise SandboxUnavailable(
        f"cannot isolate model-written code: {', '.join(missing)} "
        f"{'is' if len(missing) == 1 else 'are'} not installed; "
        f"{INSTALL_HINT}, or pass --allow-unsandboxed to run it without isolation (records then "
        "say sandbox: none)"
    )
