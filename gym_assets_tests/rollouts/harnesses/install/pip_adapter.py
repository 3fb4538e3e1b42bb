"""The program of the test wheel, in a venv."""

from gym_assets_tests.rollouts.harnesses.install.install_adapter import ProgramOnly
from gym_assets_tests.rollouts.harnesses.install.packages import PROGRAM

ADAPTER = ProgramOnly("pipfake", f"bin/{PROGRAM}")
