#!/usr/bin/env bash
# The project's own postgres on 127.0.0.1: start | stop | status | url [--root DIR]
# (docs/scale-out.md). start prints the variable line to export.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" -m gym_assets.local_services postgres "$@"
