"""One harness activation inside bubblewrap: what it sees, what it may write, its one route out.

A harness runs the shell commands a model chose, so its whole process tree gets the isolation
of ``isolation`` (PID, mount, IPC, UTS and network namespaces; every descendant dies with the
sandbox's PID 1; a new session keyring, and no kernel-key call at all: ``harness_init``
installs ``syscall_filter.KEY_CALLS``) with a wider view than a verification guest, because it
is a big program:

* read-only: the system directories, the Python installation, and the install folders its
  argv needs (``install_trees``: a venv or npm prefix, the interpreter of its ``#!`` line,
  the script files named on its command line, and where their symlinks lead);
* read-write: only the activation directory (workspace, private home, its files), bound at
  its own path, a private size-capped ``/tmp``, and the directories the run names as
  ``writable`` (a conformance episode's workspace, where the scripted model's commands
  write; an install folder whose packages' scripts run), given back to us when it ends; the
  activation's ``network.jsonl`` is read-only to the harness, so what is logged
  there cannot be rewritten;
* ``/etc``: a ``resolv.conf`` naming 127.0.0.1, ``hosts`` naming localhost, a ``passwd`` and
  ``group`` with the harness's identity, ``/etc/alternatives`` (commands link through it);
* network: loopback only, where ``harness_init`` answers every DNS query with NXDOMAIN, logs
  every attempt to reach an outside address, and relays the gateway's address over a Unix
  socket to ``gateway_route`` on the host; without a gateway (a ``--version`` probe, which
  needs no model) there is no relay and no route at all.

Run as root, the harness drops to a fresh uid (the activation directory is handed to it) and
the relay to another. Otherwise a user namespace maps our own uid to its root, which owns the
network namespace (so the init program may set it up), and the harness runs as that root
with every capability dropped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

from gym_assets.sandbox.gateway_route import GatewayRoute
from gym_assets.sandbox.harness_init import READY
from gym_assets.sandbox.isolation import (
    SYSTEM_DIRS,
    Isolation,
    SandboxUnavailable,
    guest_python,
    namespaces,
    parents,
    sandbox_uid,
    system_view,
)
from gym_assets.untrusted_files import RefusedFile, open_beneath

_MiB = 1024 * 1024
NETWORK_LOG = "network.jsonl"
_READY_LINE_BYTES = 4096  # the init program's first line, ``sandbox_ready``, is far shorter
RUN_DIR = "/run/gym-sandbox"  # the init program and the gateway socket, inside the sandbox
INIT = Path(__file__).with_name("harness_init.py")
_INIT_FILES = (INIT, INIT.with_name("syscall_filter.py"))  # bound side by side in RUN_DIR
SOCKET = "gateway.sock"
_INSTALL_BINS = ("bin", ".bin")
_HOST_ETC = ("/etc/alternatives",)
# Without root: the init program's network set-up, and dropping them all before the harness.
_USERNS_CAPABILITIES = ("CAP_NET_BIND_SERVICE", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_SETPCAP")
INSTALL_SETPRIV = "install util-linux's setpriv (Debian/Ubuntu: apt-get install util-linux)"


@dataclass(frozen=True)
class HarnessLimits:
    """Per process, for a Node or Python CLI with its tools: writable memory (``RLIMIT_DATA``;
    reserved address space is free, as V8 and Rust runtimes reserve gigabytes), processes and
    threads of the harness's uid, open files, file size; and the size of ``/tmp``."""

    memory_bytes: int = 2048 * _MiB
    processes: int = 512
    open_files: int = 4096
    file_bytes: int = 1024 * _MiB
    tmp_bytes: int = 512 * _MiB

    def rlimits(self) -> dict[str, int]:
        fields = asdict(self)
        fields.pop("tmp_bytes")  # enforced by the tmpfs
        return fields


