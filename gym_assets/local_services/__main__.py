"""``python -m gym_assets.local_services {postgres|redis} {start|stop|status|url} [--root DIR]``.

``scripts/postgres.sh`` and ``scripts/redis.sh`` call this. ``start`` prints the variable line
to export, quoted for a shell (``eval "export $(scripts/postgres.sh start)"``); ``status``
exits 0 when the server runs and 1 when it does not; a refusal is one line and exit 1, a bad
flag exit 2.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.local_services import postgres, redis
from gym_assets.workspace import Workspace

SERVERS = {
    "postgres": (postgres.LocalPostgres, postgres.URL_VARIABLE),
    "redis": (redis.LocalRedis, redis.URL_VARIABLE),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gym_assets.local_services")
    parser.add_argument("server", choices=sorted(SERVERS))
    parser.add_argument("action", choices=["start", "stop", "status", "url"])
    parser.add_argument(
        "--root",
        type=Path,
        help="where the server keeps its state (default: "
        "<data root>/services/<server>, the data root being $GYM_ASSETS_DATA_ROOT or .gym_assets)",
    )
    args = parser.parse_args(argv)
    kind, variable = SERVERS[args.server]
    server = kind((args.root or Workspace.resolve().services_dir(args.server)).absolute())
    try:
        if args.action == "start":
            print(f"{variable}={shlex.quote(server.start())}")
        elif args.action == "url":
            print(f"{variable}={shlex.quote(server.url())}")
        elif args.action == "stop":
            print(f"{args.server}: {'stopped' if server.stop() else 'was not running'}")
        else:
            running = server.running()
            print(f"{args.server}: {'running' if running else 'not running'} ({server.root})")
            return 0 if running else 1
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a --root that cannot be made or written
        print(f"error: {server.root}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
