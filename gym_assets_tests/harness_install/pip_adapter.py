"""The program of the test wheel, in a venv."""

from gym_assets_tests.harness_install.install_adapter import ProgramOnly
from gym_assets_tests.harness_install.packages import PROGRAM

ADAPTER = ProgramOnly("pipfake", f"bin/{PROGRAM}")
