"""A Postgres cluster of the project's own, for a Dagster instance on this machine.

Debian's server binaries run a cluster kept in ``<root>/data``; it listens on 127.0.0.1 at a
port free when it starts and on a Unix socket in ``<root>/socket``. Local clients connect
through the socket with peer authentication (the role is the user running this, a superuser
of this cluster only), so no password exists to be stored or logged; TCP logins need a password
a user sets themselves (``ALTER ROLE``), which none is by default. Postgres refuses to run as
root, so under root the server runs as the ``postgres`` user, which must be able to reach
``root``.

The connection URL (``DAGSTER_PG_URL``, read by ``dagster.postgres.yaml``) names the socket
and port; ``url()`` gives it while the cluster runs.
"""

from __future__ import annotations

import getpass
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from gym_assets.errors import UserError
from gym_assets.local_dagster import free_port
from gym_assets.local_services.roots import claim_root, nearest_existing

URL_VARIABLE = "DAGSTER_PG_URL"
DATABASE = "dagster"
SERVER_USER = "postgres"
"""Who runs the server when this runs as root (Debian's package creates the user)."""
START_TIMEOUT_S = 60
OURS = frozenset({"data", "socket", "port", "postgres.log"})
"""What a cluster's root holds; a start refuses a root that holds anything else."""
SOCKET_PATH_MAX = 100
"""A Unix socket's path must fit in 107 bytes; the socket's own name takes up to 17 of them."""


def bindir() -> Path:
    """The newest Debian server install (``/usr/lib/postgresql/<major>/bin``), else ``PATH``."""
    installs = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name)
    )
    if installs:
        return installs[-1].parent
    found = shutil.which("pg_ctl")
    if found is None:
        raise UserError(
            "no Postgres server found (pg_ctl); install Debian's postgresql package "
            "(apt-get install postgresql), see docs/scale-out.md"
        )
    return Path(found).parent


@dataclass(frozen=True)
class LocalPostgres:
    """The cluster under ``root`` (created by ``start`` if absent; nothing else there is ours)."""

    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    @property
    def _port_file(self) -> Path:
        return self.root / "port"

    def _as_server(self, argv: list[str]) -> list[str]:
        """``argv`` as the user the server runs as."""
        return ["runuser", "-u", SERVER_USER, "--", *argv] if os.geteuid() == 0 else argv

    def _run(self, argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()[-1500:]
            raise UserError(f"{what} failed (exit {done.returncode}): {output}", path=self.root)
        return done

    def running(self) -> bool:
        if not (self.data / "PG_VERSION").is_file():
            return False
        argv = self._as_server([str(bindir() / "pg_ctl"), "status", "-D", str(self.data)])
        return subprocess.run(argv, capture_output=True, check=False).returncode == 0

    def url(self) -> str:
        """The URL local clients use while the cluster runs (socket, port, database, role)."""
        if not self.running():
            raise UserError(
                "no Postgres cluster is running here; start it with scripts/postgres.sh start",
                path=self.root,
            )
        port = self._port_file.read_text().strip()
        role = quote(getpass.getuser())
        return f"postgresql+psycopg2://{role}@/{DATABASE}?host={quote(str(self.socket_dir))}&port={port}"

    def start(self) -> str:
        """Create the cluster on first use, start it, and return its URL; a running cluster is
        left as it is."""
        if self.running():
            return self.url()
        if len(str(self.socket_dir)) > SOCKET_PATH_MAX:
            raise UserError(
                f"the socket directory's path is longer than {SOCKET_PATH_MAX} characters, "
                "more than a Unix socket allows; choose a shorter --root",
                path=self.socket_dir,
            )
        claim_root(self.root, OURS)
        fresh = not (self.data / "PG_VERSION").is_file()
        if fresh:
            self._create()
        port = free_port()
        self._port_file.write_text(f"{port}\n")
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {self.socket_dir}"
        pg_ctl = [str(bindir() / "pg_ctl"), "start", "-D", str(self.data), "-l", str(self.log)]
        pg_ctl += ["-w", "-t", str(START_TIMEOUT_S), "-o", options]
        self._run(self._as_server(pg_ctl), f"starting Postgres (its log: {self.log})")
        if fresh:
            createdb = [str(bindir() / "createdb"), "-h", str(self.socket_dir), "-p", str(port)]
            self._run([*createdb, DATABASE], "creating the dagster database")
        return self.url()

    def _create(self) -> None:
        if self.data.exists() and any(self.data.iterdir()):
            raise UserError(
                "holds files that are not a Postgres cluster; this script only creates a cluster "
                "in an empty or absent directory: choose another --root",
                path=self.data,
            )
        if os.geteuid() == 0:
            self._check_server_reaches()
        for directory in (self.root, self.data, self.socket_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.data.chmod(0o700)
        if os.geteuid() == 0:
            for path in (self.root, self.data, self.socket_dir):
                shutil.chown(path, SERVER_USER, SERVER_USER)
        initdb = [str(bindir() / "initdb"), "-D", str(self.data), "-U", getpass.getuser()]
        initdb += [
            "--auth-local=peer",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-instructions",
        ]
        self._run(self._as_server(initdb), "creating the Postgres cluster (initdb)")

    def _check_server_reaches(self) -> None:
        """Refuse, before creating anything, a root whose parents the server's user cannot
        search (e.g. under a 0700 directory): its cluster could not start there."""
        above = nearest_existing(self.root)
        if subprocess.run(self._as_server(["test", "-x", str(above)]), check=False).returncode:
            raise UserError(
                f"the server runs as the '{SERVER_USER}' user, which cannot reach this "
                "directory (a parent is not searchable by other users); choose a --root "
                "under a directory others can search, e.g. /var/tmp",
                path=self.root,
            )

    def stop(self) -> bool:
        """Stop the cluster (fast shutdown); False if it was not running. Its data stays."""
        if not self.running():
            return False
        pg_ctl = [str(bindir() / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w"]
        self._run(self._as_server(pg_ctl), "stopping Postgres")
        return True