class HarnessSandbox:
    """One activation's sandbox. ``async with`` prepares the host side (scratch files, the
    network log, the gateway route); ``command`` is the argv that runs ``argv`` inside, with
    ``pass_fds`` handed to it. ``isolation`` must be bubblewrap; ``gateway_url`` None: no
    route out at all."""

    def __init__(
        self,
        isolation: Isolation,
        root: Path,
        gateway_url: str | None,
        *,
        read_only: Sequence[Path] = (),
        writable: Sequence[Path] = (),
        limits: HarnessLimits = HarnessLimits(),
    ) -> None:
        assert isolation.kind == "bwrap"
        self.isolation = isolation
        self.root = root
        self.network_log = root / NETWORK_LOG
        self.read_only = tuple(read_only)
        self.writable = tuple(writable)
        self.limits = limits
        self.gateway = None if gateway_url is None else _host_and_port(gateway_url)
        as_root = isolation.setpriv is not None
        self.harness_uid = sandbox_uid() if as_root else 0  # the user namespace's own root
        self.relay_uid = sandbox_uid() if as_root else None
        self._scratch: Path | None = None
        self._route: GatewayRoute | None = None
        self._log_fd: int | None = None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        assert self._log_fd is not None
        return (self._log_fd,)

    async def __aenter__(self) -> HarnessSandbox:
        self._scratch = Path(tempfile.mkdtemp(prefix="gym-sandbox-"))
        try:
            self._write_etc(self._scratch / "etc")
            self.network_log.touch(exist_ok=False)
            self._log_fd = os.open(self.network_log, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            if self.relay_uid is not None:
                for tree in (self.root, *self.writable):
                    _hand_over(tree, self.harness_uid, keep=self.network_log)
            if self.gateway is not None:
                self._route = GatewayRoute(self._scratch / SOCKET, *self.gateway)
                await self._route.__aenter__()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._route is not None:
            await self._route.__aexit__(kind, exc, tb)
            self._route = None
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self.relay_uid is not None:  # the sandbox has stopped: nothing of it writes there
            for tree in self.writable:
                _hand_over(tree, os.getuid())  # the host's directories are ours again

    def started(self) -> bool:
        """Whether the sandbox came up: its init program logs that it is ready first of all
        (the log is read as any file in the activation directory: no link, no FIFO, a bound)."""
        try:
            with os.fdopen(open_beneath(self.root, NETWORK_LOG), "rb") as log:
                first = log.readline(_READY_LINE_BYTES)
            return json.loads(first).get("event") == READY
        except (OSError, ValueError, RefusedFile):
            return False

    def command(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[str]:
        """bubblewrap, then the init program (resolver and relay), then ``argv`` without
        privileges, in ``cwd`` with exactly ``env``."""
        assert self._scratch is not None and self._log_fd is not None
        argv = [_without_dot_dot(arg) for arg in argv]
        isolation = self.isolation
        python = guest_python()
        wrapper = [str(isolation.bwrap), *namespaces(as_root=isolation.setpriv is not None)]
        if isolation.setpriv is None:  # root of a user namespace that owns the network one
            wrapper += ["--uid", "0", "--gid", "0"]
            for capability in _USERNS_CAPABILITIES:
                wrapper += ["--cap-add", capability]
        for name, value in env.items():
            wrapper += ["--setenv", name, value]
        wrapper += system_view(python)
        wrapper += ["--perms", "1777", "--size", str(self.limits.tmp_bytes), "--tmpfs", "/tmp"]
        wrapper += self._etc_view()
        for tree in _outermost([*self.read_only, *install_trees(argv, env.get("PATH"))]):
            wrapper += [*parents(os.path.dirname(tree)), "--ro-bind", tree, tree]
        for tree in map(str, (*self.writable, self.root)):
            wrapper += [*parents(os.path.dirname(tree)), "--bind", tree, tree]
        wrapper += ["--ro-bind", str(self.network_log), str(self.network_log)]
        wrapper += parents(RUN_DIR)
        for file in _INIT_FILES:
            wrapper += ["--ro-bind", str(file), f"{RUN_DIR}/{file.name}"]
        if self.gateway is not None:
            wrapper += ["--ro-bind", str(self._scratch / SOCKET), f"{RUN_DIR}/{SOCKET}"]
        wrapper += ["--chdir", str(cwd), "--"]
        config = {
            "gateway": self.gateway,
            "socket": f"{RUN_DIR}/{SOCKET}",
            "log_fd": self._log_fd,
            "uid": self.relay_uid,
            "unset": [] if "PWD" in env else ["PWD"],  # bubblewrap's; env is the whole of it
            "limits": self.limits.rlimits(),
        }
        init = [str(python), "-I", "-S", f"{RUN_DIR}/{INIT.name}", json.dumps(config), "--"]
        return [*wrapper, *init, *self._unprivileged(), *argv]

    def _unprivileged(self) -> list[str]:
        if self.isolation.setpriv is not None:
            return self.isolation.unprivileged(self.harness_uid)
        setpriv = shutil.which("setpriv")  # drops the capabilities the init program needed
        if setpriv is None:
            raise SandboxUnavailable(f"cannot drop a harness's capabilities: {INSTALL_SETPRIV}")
        caps = ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
        return [setpriv, *caps, "--no-new-privs"]

    def _write_etc(self, etc: Path) -> None:
        uid = self.harness_uid
        home = self.root / "home"
        # Without root the harness is the user namespace's root, so it is the only user.
        users = [*([("root", 0, "/")] if uid else []), ("harness", uid, str(home))]
        etc.mkdir()
        files = {
            "resolv.conf": "nameserver 127.0.0.1\noptions attempts:1\n",
            "hosts": "127.0.0.1 localhost\n::1 localhost\n",
            "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
            "passwd": "".join(f"{name}:x:{n}:{n}::{where}:/bin/sh\n" for name, n, where in users),
            "group": "".join(f"{name}:x:{n}:\n" for name, n, _ in users),
        }
        for name, text in files.items():
            (etc / name).write_text(text, encoding="utf-8")
            (etc / name).chmod(0o644)

    def _etc_view(self) -> list[str]:
        assert self._scratch is not None
        argv = ["--perms", "0755", "--tmpfs", "/etc"]
        for entry in sorted((self._scratch / "etc").iterdir()):
            argv += ["--ro-bind", str(entry), f"/etc/{entry.name}"]
        for host in _HOST_ETC:
            if os.path.isdir(host):
                argv += ["--ro-bind", host, host]
        return [*argv, "--remount-ro", "/etc"]


def _host_and_port(url: str) -> tuple[str, int]:
    address = urlsplit(url)
    if address.hostname is None or address.port is None:
        raise ValueError(f"the gateway URL names no host and port: {url}")
    return address.hostname, address.port


def install_trees(argv: Sequence[str], search_path: str | None) -> list[str]:
    """The host paths ``argv`` needs to run: for its program, the interpreter of the program's
    ``#!`` line and each file named on the command line, the folder it was installed into (a
    venv or npm prefix, when it lies in a ``bin``/``.bin`` folder) or else the file itself, at
    the path given and where its symlinks lead. System directories are already visible."""
    program = shutil.which(argv[0], path=search_path) if argv else None
    files = [program, *_interpreter(program, search_path)] if program else []
    files += [arg for arg in argv[1:] if os.path.isabs(arg) and os.path.isfile(arg)]
    trees = {
        _install_folder(path)
        for file in files
        for path in (os.path.abspath(file), os.path.realpath(file))
    }
    prefix = os.path.realpath(sys.base_prefix)  # system_view binds the interpreter already
    return _outermost(
        [
            tree
            for tree in trees
            if tree != "/" and not any(Path(tree).is_relative_to(d) for d in (*SYSTEM_DIRS, prefix))
        ]
    )


def _install_folder(path: str) -> str:
    """A program's install folder when it lies in a ``bin``/``.bin`` folder, else the file
    alone (its folder may hold anything, and may be closed to the harness's uid)."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) not in _INSTALL_BINS:
        return path
    folder = os.path.dirname(folder)
    if os.path.basename(folder) == "node_modules":
        folder = os.path.dirname(folder)
    return folder


def _interpreter(program: str, search_path: str | None) -> list[str]:
    """The interpreter a ``#!`` line names (through ``env``), if any."""
    try:
        with open(program, "rb") as file:
            line = file.readline(512)
    except OSError:
        return []
    if not line.startswith(b"#!"):
        return []
    words = line[2:].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [word for word in words[1:] if not word.startswith("-")][:1]
        found = shutil.which(words[0], path=search_path) if words else None
        return [found] if found else []
    return words[:1] if words and os.path.isabs(words[0]) else []


def _without_dot_dot(arg: str) -> str:
    """A path through ``..`` written without it (as its install folder is bound): inside, the
    folders it passes through may not exist."""
    if os.path.isabs(arg) and ".." in Path(arg).parts and os.path.exists(arg):
        return os.path.normpath(arg)
    return arg


def _outermost(trees: Sequence[str | Path]) -> list[str]:
    """Each folder once, none inside another (its outer folder's bind shows it already)."""
    kept: list[str] = []
    for tree in sorted({os.path.abspath(t) for t in trees}):
        if not any(Path(tree).is_relative_to(outer) for outer in kept):
            kept.append(tree)
    return kept


def _hand_over(root: Path, uid: int, *, keep: Path | None = None) -> None:
    """Make the activation directory the harness's (as root, it runs under a fresh uid), or
    give a directory back to us; ``keep`` stays ours."""
    for directory, subdirs, names in os.walk(root):
        os.chown(directory, uid, uid)
        for name in [*subdirs, *names]:
            path = os.path.join(directory, name)
            if path != str(keep):
                os.chown(path, uid, uid, follow_symlinks=False)
